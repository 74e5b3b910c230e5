//! OpenCode identifiers: `<prefix>_<12 hex><14 base62>`.
//!
//! The 12 hex digits are the low 48 bits of `timestamp_ms * 4096 + counter`; sessions invert them
//! (newest first), messages and parts do not, so message and part ids sort by creation time and
//! OpenCode orders a message's parts by id.

/// An id split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id<'a> {
    pub prefix: &'a str,
    /// The 48-bit time/counter value (already un-inverted for descending ids).
    pub value: u64,
    pub random: &'a str,
}

impl<'a> Id<'a> {
    /// Parses an id; `None` if it does not have the OpenCode shape.
    pub fn parse(id: &'a str) -> Option<Id<'a>> {
        let (prefix, rest) = id.split_once('_')?;
        let hex = rest.get(..12)?;
        let random = rest.get(12..)?;
        let raw = u64::from_str_radix(hex, 16).ok()?;
        let value = if prefix == "ses" {
            !raw & 0xFFFF_FFFF_FFFF
        } else {
            raw
        };
        Some(Id {
            prefix,
            value,
            random,
        })
    }

    #[cfg(test)]
    /// Creation time in epoch milliseconds modulo 2^36 (about 795 days).
    pub fn time_ms_mod(&self) -> u64 {
        self.value >> 12
    }
}

/// The base-62 digits OpenCode uses for the random part of ids, in ASCII (sort) order.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `n` new ids that sort strictly between `after` and `before` (or after `after` when `before` is
/// `None`), in order.
///
/// For an OpenCode-format `after`, the new ids keep its prefix and 12 hex digits (so they decode
/// to the same time) and count up from its random part in base 62; they have the same shape and
/// length as OpenCode's own. Other ids get a numeric suffix. `None` when no such ids fit.
pub fn between(after: &str, before: Option<&str>, n: usize) -> Option<Vec<String>> {
    let fits = |ids: &[String]| {
        ids.first().is_some_and(|f| f.as_str() > after)
            && ids.windows(2).all(|w| w[0] < w[1])
            && before.is_none_or(|b| ids.last().is_some_and(|l| l.as_str() < b))
    };
    if let Some(ids) = count_up(after, n)
        && fits(&ids)
    {
        return Some(ids);
    }
    let ids: Vec<String> = (1..=n).map(|k| format!("{after}{k}")).collect();
    (n < 10 && fits(&ids)).then_some(ids)
}

/// Counts up the random part of an OpenCode-format id: `n` successors.
fn count_up(after: &str, n: usize) -> Option<Vec<String>> {
    let id = Id::parse(after)?;
    let head = &after[..after.len() - id.random.len()];
    let mut digits: Vec<usize> = id
        .random
        .bytes()
        .map(|b| BASE62.iter().position(|d| *d == b))
        .collect::<Option<_>>()?;
    if digits.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        // Add one, carrying; no room left when every digit carries.
        let mut i = digits.len();
        loop {
            i = i.checked_sub(1)?;
            digits[i] += 1;
            if digits[i] < BASE62.len() {
                break;
            }
            digits[i] = 0;
        }
        let random: String = digits.iter().map(|d| BASE62[*d] as char).collect();
        out.push(format!("{head}{random}"));
    }
    Some(out)
}

/// A new ascending id with `prefix` for the time `ms` (random part from the clock and a counter;
/// uniqueness matters, not unpredictability).
pub fn ascending(prefix: &str, ms: u64, counter: u64) -> String {
    let value = (ms.wrapping_mul(4096).wrapping_add(counter & 0xFFF)) & 0xFFFF_FFFF_FFFF;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x =
        nanos ^ (counter.wrapping_mul(0x9E37_79B9_7F4A_7C15)) ^ u64::from(std::process::id());
    let mut random = String::with_capacity(14);
    for _ in 0..14 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random.push(BASE62[(x % 62) as usize] as char);
    }
    format!("{prefix}_{value:012x}{random}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_between_two_parts() {
        let a = "prt_c192ee03b001rItjjWgsRlgj4U";
        let b = "prt_c192ee03b002AAAAAAAAAAAAAA";
        let ids = between(a, Some(b), 2).unwrap();
        assert_eq!(
            ids,
            [
                "prt_c192ee03b001rItjjWgsRlgj4V",
                "prt_c192ee03b001rItjjWgsRlgj4W"
            ]
        );
        assert!(
            ids.iter()
                .all(|i| Id::parse(i).is_some() && i.len() == a.len())
        );
        // Carry, and the end of a message.
        let ids = between("prt_c192ee03b001AAAAAAAAAAAAAz", None, 1).unwrap();
        assert_eq!(ids, ["prt_c192ee03b001AAAAAAAAAAAAB0"]);
        // No room between adjacent ids: a numeric suffix when it fits, else none.
        assert_eq!(
            between("prt_a", Some("prt_b"), 2).unwrap(),
            ["prt_a1", "prt_a2"]
        );
        assert_eq!(
            between("prt_fixture0009", Some("prt_fixture0010"), 2).unwrap(),
            ["prt_fixture00091", "prt_fixture00092"]
        );
        assert_eq!(between("prt_a", Some("prt_a1"), 1), None);
        let n = ascending("evt", 1_771_000_000_000, 1);
        assert!(Id::parse(&n).is_some_and(|i| i.time_ms_mod() == 1_771_000_000_000 % (1 << 36)));
    }

    #[test]
    fn parses_ascending_and_descending_ids() {
        let p = Id::parse("prt_c192ee03b001rItjjWgsRlgj4U");
        assert_eq!(
            p.map(|p| (p.prefix, p.value)),
            Some(("prt", 0xc192ee03b001))
        );
        let s = Id::parse("ses_3e6dc9d06ffeTmoI7awezEnkak");
        assert_eq!(
            s.map(|s| s.value),
            Some(!0x3e6dc9d06ffe_u64 & 0xFFFF_FFFF_FFFF)
        );
        assert_eq!(Id::parse("nope"), None);
        assert_eq!(Id::parse("prt_short"), None);
    }

    #[test]
    fn time_matches_the_message_timestamp() {
        // msg_c192cf612001… was created at 2026-02-01T12:28:22.930Z (1769948902930 ms).
        let t = Id::parse("msg_c192cf612001klS1paWANI0dge").map(|i| i.time_ms_mod());
        assert_eq!(t, Some(1_769_948_902_930 % (1 << 36)));
    }
}
