//! AWS event-stream framing (`application/vnd.amazon.eventstream`), the binary envelope of
//! Bedrock's ConverseStream: each message is a 12-byte prelude (total length, headers length,
//! the prelude's CRC32), headers (`:event-type`, `:message-type`, `:content-type`,
//! `:exception-type`, …), the payload (JSON), and the CRC32 of everything before it.
//!
//! Read by hand: the framing is a few dozen lines, and the crates that implement it bring an
//! HTTP stack with them. A frame whose CRC does not match, or the input ending inside a frame,
//! is reported, never skipped in silence (the AI SDK used to end such a stream "normally",
//! vercel/ai #18996, #19040).

/// The smallest message: prelude and message CRC, no headers, no payload.
const MIN_FRAME: usize = 16;

/// CRC-32 (IEEE 802.3, as zlib), bit by bit: captures are small.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Whether `bytes` start with a valid event-stream prelude (lengths that hold together and a
/// matching prelude CRC): a file signature as strong as a magic number.
pub fn starts_with_frame(bytes: &[u8]) -> bool {
    match (be32(bytes, 0), be32(bytes, 4), be32(bytes, 8)) {
        (Some(total), Some(headers), Some(crc)) => {
            total as usize >= MIN_FRAME
                && (headers as usize) <= total as usize - MIN_FRAME
                && crc32(&bytes[..8]) == crc
        }
        _ => false,
    }
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Byte range of the whole message.
    pub start: usize,
    pub end: usize,
    /// Byte range of the payload.
    pub payload: (usize, usize),
    /// `:message-type` (`event`, `exception`, `error`).
    pub message_type: Option<String>,
    /// `:event-type` (`contentBlockDelta`, …) or, for an exception, `:exception-type`.
    pub event_type: Option<String>,
}

/// Why the bytes stop being frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// A message's CRC does not match: the frame was altered (it is skipped; reading goes on).
    MessageCrc {
        start: usize,
        end: usize,
        computed: u32,
        recorded: u32,
    },
    /// The prelude's CRC does not match or its lengths do not hold together: where the next
    /// frame ends cannot be known, and nothing after it is read.
    Prelude { start: usize, reason: String },
    /// The input ends inside a frame.
    Truncated {
        start: usize,
        have: usize,
        need: usize,
    },
}

/// What the reader found, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Frame(Frame),
    Damaged(Damage),
}

/// Reads the headers of a message: `(name, string value)` for the string ones.
fn headers(b: &[u8]) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let n = *b.get(k)? as usize;
        let name = String::from_utf8_lossy(b.get(k + 1..k + 1 + n)?).into_owned();
        k += 1 + n;
        let ty = *b.get(k)?;
        k += 1;
        let fixed = match ty {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let len = u16::from_be_bytes([*b.get(k)?, *b.get(k + 1)?]) as usize;
                let value = b.get(k + 2..k + 2 + len)?;
                if ty == 7 {
                    out.push((name, String::from_utf8_lossy(value).into_owned()));
                }
                k += 2 + len;
                continue;
            }
            _ => return None,
        };
        k += fixed;
    }
    Some(out)
}

/// Splits `bytes` into messages.
pub fn read(bytes: &[u8]) -> Vec<Item> {
    let mut items = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < 12 {
            items.push(Item::Damaged(Damage::Truncated {
                start: at,
                have: rest.len(),
                need: 12,
            }));
            break;
        }
        if !starts_with_frame(rest) {
            let reason = match (be32(rest, 0), be32(rest, 8)) {
                (Some(_), Some(crc)) if crc32(&rest[..8]) != crc => format!(
                    "the prelude's CRC does not match (computed {:#010x}, recorded {crc:#010x})",
                    crc32(&rest[..8])
                ),
                _ => "the prelude's lengths do not hold together".to_owned(),
            };
            items.push(Item::Damaged(Damage::Prelude { start: at, reason }));
            break;
        }
        let total = be32(rest, 0).unwrap_or_default() as usize;
        let headers_len = be32(rest, 4).unwrap_or_default() as usize;
        if rest.len() < total {
            items.push(Item::Damaged(Damage::Truncated {
                start: at,
                have: rest.len(),
                need: total,
            }));
            break;
        }
        let recorded = be32(rest, total - 4).unwrap_or_default();
        let computed = crc32(&rest[..total - 4]);
        if recorded != computed {
            items.push(Item::Damaged(Damage::MessageCrc {
                start: at,
                end: at + total,
                computed,
                recorded,
            }));
            at += total;
            continue;
        }
        let hs = headers(&rest[12..12 + headers_len]).unwrap_or_default();
        let get = |name: &str| hs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let message_type = get(":message-type");
        let event_type = match message_type.as_deref() {
            Some("exception") => get(":exception-type"),
            _ => get(":event-type"),
        };
        items.push(Item::Frame(Frame {
            start: at,
            end: at + total,
            payload: (at + 12 + headers_len, at + total - 4),
            message_type,
            event_type,
        }));
        at += total;
    }
    items
}

/// Writes one message (for tests and built fixtures).
#[cfg(test)]
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut hs = Vec::new();
    for (name, value) in headers {
        hs.push(name.len() as u8);
        hs.extend_from_slice(name.as_bytes());
        hs.push(7);
        hs.extend_from_slice(&(value.len() as u16).to_be_bytes());
        hs.extend_from_slice(value.as_bytes());
    }
    let total = 12 + hs.len() + payload.len() + 4;
    let mut out = Vec::new();
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(hs.len() as u32).to_be_bytes());
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&hs);
    out.extend_from_slice(payload);
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ty: &str, json: &str) -> Vec<u8> {
        frame(
            &[
                (":event-type", ty),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            json.as_bytes(),
        )
    }

    #[test]
    fn crc_of_the_check_string() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn frames_then_a_bad_crc_then_a_cut_frame() {
        let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
        assert!(starts_with_frame(&bytes));
        let mut bad = event("contentBlockDelta", r#"{"contentBlockIndex":0}"#);
        let n = bad.len();
        bad[n - 6] ^= 1;
        bytes.extend_from_slice(&bad);
        let cut = event("messageStop", r#"{"stopReason":"end_turn"}"#);
        bytes.extend_from_slice(&cut[..cut.len() - 3]);
        let items = read(&bytes);
        assert_eq!(items.len(), 3);
        assert!(
            matches!(&items[0], Item::Frame(f) if f.event_type.as_deref() == Some("messageStart"))
        );
        assert!(matches!(items[1], Item::Damaged(Damage::MessageCrc { .. })));
        assert!(matches!(items[2], Item::Damaged(Damage::Truncated { .. })));
    }
}
