//! `rewind check --shard K/N`: a stable share of the files a run would check, so that N workers
//! of any engine (GNU parallel, a Kubernetes Indexed Job, Spark) split the work with no
//! coordination, and `rewind merge` puts their reports back together.
//!
//! A file's shard is decided by its *key*: its path relative to the root it was found under (the
//! folder argument, or a glob's literal prefix; a file named on its own is keyed by its name),
//! components joined with `/`, as UTF-8. The key is hashed with 64-bit FNV-1a and the hash
//! scaled to the shard count: `shard = ⌊fnv1a64(key) × N / 2⁶⁴⌋`. Both are fixed: a release
//! that changed them would scatter a fleet whose workers run different releases, so the tests
//! pin values. K counts from 0 (`0/N` … `N-1/N`), as Kubernetes' `JOB_COMPLETION_INDEX` and
//! Spark's partition ids do.

use std::path::Path;

use crate::core::RewindError;

/// One shard of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u64,
    pub count: u64,
}

/// The most shards a run may be split into.
pub const MAX_SHARDS: u64 = 1 << 32;

impl Shard {
    /// Parses `K/N` (0 ≤ K < N): every refusal is one line that says what is expected.
    pub fn parse(text: &str) -> Result<Shard, RewindError> {
        let shown = crate::text::clip(text);
        let bad = |why: String| RewindError::Usage(format!("`--shard {shown}`: {why}"));
        let Some((k, n)) = text.split_once('/') else {
            return Err(bad(
                "expected K/N, the 0-based shard index and the shard count (e.g. `--shard 0/4`)"
                    .to_owned(),
            ));
        };
        let number = |s: &str, what: &str| -> Result<u64, RewindError> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(format!(
                    "{what} must be a whole number (e.g. `--shard 0/4`)"
                )));
            }
            s.parse::<u64>()
                .map_err(|_| bad(format!("{what} is too large")))
        };
        let index = number(k, "the shard index K")?;
        let count = number(n, "the shard count N")?;
        if count == 0 {
            return Err(bad("the shard count N must be at least 1".to_owned()));
        }
        if count > MAX_SHARDS {
            return Err(bad(format!("the shard count N is at most {MAX_SHARDS}")));
        }
        if index >= count {
            let hint = if index == count {
                format!(
                    " (shards count from 0, as Kubernetes' JOB_COMPLETION_INDEX does: the last of {count} is `{}/{count}`)",
                    count - 1
                )
            } else {
                String::new()
            };
            return Err(bad(format!(
                "the shard index K must be below N: 0 to {}{hint}",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// Whether the file with `key` (see [`key`]) belongs to this shard.
    pub fn holds(&self, key: &str) -> bool {
        of(key, self.count) == self.index
    }
}

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The shard (0-based, of `count`) of the file with `key`: the hash scaled to the count, so the
/// well-mixed high bits decide (FNV's low bits follow only the low bits of the input).
pub fn of(key: &str, count: u64) -> u64 {
    ((u128::from(fnv1a64(key.as_bytes())) * u128::from(count)) >> 64) as u64
}

/// The key of `path`, found under `root`: the path below the root, components joined with `/`;
/// for a file named on its own (`root` is the file), its name.
pub fn key(root: &Path, path: &Path) -> String {
    let below = path.strip_prefix(root).unwrap_or(path);
    let below = if below.as_os_str().is_empty() {
        path.file_name().map(Path::new).unwrap_or(path)
    } else {
        below
    };
    below
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A digest of the whole list of files a run found (their keys and shown paths, in order): every
/// shard's report carries it, and `rewind merge` refuses shards that saw different lists.
pub fn digest<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut n: u64 = 0;
    for (key, shown) in entries {
        eat(key.as_bytes());
        eat(shown.as_bytes());
        n += 1;
    }
    eat(&n.to_le_bytes());
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_assignment_are_pinned() {
        // Pinned: a change would send files to other shards than older releases do.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let shards: Vec<u64> = ["a.log", "sub/b.sse", "x/y/z.jsonl", "é.log"]
            .iter()
            .map(|k| of(k, 7))
            .collect();
        assert_eq!(shards, [1, 3, 2, 0]);
        assert_eq!(of("anything", 1), 0);
    }

    #[test]
    fn every_key_lands_in_exactly_one_shard() {
        for count in [1, 2, 3, 7, 64] {
            let mut sizes = vec![0usize; count as usize];
            for i in 0..2000 {
                let key = format!("sessions/2026/11/{i}/rollout-{i}.jsonl");
                let owners: Vec<u64> = (0..count)
                    .filter(|&k| Shard { index: k, count }.holds(&key))
                    .collect();
                assert_eq!(owners.len(), 1, "{key} of {count}");
                sizes[owners[0] as usize] += 1;
            }
            // Roughly even: no shard holds more than twice its share.
            let share = 2000 / count as usize;
            assert!(sizes.iter().all(|&s| s <= 2 * share + 10), "{sizes:?}");
        }
    }

    #[test]
    fn keys_are_relative_and_slashed() {
        let p = Path::new;
        assert_eq!(key(p("recordings"), p("recordings/a/b.log")), "a/b.log");
        assert_eq!(key(p("./rec"), p("./rec/x.sse")), "x.sse");
        assert_eq!(key(p("/data/run1.log"), p("/data/run1.log")), "run1.log");
        assert_eq!(key(p("/mnt/a"), p("/mnt/a/x//y.log")), "x/y.log");
    }

    #[test]
    fn bad_values_are_refused_with_one_line() {
        assert_eq!(Shard::parse("0/4").unwrap(), Shard { index: 0, count: 4 });
        assert_eq!(Shard::parse("3/4").unwrap(), Shard { index: 3, count: 4 });
        for (bad, says) in [
            ("4/4", "count from 0"),
            ("5/4", "below N: 0 to 3"),
            ("0/0", "at least 1"),
            ("1", "expected K/N"),
            ("a/4", "whole number"),
            ("-1/4", "whole number"),
            ("1/", "whole number"),
            ("99999999999999999999999/4", "too large"),
            ("0/99999999999", "at most"),
        ] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n') && e.len() <= 1000, "{e}");
        }
    }
}
