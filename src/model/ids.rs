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

    /// Creation time in epoch milliseconds modulo 2^36 (about 795 days).
    pub fn time_ms_mod(&self) -> u64 {
        self.value >> 12
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
