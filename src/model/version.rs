//! OpenCode version numbers (`1.18.33`), for behaviour that changed between releases.

/// `major.minor.patch` of a version string (`v1.2.15`, `1.18.33-beta.1` → `(1, 18, 33)`).
pub fn parse(v: &str) -> Option<(u64, u64, u64)> {
    let v = v.trim().trim_start_matches('v');
    let core = v.split(['-', '+']).next()?;
    let mut it = core.split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().map_or(Some(0), |s| s.parse().ok())?;
    let patch = it.next().map_or(Some(0), |s| s.parse().ok())?;
    Some((major, minor, patch))
}

/// Whether `v` is a version newer than `than` (any parseable version is newer than none).
pub fn newer(v: &str, than: Option<&str>) -> bool {
    match (parse(v), than.and_then(parse)) {
        (Some(a), Some(b)) => a > b,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The first release whose `toModelMessages` answers a `pending`/`running` tool part with an
/// "[Tool execution was interrupted]" error result (older ones send nothing for it). Observed on
/// the real clients (`tests/fixtures/matrix/opencode`): 1.0.185 sends nothing; 1.1.65, 1.2.27,
/// 1.3.2 and 1.14.41 send the interrupted result.
pub const INTERRUPTED_RESULT_SINCE: (u64, u64, u64) = (1, 1, 0);

/// The first release that bundles an `@ai-sdk/anthropic` (3.0.111; the change came in 3.0.86,
/// vercel/ai#16312) whose prompt conversion moves an assistant message's `tool_use` blocks after
/// its other blocks (up to the next thinking block). From it on, a stored step `[tool, text]`
/// reaches Anthropic as `[text, tool_use]`; 1.18.25 and older bundle 3.0.82 and send it as stored.
pub const ANTHROPIC_TOOL_USE_LAST_SINCE: (u64, u64, u64) = (1, 18, 26);

/// The first release whose `filterCompacted` keeps a compaction's retained tail (the messages
/// from its `tail_start_id` on). 1.3.2 has no `tail_start_id`, 1.14.34 keeps the tail; no
/// release between them is published on npm, so the boundary is taken to be 1.14.
pub const COMPACTION_TAIL_SINCE: (u64, u64, u64) = (1, 14, 0);

/// The first release that sends the summary before the retained tail
/// (`[compaction, summary, tail…, newer…]`); older ones send the history in stored order
/// (`[tail…, compaction, summary, newer…]`). 1.14.34 keeps the stored order and 1.14.41 (the
/// next release published on npm) reorders.
pub const COMPACTION_SUMMARY_FIRST_SINCE: (u64, u64, u64) = (1, 14, 41);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        assert_eq!(parse("1.18.33"), Some((1, 18, 33)));
        assert_eq!(parse("v1.2"), Some((1, 2, 0)));
        assert_eq!(parse("1.14.0-beta.2"), Some((1, 14, 0)));
        assert_eq!(parse("dev"), None);
        assert!(newer("1.18.2", Some("1.9.40")));
        assert!(!newer("1.2.15", Some("1.14.0")));
        assert!(newer("1.0.0", None));
        assert!(!newer("local", Some("1.0.0")));
    }
}
