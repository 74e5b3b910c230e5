//! Identical findings, grouped for people: the outputs read by a person (human, HTML, the GitHub
//! annotations and step summary) show the first [`SHOWN`] findings of a group in full and count
//! the rest on one line, so that a file with 500,000 tools left running reads as one finding and
//! "… and 499,995 more like it", and the output stays bounded. The machine formats (JSON, JSON
//! Lines, SARIF, JUnit) and `--format concise` list every finding.
//!
//! Two findings are *alike* when they have the same rule, the same severity and the same message
//! once what varies from one occurrence to the next is abstracted: every word holding a digit
//! (ids, counts, line numbers, times) and every id the finding is about (its session, message,
//! part and tool-call ids, whatever they look like). "tool `bash` never finished (call
//! call_01)" and "… (call call_02)" are alike; the same about tool `write` is not.

use std::hash::{Hash, Hasher};

use crate::checks::Rule;
use crate::checks::diagnostic::{Ids, Severity};

/// The findings of a group shown in full.
pub const SHOWN: usize = 5;

/// What a grouped output does with one finding, in the order it shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Shown in full; `more` is how many others of its group are left out after it (when it is
    /// the last one shown of a larger group).
    Full { more: Option<usize> },
    /// Left out: counted by the last shown finding of its group.
    Hidden,
}

/// The key two alike findings share (a hash of rule, severity and message template: only
/// counted and compared, never shown).
pub fn key(rule: Rule, severity: Severity, message: &str, ids: &Ids) -> u64 {
    let own: Vec<&str> = [&ids.session_id, &ids.message_id, &ids.part_id, &ids.call_id]
        .into_iter()
        .filter_map(|i| i.as_deref())
        .collect();
    key_of(rule, severity, message, &own)
}

/// [`key`], the finding's ids given as a list.
fn key_of(rule: Rule, severity: Severity, message: &str, own: &[&str]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rule.hash(&mut h);
    severity.hash(&mut h);
    let own: Vec<&str> = own.iter().copied().filter(|i| !i.is_empty()).collect();
    let mut rest = message;
    while !rest.is_empty() {
        // A word: letters, digits and the characters ids are made of; anything else stands alone.
        let end = rest
            .char_indices()
            .find(|&(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .map_or(rest.len(), |(i, _)| i);
        let (word, tail) = if end == 0 {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            rest.split_at(n)
        } else {
            rest.split_at(end)
        };
        let varies = end > 0
            && (word.bytes().any(|b| b.is_ascii_digit())
                || own
                    .iter()
                    .any(|id| word == *id || (id.len() >= 4 && word.contains(id))));
        if varies {
            h.write_u8(0);
        } else {
            word.hash(&mut h);
        }
        rest = tail;
    }
    h.finish()
}

/// The key of a record's group.
pub fn record_key(r: &super::record::FindingRecord) -> u64 {
    let ids: Vec<&str> = r.ids.present().map(|i| i.unescaped()).collect();
    key_of(r.rule, r.severity, r.message.unescaped(), &ids)
}

/// For `keys` (one a finding, in the order they are shown), what to show of each.
pub fn plan(keys: &[u64]) -> Vec<Show> {
    let mut total: crate::FastMap<u64, usize> = crate::FastMap::default();
    for &k in keys {
        *total.entry(k).or_default() += 1;
    }
    let mut seen: crate::FastMap<u64, usize> = crate::FastMap::default();
    keys.iter()
        .map(|k| {
            let n = seen.entry(*k).or_default();
            *n += 1;
            let of = total.get(k).copied().unwrap_or(0);
            match *n {
                n if n < SHOWN => Show::Full { more: None },
                n if n == SHOWN => Show::Full {
                    more: (of > SHOWN).then(|| of - SHOWN),
                },
                _ => Show::Hidden,
            }
        })
        .collect()
}

/// "and 3 more like it" / "and 1,234 more like it": the words counting what a group left out.
pub fn more_words(more: usize) -> String {
    format!(
        "and {} more like {}",
        thousands(more),
        if more == 1 { "it" } else { "these" }
    )
}

/// `n` with a comma between thousands.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(message: &str, ids: &Ids) -> u64 {
        key(Rule::ToolNeverFinished, Severity::Error, message, ids)
    }

    #[test]
    fn ids_and_numbers_are_abstracted() {
        let none = Ids::default();
        assert_eq!(
            k(
                "tool `bash` (call call_01) never finished at line 12",
                &none
            ),
            k("tool `bash` (call call_77) never finished at line 3", &none)
        );
        assert_ne!(
            k("tool `bash` never finished", &none),
            k("tool `write` never finished", &none)
        );
        // An id without digits is abstracted when the finding is about it.
        let a = Ids::default().call("abc");
        let b = Ids::default().call("xyz");
        assert_eq!(k("call abc stayed open", &a), k("call xyz stayed open", &b));
        assert_ne!(
            k("call abc stayed open", &none),
            k("call xyz stayed open", &none)
        );
        // Rule and severity are part of the key.
        assert_ne!(
            key(Rule::StepUnclosed, Severity::Error, "m", &none),
            key(Rule::StepUnclosed, Severity::Warning, "m", &none)
        );
        assert_ne!(
            key(Rule::StepUnclosed, Severity::Error, "m", &none),
            key(Rule::ToolNeverFinished, Severity::Error, "m", &none)
        );
    }

    #[test]
    fn the_first_of_each_group_are_shown_and_the_rest_counted() {
        let keys = [1, 2, 1, 1, 1, 1, 1, 1, 2];
        let plan = plan(&keys);
        let full = Show::Full { more: None };
        assert_eq!(
            plan,
            [
                full,
                full,
                full,
                full,
                full,
                Show::Full { more: Some(2) },
                Show::Hidden,
                Show::Hidden,
                full
            ]
        );
        // A group of exactly SHOWN findings is shown whole, with no count.
        assert!(super::plan(&[7; SHOWN]).iter().all(|s| *s == full));
    }

    #[test]
    fn counts_are_written_with_thousands() {
        assert_eq!(more_words(1), "and 1 more like it");
        assert_eq!(more_words(499_995), "and 499,995 more like these");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
