//! The light and flat readings of a record's text: what the replay learns of a record
//! without decoding it (its keys, its flat fields, a light entry).

use serde_json::Value;

use crate::formats::agent_log::read::{BusEvent, Light};
use crate::json::log_value::{self, Discard};

/// A string field as `apply_json` reads it (`get(k).and_then(Value::as_str)`): any other value
/// counts as absent.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Lenient<'a>(pub(super) Option<std::borrow::Cow<'a, str>>);

impl Lenient<'_> {
    pub(super) fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Lenient<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v.to_owned().into())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_element_seed(Discard)?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_key_seed(Discard)?.is_some() {
                    a.next_value_seed(Discard)?;
                }
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a key is present, whatever its value (`null` included).
#[derive(Default, Debug, PartialEq)]
struct Seen(bool);

impl<'de> serde::Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Discard::deserialize(d).map(|_| Seen(true))
    }
}

/// What a key of an object tells the light readings ([`Peek`], `flat_peek`).
enum PeekKey {
    /// One of the fields they read: its index in [`Peek`]'s order.
    Field(usize),
    /// A key only an object the full path must read has (a part event, an early compact log
    /// entry, a Claude Code record, provider metadata, the usage the SDK handed the agent).
    RuledOut,
    Other,
}

/// What `key` tells the light readings. This runs on every key of every light record: the length
/// picks the candidates, compared as fixed-size arrays (a word or two at once), not by `memcmp`.
fn peek_key(key: &str) -> PeekKey {
    fn is<const N: usize>(k: &[u8], word: &[u8; N]) -> bool {
        k.first_chunk::<N>() == Some(word)
    }
    let k = key.as_bytes();
    match k.len() {
        3 if is(k, b"log") => PeekKey::RuledOut,
        4 if is(k, b"type") => PeekKey::Field(0),
        4 if is(k, b"part") => PeekKey::RuledOut,
        5 if is(k, b"level") => PeekKey::Field(1),
        7 if is(k, b"service") => PeekKey::Field(2),
        7 if is(k, b"message") => PeekKey::Field(3),
        7 if is(k, b"modelID") => PeekKey::Field(6),
        8 if is(k, b"rawModel") => PeekKey::Field(7),
        8 if is(k, b"rawUsage") => PeekKey::RuledOut,
        9 if is(k, b"sessionID") => PeekKey::Field(4),
        10 if is(k, b"providerID") => PeekKey::Field(5),
        10 if is(k, b"session_id") => PeekKey::RuledOut,
        11 if is(k, b"rawMetadata") => PeekKey::RuledOut,
        16 if is(k, b"providerMetadata") => PeekKey::RuledOut,
        _ => PeekKey::Other,
    }
}

/// The fields of a JSON object that tell whether `apply_json` needs more of it than [`Light`].
///
/// Read by hand rather than derived: the other members are walked with [`Discard`], which refuses
/// what building a `Value` refuses (a derived reader skips them with `IgnoredAny`, which accepts
/// lone surrogates, numbers out of range and nesting beyond the recursion limit), so an object
/// that reads as a `Peek` also reads as a `Value`. A key that alone rules the object out (`part`,
/// `log`, Claude Code's `session_id`, `providerMetadata`, `rawUsage`, `rawMetadata`) ends the
/// reading at once: the object
/// takes the full path, and its value (a part event's part, most of its bytes) is not walked
/// twice.
#[derive(Default, Debug, PartialEq)]
struct Peek<'a> {
    pub(super) ty: Lenient<'a>,
    level: Lenient<'a>,
    pub(super) service: Lenient<'a>,
    pub(super) message: Lenient<'a>,
    /// `sessionID`.
    pub(super) session_id: Lenient<'a>,
    provider_id: Seen,
    model_id: Seen,
    raw_model: Seen,
}

impl<'a> Peek<'a> {
    /// Sets the field of index `field` (in [`peek_key`]'s order) as the flat readings read it:
    /// `value` is a string's contents, `None` another plain value.
    #[inline(always)]
    fn set(&mut self, field: usize, value: Option<&'a str>) {
        let lenient = Lenient(value.map(std::borrow::Cow::Borrowed));
        match field {
            0 => self.ty = lenient,
            1 => self.level = lenient,
            2 => self.service = lenient,
            3 => self.message = lenient,
            4 => self.session_id = lenient,
            5 => self.provider_id = Seen(true),
            6 => self.model_id = Seen(true),
            _ => self.raw_model = Seen(true),
        }
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Peek<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Peek<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Peek<'de>, A::Error> {
                let mut p = Peek::default();
                // A key met twice is refused (the object then takes the full path).
                let mut met = [false; 8];
                while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                    let field = match peek_key(key.as_deref().unwrap_or_default()) {
                        PeekKey::Field(field) => field,
                        PeekKey::RuledOut => {
                            return Err(serde::de::Error::custom("not a light object"));
                        }
                        PeekKey::Other => {
                            map.next_value_seed(Discard)?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut met[field], true) {
                        return Err(serde::de::Error::custom("a key met twice"));
                    }
                    match field {
                        0 => p.ty = map.next_value()?,
                        1 => p.level = map.next_value()?,
                        2 => p.service = map.next_value()?,
                        3 => p.message = map.next_value()?,
                        4 => p.session_id = map.next_value()?,
                        5 => p.provider_id = map.next_value()?,
                        6 => p.model_id = map.next_value()?,
                        _ => p.raw_model = map.next_value()?,
                    }
                }
                Ok(p)
            }
        }
        d.deserialize_map(V)
    }
}

/// How the replay parses a log's JSON object: without building the heavy fields of a part
/// event's part (see [`log_value`]).
pub(super) fn parse_object(text: &str) -> serde_json::Result<Value> {
    log_value::parse(text)
}

/// What [`flat_peek`] made of an object.
#[derive(Debug, PartialEq)]
enum Flat<'a> {
    /// What reading it as a [`Peek`] gives.
    Peek(Peek<'a>),
    /// A key that rules it out (reading it as a [`Peek`] fails too).
    RuledOut,
    /// Not a flat object of plain values: read it as a [`Peek`].
    Unsure,
}

/// Most logger entries and bus events are flat objects of plain values: keys without escapes,
/// strings (with escapes only where their text is not read: a git hash's `\n`), short decimal
/// numbers, `true`, `false`, `null`. Such an object is read here ([`flat_fast`] when it is
/// compact and has no escapes, else [`flat_slow`]), much faster than through serde; anything
/// else (an escaped key or read string, a control character, a lone surrogate, a nested value,
/// an exponent, a long number, a key met twice) is [`Flat::Unsure`], and what is read is what
/// reading it as a [`Peek`] would read, so an object this takes also reads as a `Value`.
fn flat_peek(text: &str) -> Flat<'_> {
    flat_fast(text).unwrap_or_else(|| flat_slow(text))
}

/// [`flat_peek`] of the commonest object: written compact (no whitespace), and without a
/// backslash or a control byte in any string. A string then ends at the next quote: the quotes
/// of each 64-byte block are found at once ([`Quotes`]) and the object is read from quote to
/// quote, where [`flat_slow`] reads it byte by byte. `None` leaves the object to [`flat_slow`]
/// (anything else: whitespace, an escape, a nested value); what this reads, that reads the same
/// (tested).
fn flat_fast(text: &str) -> Option<Flat<'_>> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut p = Peek::default();
    if b.len() == 2 {
        return Some(Flat::Peek(p));
    }
    let mut quotes = Quotes {
        b,
        block: usize::MAX,
        stops: 0,
    };
    let mut met = [false; 8];
    let mut i = 1;
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let k = quotes.next(i + 1)?;
        // Cuts fall on ASCII quotes: character boundaries.
        let key = text.get(i + 1..k)?;
        if b.get(k + 1) != Some(&b':') {
            return None;
        }
        let field = match peek_key(key) {
            PeekKey::Field(field) => field,
            PeekKey::RuledOut => return Some(Flat::RuledOut),
            PeekKey::Other => 8,
        };
        let v = k + 2;
        let (value, end) = if b.get(v) == Some(&b'"') {
            let e = quotes.next(v + 1)?;
            (Some(text.get(v + 1..e)?), e + 1)
        } else {
            (None, plain_scalar(b, v)?)
        };
        if field < 8 {
            if std::mem::replace(&mut met[field], true) {
                return None;
            }
            p.set(field, value);
        }
        match b.get(end) {
            Some(b',') => i = end + 1,
            Some(b'}') => return (end + 1 == b.len()).then_some(Flat::Peek(p)),
            _ => return None,
        }
    }
}

/// The quotes of a text without backslashes or control bytes, found 64 bytes at a time.
struct Quotes<'a> {
    b: &'a [u8],
    /// The block `stops` holds (`usize::MAX`: none yet).
    block: usize,
    /// The quotes and control bytes of `block`.
    stops: u64,
}

impl Quotes<'_> {
    /// The index of the first quote at or after `from`; `None` when there is none, or a block
    /// it reads holds a backslash, or a control byte comes first.
    #[inline(always)]
    pub(super) fn next(&mut self, mut from: usize) -> Option<usize> {
        loop {
            // Most strings end in the block they start in, whose masks are at hand.
            let block = from / 64;
            if block != self.block {
                self.load(block)?;
            }
            let live = self.stops & (!0u64 << (from % 64));
            if live != 0 {
                let k = block * 64 + live.trailing_zeros() as usize;
                return (self.b.get(k) == Some(&b'"')).then_some(k);
            }
            from = (block + 1) * 64;
        }
    }

    /// Reads the masks of block `block`: `None` past the end, or when it holds a backslash.
    #[inline(never)]
    fn load(&mut self, block: usize) -> Option<()> {
        let bytes = self.b.get(block * 64..)?;
        let (stops, backslashes) = match bytes.get(..64) {
            Some(full) => crate::model::conform::string_masks(full),
            None => {
                let mut padded = [b' '; 64];
                padded[..bytes.len()].copy_from_slice(bytes);
                crate::model::conform::string_masks(&padded)
            }
        };
        if backslashes != 0 {
            return None;
        }
        (self.block, self.stops) = (block, stops);
        Some(())
    }
}

/// The index after the number or literal (`true`, `false`, `null`) starting at `i`, if it is one
/// the flat readings take: -?(0|[1-9][0-9]*)(\.[0-9]+)?, at most 15 digits on each side.
fn plain_scalar(b: &[u8], i: usize) -> Option<usize> {
    let literal = |word: &[u8]| {
        b.get(i..i + word.len())
            .filter(|w| *w == word)
            .map(|_| i + word.len())
    };
    match *b.get(i)? {
        b't' => literal(b"true"),
        b'f' => literal(b"false"),
        b'n' => literal(b"null"),
        _ => {
            let mut j = i + usize::from(b.get(i) == Some(&b'-'));
            let digits = |j: usize| {
                b.get(j..)
                    .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
            };
            let int = digits(j);
            if int == 0 || int > 15 || (int > 1 && b.get(j) == Some(&b'0')) {
                return None;
            }
            j += int;
            if b.get(j) == Some(&b'.') {
                let frac = digits(j + 1);
                if frac == 0 || frac > 15 {
                    return None;
                }
                j += 1 + frac;
            }
            match b.get(j) {
                Some(b'e' | b'E') => None,
                _ => Some(j),
            }
        }
    }
}

/// [`flat_peek`] byte by byte, for any flat object.
fn flat_slow(text: &str) -> Flat<'_> {
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    };
    // A string starting at `i` (a `"`) that serde_json reads the same: its contents when it has
    // no escapes, and the index after it.
    let string = |i: usize| -> Option<(Option<&str>, usize)> {
        let (k, escaped) = crate::model::conform::string_end(b, i + 1)?;
        // The cut falls on ASCII `"`: a character boundary.
        let contents = if escaped {
            None
        } else {
            Some(text.get(i + 1..k)?)
        };
        Some((contents, k + 1))
    };
    // The index after a plain value (number, literal or string) starting at `i`, and whether it
    // is a string with escapes.
    let plain = |i: usize| -> Option<(usize, bool)> {
        match *b.get(i)? {
            b'"' => string(i).map(|(contents, end)| (end, contents.is_none())),
            _ => plain_scalar(b, i).map(|end| (end, false)),
        }
    };
    let mut p = Peek::default();
    let mut met = [false; 8];
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return Flat::Unsure;
    }
    i = ws(i + 1);
    if b.get(i) == Some(&b'}') {
        return match b.get(ws(i + 1)) {
            None => Flat::Peek(p),
            Some(_) => Flat::Unsure,
        };
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Flat::Unsure;
        }
        // An escaped key is left to serde_json, which decodes it.
        let Some((Some(key), after)) = string(i) else {
            return Flat::Unsure;
        };
        i = ws(after);
        if b.get(i) != Some(&b':') {
            return Flat::Unsure;
        }
        i = ws(i + 1);
        let field = match peek_key(key) {
            PeekKey::Field(field) => field,
            PeekKey::RuledOut => return Flat::RuledOut,
            PeekKey::Other => 8,
        };
        let value_start = i;
        let Some((end, escaped)) = plain(i) else {
            return Flat::Unsure;
        };
        // A field read as a string must be decoded: left to serde_json. A field only seen, or a
        // member not read, may have escapes.
        if field < 5 && escaped {
            return Flat::Unsure;
        }
        if field < 8 {
            if std::mem::replace(&mut met[field], true) {
                return Flat::Unsure;
            }
            let value = match b.get(value_start) {
                Some(b'"') => text.get(value_start + 1..end - 1),
                _ => None,
            };
            p.set(field, value);
        }
        i = ws(end);
        match b.get(i) {
            Some(b',') => i = ws(i + 1),
            Some(b'}') => {
                return match b.get(ws(i + 1)) {
                    None => Flat::Peek(p),
                    Some(_) => Flat::Unsure,
                };
            }
            _ => return Flat::Unsure,
        }
    }
}

/// Longest object [`light`] looks at.
const LIGHT_MAX: usize = 4096;

/// A JSON object `apply_json` reads nothing of but its session and, for a bus event, its name:
/// a logger entry below `warn` that none of `apply_log`'s rules looks at, or a bus event. Any
/// doubt leaves it to the full path.
pub(super) fn light(text: &str) -> Option<Light> {
    // Logger entries and bus events are short; long objects (parts, HTTP bodies) are not worth
    // a look before their full decoding.
    if text.len() > LIGHT_MAX {
        return None;
    }
    let p: Peek<'_> = match flat_peek(text) {
        Flat::Peek(p) => p,
        Flat::RuledOut => return None,
        Flat::Unsure => serde_json::from_str(text).ok()?,
    };
    let ty = p.ty.get()?;
    let service = p.service.get().unwrap_or_default();
    let message = p.message.get().unwrap_or_default();
    let session = p
        .session_id
        .get()
        .filter(|id| id.starts_with("ses"))
        .map(str::to_owned);
    if service == "bus" && message == "publishing" {
        let bus = match ty {
            "session.error" => BusEvent::SessionError,
            "session.idle" => BusEvent::Idle,
            _ => BusEvent::Other,
        };
        return Some(Light {
            session,
            bus: Some(bus),
        });
    }
    let plain = ty == "log"
        && !matches!(p.level.get(), Some("error" | "warn"))
        && service != "http"
        && !(service == "session.prompt" && message == "cancel")
        && message != "unhandled"
        && message != "exiting loop"
        && !message.starts_with("Agent started")
        // The default a fallback picks (see `apply_log`).
        && message != "using opencode provider as default"
        && !mentions_retry(message)
        // `apply_log` reads a model resolution from these (and only then).
        && !(p.provider_id.0 && p.model_id.0 && (p.raw_model.0 || service == "default"));
    plain.then_some(Light { session, bus: None })
}

/// Whether a logger message speaks of a retry or a sleep (in ASCII letters of any case), what
/// `apply_log` looks for: one pass over the message, without a copy (messages are short). Each
/// word's first four letters are compared at once: `| 0x20` lowers an ASCII letter (and makes
/// no other byte a letter), so four bytes lowered match a word's four lower-case letters only
/// when they are those letters in any case.
fn mentions_retry(message: &str) -> bool {
    const RETR: u32 = u32::from_le_bytes(*b"retr");
    const WILL: u32 = u32::from_le_bytes(*b"will");
    const SLEE: u32 = u32::from_le_bytes(*b"slee");
    let b = message.as_bytes();
    let at = |i: usize, word: &[u8]| {
        b.get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    // Every word has at least five letters.
    b.windows(5).enumerate().any(|(i, w)| {
        match u32::from_le_bytes([w[0], w[1], w[2], w[3]]) | 0x2020_2020 {
            RETR => at(i, b"retry-after") || at(i, b"retrying"),
            WILL => at(i, b"will retry"),
            SLEE => w[4] | 0x20 == b'p',
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_entries_apply_json_reads_nothing_of_are_light() {
        let plain = r#"{"type":"log","level":"info","service":"lsp","sessionID":"ses_1","message":"touching file"}"#;
        assert_eq!(
            light(plain),
            Some(Light {
                session: Some("ses_1".into()),
                bus: None
            })
        );
        // A model named outside the CLI's own resolution (no `rawModel`, not `default`).
        let resolving = r#"{"type":"log","level":"info","service":"session.prompt","providerID":"a","modelID":"b","sessionID":"ses_2","message":"resolving model"}"#;
        assert_eq!(
            light(resolving),
            Some(Light {
                session: Some("ses_2".into()),
                bus: None
            })
        );
        let idle =
            r#"{"type":"session.idle","level":"info","service":"bus","message":"publishing"}"#;
        assert_eq!(light(idle).and_then(|l| l.bus), Some(BusEvent::Idle));
        for full in [
            r#"{"type":"log","level":"warn","service":"lsp","message":"touching file"}"#,
            r#"{"type":"log","level":"info","service":"http","message":"response"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"Will retry in 2s"}"#,
            r#"{"type":"log","level":"info","service":"default","message":"m","providerID":"a","modelID":"b"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"m","providerID":"a","modelID":"b","rawModel":"a/b"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"m","providerMetadata":null}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"id":"prt_1"}}"#,
            // What serde_json skips but does not build: a lone surrogate, a number out of range.
            r#"{"type":"log","level":"info","message":"m","x":"\ud800"}"#,
            r#"{"type":"log","level":"info","message":"m","x":1e400}"#,
            r#"{"type":"log","level":"info","message":"m","message":"twice"}"#,
            r#"{"type":"log","level":"info","message":"m","x":"\udc00 \ud800"}"#,
            r#"{"type":"log","level":"info","message":"m","x":[1e400]}"#,
            r#"{"type":"log","level":"info","message":"m","x":{"y":-1e999}}"#,
            r#"{"type":"log","level":"info","message":"m","\ud800":1}"#,
            r#"{"type":"log","level":"info","message":"m""#,
        ] {
            assert_eq!(light(full), None, "{full}");
        }
        // Nesting beyond serde_json's recursion limit.
        let deep = format!(
            r#"{{"type":"log","level":"info","message":"m","x":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert_eq!(light(&deep), None);
        let shallow = format!(
            r#"{{"type":"log","level":"info","message":"m","x":{}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(light(&shallow).is_some());
    }

    /// The keys the light readings look for are told apart as a match on the whole key tells
    /// them: the keys themselves, and every one-byte mutation of them.
    #[test]
    fn peek_key_knows_its_keys_and_nothing_else() {
        let reference = |key: &str| match key {
            "type" => Some(0),
            "level" => Some(1),
            "service" => Some(2),
            "message" => Some(3),
            "sessionID" => Some(4),
            "providerID" => Some(5),
            "modelID" => Some(6),
            "rawModel" => Some(7),
            "part" | "log" | "session_id" | "providerMetadata" | "rawUsage" | "rawMetadata" => {
                Some(8)
            }
            _ => None,
        };
        let got = |key: &str| match peek_key(key) {
            PeekKey::Field(i) => Some(i),
            PeekKey::RuledOut => Some(8),
            PeekKey::Other => None,
        };
        let keys = [
            "type",
            "level",
            "service",
            "message",
            "sessionID",
            "providerID",
            "modelID",
            "rawModel",
            "part",
            "log",
            "session_id",
            "providerMetadata",
            "rawUsage",
            "rawMetadata",
            "",
            "t",
            "types",
            "messages",
            "providerMetadat",
        ];
        let mut known = 0;
        for seed in keys {
            for key in std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                assert_eq!(got(&key), reference(&key), "{key:?}");
                known += usize::from(reference(&key).is_some());
            }
        }
        assert!(known >= 12, "{known}");
    }

    /// The look for retry words finds what a search of the lower-case copy finds.
    #[test]
    fn mentions_retry_is_a_search_in_any_case() {
        let copy = |m: &str| {
            let lower = m.to_ascii_lowercase();
            ["retry-after", "will retry", "retrying", "sleep"]
                .iter()
                .any(|k| lower.contains(k))
        };
        let seeds = [
            "Rate limited, WILL RETRY in 5s",
            "using Retry-After value",
            "retrying é request",
            "SLeeP 100",
            "sleeping",
            "will retr",
            "retry",
            "ré-try sleep",
            "",
        ];
        let mut found = 0;
        for seed in seeds {
            for m in std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed)) {
                assert_eq!(mentions_retry(&m), copy(&m), "{m:?}");
                found += usize::from(copy(&m));
            }
        }
        assert!(found > 100, "{found}");
    }

    /// The flat reading reads what serde's does, or leaves the object to it: every one-byte
    /// mutation of flat logger entries and bus events.
    #[test]
    fn flat_reading_agrees_with_serde() {
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","x":-0.25,"ok":true,"no":false,"z":null,"providerID":"a","modelID":"b","rawModel":"c","message":"loop é"}"#,
            "{ \"type\" : \"session.idle\" ,\n \"service\":\"bus\",\t\"message\":\"publishing\" }\r\n",
            r#"{"type":"log","part":{"id":"p"},"message":"m"}"#,
            r#"{"type":"log","level":"info","message":"m","n":0}"#,
            // Escapes where the text is not read, and where it is.
            r#"{"type":"log","service":"snapshot","hash":"01fc\n","cwd":"/a \"b\" \u00e9 \\ \/","providerID":"\u0061","message":"tracking"}"#,
            r#"{"type":"log","x":"\ud83d\ude00","message":"m"}"#,
            r#"{"type":"log","service":"snap\u0073hot","message":"tracking"}"#,
            "{}",
        ];
        let (mut flat, mut ruled_out, mut escaped) = (0, 0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let serde = serde_json::from_str::<Peek<'_>>(&text);
                match flat_peek(&text) {
                    Flat::Peek(p) => {
                        assert_eq!(serde.as_ref().ok(), Some(&p), "{text}");
                        flat += 1;
                        escaped += usize::from(text.contains('\\'));
                    }
                    Flat::RuledOut => {
                        assert!(serde.is_err(), "{text}");
                        ruled_out += 1;
                    }
                    Flat::Unsure => {}
                }
            }
        }
        assert!(
            flat > 500 && ruled_out > 50 && escaped > 100,
            "{flat} {ruled_out} {escaped}"
        );
    }

    /// The quote-to-quote reading reads what the byte-by-byte one reads, or leaves the object
    /// to it: every one-byte mutation of compact flat objects, some longer than a block, with
    /// strings across blocks.
    #[test]
    fn fast_flat_reading_agrees_with_the_slow_one() {
        let long = "x".repeat(150);
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","x":-0.25,"ok":true,"no":false,"z":null,"providerID":"a","modelID":"b","rawModel":"c","message":"loop é"}"#.to_owned(),
            r#"{"type":"session.idle","service":"bus","message":"publishing"}"#.to_owned(),
            r#"{"type":"log","part":{"id":"p"},"message":"m"}"#.to_owned(),
            format!(r#"{{"type":"log","{long}":"{long}","message":"{long}","n":1234567,"sessionID":"ses_{long}"}}"#),
            format!(r#"{{"type":"log","a":"{}","b":12345678901234.5,"service":"bus"}}"#, &long[..51]),
            "{}".to_owned(),
        ];
        let (mut fast, mut ruled_out) = (0, 0);
        for seed in &seeds {
            for text in std::iter::once(seed.clone()).chain(crate::text::one_byte_mutations(seed)) {
                let Some(flat) = flat_fast(&text) else {
                    continue;
                };
                assert_eq!(flat, flat_slow(&text), "{text}");
                fast += 1;
                ruled_out += usize::from(flat == Flat::RuledOut);
            }
        }
        assert!(fast > 1000 && ruled_out > 50, "{fast} {ruled_out}");
    }

    /// An object the light filter takes always reads as a `Value` too: every one-byte mutation
    /// of a plain logger entry.
    #[test]
    fn light_objects_are_values() {
        let seed = r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"lsp","sessionID":"ses_1","message":"touching \"file\" \u00e9","n":[1,-2.5e3,{"x":null}],"ok":true}"#;
        let mut taken = 0;
        for text in crate::text::one_byte_mutations(seed) {
            if light(&text).is_some() {
                assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
                taken += 1;
            }
        }
        assert!(taken > 100);
    }
}
