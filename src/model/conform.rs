//! A fast, allocation-free answer to "does this JSON text satisfy this schema?".
//!
//! [`conforms`] walks the bytes once (twice for a union, to find its tag first) against the same
//! [`Ty`] the strict validator uses, without building a `Value`. It is *conservative*: `true` is
//! always right, while `false` only means "not sure" — numbers with exponents, very long
//! integers, anything unusual — and the caller then parses and validates the slow way, which
//! also produces the words of each issue. Most stored payloads conform, so most of them skip the
//! slow way.
//!
//! [`conforms_with`] also tells a [`Sink`] about every field of every schema object it walks,
//! with the field's raw text: a reader can build its model in the same pass (see
//! [`super::read`]).

use super::schema::{Field, Ty};
use crate::json::scan::{Seg, locate};

/// Whether `text` is exactly one JSON value that satisfies `ty` (see the module doc).
#[cfg(test)]
pub fn conforms(text: &str, ty: &Ty) -> bool {
    conforms_with(text, ty, &mut NoSink)
}

/// [`conforms`], telling `sink` what it walks. Events are only final when the answer is `true`.
pub fn conforms_with<'a, S: Sink<'a>>(text: &'a str, ty: &Ty, sink: &mut S) -> bool {
    let mut p = Parser {
        b: text.as_bytes(),
        text,
        pos: 0,
        depth: 0,
        keys: [""; MAX_PATH],
        nkeys: 0,
        sink,
    };
    p.ws();
    p.value(ty) && {
        p.ws();
        p.pos == p.b.len()
    }
}

/// What a walk tells about the fields of the schema objects it meets. A `path` is the keys from
/// the top-level object down to a field (fields deeper than [`MAX_PATH`] are not told).
pub trait Sink<'a> {
    /// A union's tag named `variant`; `path` leads to the union (empty at the top level), `raw`
    /// is the tag's value as written. Told before its fields.
    fn variant(&mut self, path: &[&'a str], variant: &'static str, raw: &'a str);
    /// A field is about to be walked.
    fn open(&mut self, path: &[&'a str]);
    /// A field was walked: `raw` is its value as written. `known` says whether the schema names
    /// it; the fields of a known object are told, those inside other values are not.
    fn field(&mut self, path: &[&'a str], raw: &'a str, known: bool);
}

/// A sink that listens to nothing.
#[cfg(test)]
struct NoSink;

#[cfg(test)]
impl<'a> Sink<'a> for NoSink {
    #[inline(always)]
    fn variant(&mut self, _: &[&'a str], _: &'static str, _: &'a str) {}
    #[inline(always)]
    fn open(&mut self, _: &[&'a str]) {}
    #[inline(always)]
    fn field(&mut self, _: &[&'a str], _: &'a str, _: bool) {}
}

/// Deepest field path told to a [`Sink`].
pub const MAX_PATH: usize = 8;

/// The index of the first `"`, `\\` or control byte (< 0x20) at or after `i`. Sixteen bytes at a
/// time with the processor's vector instructions, then eight at a time: in each word, a byte
/// that matches sets its high bit in `hits`, and the lowest one set is always a true match
/// (borrows only run upward, past it).
pub(crate) fn special(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(lane) = b.get(i..i + 16) {
        if let Some(k) = lane_special(lane) {
            return Some(i + k);
        }
        i += 16;
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w;
    while let Some(chunk) = b.get(i..i + 8) {
        let Ok(bytes) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let w = u64::from_le_bytes(bytes);
        let hits = (zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGH;
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let rest = b.get(i..)?;
    rest.iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| i + k)
}

/// The end of the JSON string whose contents start at `start` (after its opening quote): the
/// index of its closing quote, and whether it has escapes. `None` for a string serde_json might
/// not read the same: one with a control byte, an unknown escape or a `\uD…` escape (a lone
/// surrogate fails there), or no end.
///
/// Long strings (a tool's output, a file's text) are mostly plain text with an escape every few
/// dozen bytes (`\n`, `\"`): they are read 64 bytes at a time, from masks of the quotes,
/// backslashes and control bytes of each block (see [`long_string_end`]), and an escape costs a
/// few bit operations rather than a new scan. [`string_end_bytewise`] is the reference the tests
/// hold this to.
#[inline(always)]
pub(crate) fn string_end(b: &[u8], start: usize) -> Option<(usize, bool)> {
    // Most strings are short (keys, ids, names, timestamps) and plain: their end is in their
    // first 32 bytes.
    let mut i = start;
    while i < start + 32
        && let Some(lane) = b.get(i..i + 16)
    {
        match lane_special(lane) {
            None => i += 16,
            Some(k) if lane.get(k) == Some(&b'"') => return Some((i + k, false)),
            Some(_) => break,
        }
    }
    long_string_end(b, start)
}

/// [`string_end`] for a string that is long or has escapes, a block of 64 bytes at a time
/// whatever its escapes: which bytes are escaped is worked out from the block's backslashes at
/// once ([`escaped_by`]), and the end is its first quote or control byte that is not. Each escape
/// before the end is then checked (one table look-up each); a `\u` escape, whose four digits must
/// be checked too, leaves the string to [`string_end_by_escape`]. The last bytes of `b` (less
/// than a block) are read one special byte at a time.
#[inline(never)]
fn long_string_end(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start;
    let mut escaped = false;
    // Whether the next block's first byte is escaped (by a backslash that ended the last one).
    let mut carry = 0u64;
    while let Some(block) = b.get(i..i + 64) {
        let (stop, backslash) = string_masks(block);
        let ends = if backslash | carry == 0 {
            stop
        } else {
            let by_escape = escaped_by(backslash, &mut carry);
            let ends = stop & !by_escape;
            // The bits before the end (all of them when the string goes on).
            let before = match ends {
                0 => !0,
                _ => (ends & ends.wrapping_neg()) - 1,
            };
            let mut check = by_escape & before;
            while check != 0 {
                match ESCAPE[usize::from(block[check.trailing_zeros() as usize])] {
                    Escape::Short => {}
                    Escape::Unicode => return string_end_by_escape(b, start),
                    Escape::Invalid => return None,
                }
                check &= check - 1;
            }
            // (A byte escaped from the block before was counted there.)
            escaped |= (backslash & before) != 0;
            ends
        };
        if ends != 0 {
            let k = i + ends.trailing_zeros() as usize;
            return (b.get(k) == Some(&b'"')).then_some((k, escaped));
        }
        i += 64;
    }
    // The last bytes (less than a block), one special byte at a time.
    if carry != 0 {
        match ESCAPE[usize::from(*b.get(i)?)] {
            Escape::Short => i += 1,
            Escape::Unicode => return string_end_by_escape(b, start),
            Escape::Invalid => return None,
        }
    }
    last_bytes_end(b, i, escaped)
}

/// The end of a string read from `i` (not inside an escape) to `b`'s end, one special byte at a
/// time: what [`long_string_end`] and [`string_end_by_escape`] do with the last bytes, less
/// than a block. `escaped` says whether an escape came before `i`.
fn last_bytes_end(b: &[u8], mut i: usize, mut escaped: bool) -> Option<(usize, bool)> {
    loop {
        i = special(b, i)?;
        match b.get(i)? {
            b'"' => return Some((i, escaped)),
            b'\\' => {
                escaped = true;
                i = escape_end(b, i)?;
            }
            _ => return None,
        }
    }
}

/// What may follow a backslash in a string [`string_end`] takes.
#[derive(Clone, Copy)]
enum Escape {
    /// `"`, `\\`, `/`, `b`, `f`, `n`, `r`, `t`: two bytes in all.
    Short,
    /// `u`, and four hex digits to check.
    Unicode,
    Invalid,
}

/// [`Escape`] of each byte.
static ESCAPE: [Escape; 256] = {
    let mut table = [Escape::Invalid; 256];
    let short = b"\"\\/bfnrt";
    let mut k = 0;
    while k < short.len() {
        table[short[k] as usize] = Escape::Short;
        k += 1;
    }
    table[b'u' as usize] = Escape::Unicode;
    table
};

/// The bytes of a 64-byte block, other than backslashes, that a backslash escapes, from the mask
/// of its backslashes: a run of backslashes escapes the byte after it when its length is odd
/// (`\\` is one escaped backslash, `\\\` then escapes what follows). `carry` says
/// whether the block's first byte is escaped (a run ended the block before), and is set to
/// whether the next block's is.
fn escaped_by(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let first = *carry & 1;
    // An escaped backslash starts no run.
    let b = backslash & !first;
    let starts = b & !(b << 1);
    // Adding a run's first bit to the run carries past its last: the bit after it is set, the
    // run cleared. A run of odd length that starts on an even bit ends before an odd one, and
    // the other way round; a run that reaches the block's end carries out of it.
    let after_even = b.wrapping_add(starts & EVEN) & !b;
    let (odd_sum, out) = b.overflowing_add(starts & !EVEN);
    let after_odd = odd_sum & !b;
    *carry = u64::from(out);
    (after_even & !EVEN) | (after_odd & EVEN) | (first & !backslash)
}

/// [`string_end`] one escape at a time, from blocks of masks, for a string with a `\u` escape.
fn string_end_by_escape(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start;
    let mut escaped = false;
    'blocks: while let Some(block) = b.get(i..i + 64) {
        let (stop, backslash) = string_masks(block);
        // Bits below `from` are consumed (an escape's bytes).
        let mut from = 0;
        loop {
            let live = !0u64 << from;
            let (s, e) = (stop & live, backslash & live);
            if e != 0 && e.trailing_zeros() < s.trailing_zeros() {
                escaped = true;
                let next = escape_end(b, i + e.trailing_zeros() as usize)?;
                from = next - i;
                if from >= 64 {
                    i = next;
                    continue 'blocks;
                }
                continue;
            }
            if s != 0 {
                let k = i + s.trailing_zeros() as usize;
                return (b.get(k) == Some(&b'"')).then_some((k, escaped));
            }
            i += 64;
            continue 'blocks;
        }
    }
    last_bytes_end(b, i, escaped)
}

/// The index after the escape whose backslash is at `i`, if it is one serde_json reads as
/// [`string_end`] requires.
fn escape_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 2),
        b'u' => {
            let hex = b.get(i + 2..i + 6)?;
            // Lone surrogates make serde_json fail: leave them to it.
            (hex.iter().all(u8::is_ascii_hexdigit) && !matches!(hex[0], b'd' | b'D'))
                .then_some(i + 6)
        }
        _ => None,
    }
}

/// The index in `lane` (16 bytes) of its first quote, backslash or control byte.
#[inline(always)]
fn lane_special(lane: &[u8]) -> Option<usize> {
    use wide::u8x16;
    let mut bytes = [0; 16];
    bytes.copy_from_slice(lane.get(..16)?);
    let v = u8x16::new(bytes);
    let control = u8x16::splat(0x1f);
    let hits = v.simd_eq(u8x16::splat(b'"'))
        | v.simd_eq(u8x16::splat(b'\\'))
        | v.max(control).simd_eq(control);
    let mask = hits.to_bitmask();
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// The masks of the quotes and control bytes (`stop`), and of the backslashes, of a 64-byte
/// block, sixteen bytes at a time with the processor's vector instructions.
pub(crate) fn string_masks(block: &[u8]) -> (u64, u64) {
    use wide::u8x16;
    let (quote, backslash, control) = (u8x16::splat(b'"'), u8x16::splat(b'\\'), u8x16::splat(0x1f));
    let (mut stop, mut escapes) = (0, 0);
    for (k, lane) in block.chunks_exact(16).take(4).enumerate() {
        let mut bytes = [0; 16];
        bytes.copy_from_slice(lane);
        let v = u8x16::new(bytes);
        let s = v.simd_eq(quote) | v.max(control).simd_eq(control);
        stop |= u64::from(s.to_bitmask()) << (16 * k);
        escapes |= u64::from(v.simd_eq(backslash).to_bitmask()) << (16 * k);
    }
    (stop, escapes)
}

/// [`string_end`] one special byte at a time: the reference.
#[cfg(test)]
fn string_end_bytewise(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start;
    let mut escaped = false;
    loop {
        match *b.get(i)? {
            b'"' => return Some((i, escaped)),
            b'\\' => {
                escaped = true;
                i = escape_end(b, i)?;
            }
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
}

struct Parser<'a, 's, S> {
    b: &'a [u8],
    text: &'a str,
    pos: usize,
    /// Open objects and arrays: the walk recurses, so nesting is capped.
    depth: usize,
    /// The path of the field being walked (its first `nkeys` entries).
    keys: [&'a str; MAX_PATH],
    nkeys: usize,
    sink: &'s mut S,
}

/// Deepest nesting walked (serde_json, which takes over beyond it, stops at 128).
const MAX_DEPTH: usize = 64;

/// Longest integer taken without doubt (i64 and u64 have 19 and 20 digits).
const MAX_INT_DIGITS: usize = 18;

impl<'a, S: Sink<'a>> Parser<'a, '_, S> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// A string; returns its raw content (between the quotes) when it has no escapes.
    fn string(&mut self) -> Option<Option<&'a str>> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.pos + 1;
        let (end, escaped) = string_end(self.b, start)?;
        self.pos = end + 1;
        Some((!escaped).then(|| self.text.get(start..end)).flatten())
    }

    /// A number: an optional minus, digits, an optional fraction; no exponent (left to serde).
    fn number(&mut self, integer: bool) -> bool {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let n = self.pos - digits;
        if n == 0 || (n > 1 && self.b[digits] == b'0') {
            return false;
        }
        if self.peek() == Some(b'.') {
            if integer {
                return false;
            }
            self.pos += 1;
            let frac = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == frac {
                return false;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            return false;
        }
        !integer || self.pos - start <= MAX_INT_DIGITS
    }

    /// Any JSON value.
    fn skip(&mut self) -> bool {
        self.ws();
        match self.peek() {
            Some(b'"') => self.string().is_some(),
            Some(b'{') => self.object(&mut |p, _| p.skip()),
            Some(b'[') => self.array(&mut |p| p.skip()),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => self.number(false),
            None => false,
        }
    }

    /// Runs `f` one level deeper; "not sure" past [`MAX_DEPTH`].
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> bool) -> bool {
        if self.depth >= MAX_DEPTH {
            return false;
        }
        self.depth += 1;
        let ok = f(self);
        self.depth -= 1;
        ok
    }

    /// An object; `member` validates the value of each key (it is positioned before the value).
    fn object(&mut self, member: &mut dyn FnMut(&mut Self, Option<&'a str>) -> bool) -> bool {
        self.nested(|p| p.object_members(member))
    }

    fn object_members(
        &mut self,
        member: &mut dyn FnMut(&mut Self, Option<&'a str>) -> bool,
    ) -> bool {
        if !self.eat(b'{') {
            return false;
        }
        if self.eat(b'}') {
            return true;
        }
        loop {
            self.ws();
            let Some(key) = self.string() else {
                return false;
            };
            if !self.eat(b':') {
                return false;
            }
            self.ws();
            if !member(self, key) {
                return false;
            }
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}');
        }
    }

    fn array(&mut self, item: &mut dyn FnMut(&mut Self) -> bool) -> bool {
        self.nested(|p| p.array_items(item))
    }

    fn array_items(&mut self, item: &mut dyn FnMut(&mut Self) -> bool) -> bool {
        if !self.eat(b'[') {
            return false;
        }
        if self.eat(b']') {
            return true;
        }
        loop {
            self.ws();
            if !item(self) {
                return false;
            }
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']');
        }
    }

    /// An object with `fields` (unknown keys are accepted, as Zod strips them); `tag` is the
    /// union discriminator and the variant it names: every occurrence must name it.
    fn fields(&mut self, fields: &[Field], tag: Option<(&str, &str)>) -> bool {
        // Required fields seen, as a bit set (schemas here have far fewer than 64 fields).
        if fields.len() > 64 {
            return false;
        }
        let mut seen: u64 = 0;
        let ok = self.object(&mut |p, key| {
            let Some(key) = key else {
                return false; // an escaped key: let the slow way decide
            };
            if let Some((tag, variant)) = tag
                && key == tag
            {
                return p.string() == Some(Some(variant));
            }
            let field = fields.iter().position(|f| f.name == key);
            if p.nkeys >= MAX_PATH {
                return match field {
                    Some(i) => {
                        seen |= 1 << i;
                        p.value(&fields[i].ty)
                    }
                    None => p.skip(),
                };
            }
            p.keys[p.nkeys] = key;
            p.nkeys += 1;
            p.sink.open(&p.keys[..p.nkeys]);
            let start = p.pos;
            let ok = match field {
                Some(i) => {
                    seen |= 1 << i;
                    p.value(&fields[i].ty)
                }
                None => p.skip(),
            };
            if ok {
                let raw = &p.text[start..p.pos];
                p.sink.field(&p.keys[..p.nkeys], raw, field.is_some());
            }
            p.nkeys -= 1;
            ok
        });
        ok && fields
            .iter()
            .enumerate()
            .all(|(i, f)| !f.required || seen & (1 << i) != 0)
    }

    fn value(&mut self, ty: &Ty) -> bool {
        self.ws();
        match ty {
            Ty::Any => self.skip(),
            Ty::Str => self.string().is_some(),
            Ty::Num => self.number(false),
            Ty::Int => self.number(true),
            Ty::Bool => self.literal(b"true") || self.literal(b"false"),
            Ty::Nullable(inner) => {
                if self.peek() == Some(b'n') {
                    self.literal(b"null")
                } else {
                    self.value(inner)
                }
            }
            Ty::Record(inner) => self.object(&mut |p, _| p.value(inner)),
            Ty::Array(inner) => self.array(&mut |p| p.value(inner)),
            Ty::Obj(fields) => self.fields(fields, None),
            Ty::Union(u) => {
                // Find the discriminator first (it need not be the first key).
                let Some((s, e)) = locate(&self.text[self.pos..], &[Seg::Key(u.tag)]) else {
                    return false;
                };
                let raw = &self.text[self.pos + s..self.pos + e];
                let Some(name) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
                    return false;
                };
                let Some((variant, fields)) = u.variants.iter().find(|(n, _)| *n == name) else {
                    return false;
                };
                self.sink.variant(&self.keys[..self.nkeys], variant, raw);
                self.fields(fields, Some((u.tag, name)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{MESSAGE, PART, validate};
    use super::*;
    use serde_json::Value;

    /// `conforms` may say "no" to a valid payload, never "yes" to an invalid one.
    fn agrees(text: &str, ty: &Ty) {
        let fast = conforms(text, ty);
        let slow = serde_json::from_str::<Value>(text)
            .map(|v| validate(&v, ty).is_empty())
            .unwrap_or(false);
        assert!(!fast || slow, "conforms said yes to {text}");
    }

    #[test]
    fn accepts_what_conforms() {
        let part = Ty::Union(&PART);
        for text in [
            r#"{"type":"step-start"}"#,
            r#"{"id":"x","type":"text","text":"a \"quoted\" \u00e9 word","time":{"start":1,"end":2.5}}"#,
            r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed","input":{"a":[1,{"b":null}]},"output":"o","title":"t","metadata":{},"time":{"start":1,"end":2}}}"#,
            r#" { "state" : { "input" : { } , "raw" : "" , "status" : "pending" } , "type" : "tool" , "callID" : "c" , "tool" : "t" } "#,
            r#"{"type":"step-finish","reason":"stop","cost":0,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}"#,
        ] {
            assert!(conforms(text, &part), "{text}");
            agrees(text, &part);
        }
        let msg = r#"{"role":"user","time":{"created":1},"agent":"build","model":{"providerID":"a","modelID":"b"}}"#;
        assert!(conforms(msg, &Ty::Union(&MESSAGE)));
    }

    #[test]
    fn mutations_never_make_it_say_yes_wrongly() {
        let part = Ty::Union(&PART);
        let seeds = [
            r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed","input":{"a":1},"output":"o","title":"t","metadata":{},"time":{"start":1,"end":2}}}"#,
            r#"{"type":"step-finish","reason":"stop","cost":0.5,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}"#,
            r#"{"type":"reasoning","text":"x","time":{"start":1}}"#,
        ];
        let inserts = [
            "\"",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "1",
            "-",
            ".",
            "e",
            "n",
            "\\",
            " ",
            "\"type\":\"text\",",
        ];
        for seed in seeds {
            for i in 0..=seed.len() {
                if !seed.is_char_boundary(i) {
                    continue;
                }
                let deleted = format!("{}{}", &seed[..i], &seed[(i + 1).min(seed.len())..]);
                agrees(&deleted, &part);
                for ins in inserts {
                    agrees(&format!("{}{ins}{}", &seed[..i], &seed[i..]), &part);
                }
            }
        }
    }

    #[test]
    fn special_finds_the_first_quote_backslash_or_control_byte() {
        let naive = |b: &[u8], i: usize| {
            (i..b.len()).find(|&k| b[k] == b'"' || b[k] == b'\\' || b[k] < 0x20)
        };
        let alphabet: &[u8] = b"a\"\\\x00\x1f\x20\x7f\x80\xa0\xe9\xff!";
        // Every string of up to 2 interesting bytes, in every position of a buffer of up to 35
        // bytes (vector, word and byte steps).
        for len in 0..=35 {
            for pos in 0..len.max(1) {
                for &c in alphabet {
                    for &d in alphabet {
                        let mut buf = vec![b'x'; len];
                        if pos < len {
                            buf[pos] = c;
                        }
                        if pos + 1 < len {
                            buf[pos + 1] = d;
                        }
                        for start in 0..=len {
                            assert_eq!(special(&buf, start), naive(&buf, start), "{buf:?} {start}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_block_string_reader_agrees_with_the_bytewise_one() {
        // Escapes whole and cut, surrogates, control bytes, multi-byte characters.
        const PIECES: &[&[u8]] = &[
            b"\"",
            b"\\",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\u00e9",
            b"\\uD83D",
            b"\\ud8",
            b"\\u12",
            b"\\x",
            b"\\/",
            b"\x01",
            b"\x1f",
            b"\t",
            b"\xc3\xa9",
            b" ",
            b"\x7f",
        ];
        let mut next = crate::text::xorshift(0x2545_F491_4F6C_DD1D);
        for round in 0..30_000 {
            let len = next(if round % 10 == 0 { 400 } else { 140 });
            let mut bytes = b"\"".to_vec();
            let dense = round % 3 == 0;
            while bytes.len() < len {
                if dense || next(12) == 0 {
                    bytes.extend_from_slice(PIECES[next(PIECES.len())]);
                } else {
                    bytes.push(b'a' + next(26) as u8);
                }
            }
            for start in 1..bytes.len().min(70) {
                assert_eq!(
                    string_end(&bytes, start),
                    string_end_bytewise(&bytes, start),
                    "{:?} from {start}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    #[test]
    fn escaped_bytes_are_found_a_block_at_a_time() {
        // Byte by byte: a backslash not itself escaped escapes the byte after it (only bytes
        // other than backslashes are asked for).
        fn reference(backslash: u64, carry_in: u64) -> (u64, u64) {
            let (mut escaped, mut pending) = (0, carry_in == 1);
            for bit in 0..64 {
                if pending {
                    escaped |= 1 << bit;
                    pending = false;
                } else if backslash >> bit & 1 == 1 {
                    pending = true;
                }
            }
            (escaped & !backslash, u64::from(pending))
        }
        let mut next = crate::text::xorshift(0x9E37_79B9_7F4A_7C15);
        for round in 0..20_000 {
            // Sparse, dense and long runs of backslashes.
            let mut mask = 0u64;
            for _ in 0..next(if round % 2 == 0 { 8 } else { 40 }) {
                let run = next(if round % 5 == 0 { 64 } else { 6 }) + 1;
                mask |= (u64::MAX >> (64 - run.min(64))) << next(64);
            }
            for carry_in in [0, 1] {
                let mut carry = carry_in;
                let escaped = escaped_by(mask, &mut carry);
                assert_eq!(
                    (escaped, carry),
                    reference(mask, carry_in),
                    "{mask:064b} carry {carry_in}"
                );
            }
        }
        for mask in [0, u64::MAX, 1, 1 << 63, 0x5555_5555_5555_5555, !1] {
            for carry_in in [0, 1] {
                let mut carry = carry_in;
                assert_eq!(
                    (escaped_by(mask, &mut carry), carry),
                    reference(mask, carry_in)
                );
            }
        }
    }

    #[test]
    fn deep_nesting_is_left_to_the_slow_way() {
        let deep = format!(
            r#"{{"type":"tool","tool":"b","callID":"c","state":{{"status":"pending","input":{{"a":{}1{}}},"raw":""}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(!conforms(&deep, &Ty::Union(&PART)));
        let shallow = deep
            .replace(&"[".repeat(100_000), "[[")
            .replace(&"]".repeat(100_000), "]]");
        assert!(conforms(&shallow, &Ty::Union(&PART)));
    }

    #[test]
    fn a_second_tag_must_name_the_same_variant() {
        let text = r#"{"type":"step-start","type":"text"}"#;
        assert!(!conforms(text, &Ty::Union(&PART)));
        agrees(text, &Ty::Union(&PART));
    }

    #[test]
    fn never_accepts_what_does_not() {
        let part = Ty::Union(&PART);
        for text in [
            r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"failed","input":{},"error":"x","time":{"start":1,"end":2}}}"#,
            r#"{"type":"step-finish","reason":"stop","cost":"0.1","tokens":{}}"#,
            r#"{"type":"text"}"#,
            r#"{"type":"text","text":5}"#,
            r#"{"type":"thinking","text":"x"}"#,
            r#"{"type":"text","text":"x"} trailing"#,
            r#"{"type":"text","text":"x""#,
            r#"{"type":"text","text":"a	tab"}"#,
            r#"{"type":"text","text":"x","time":{"start":1e400}}"#,
            r#"{"type":"text","text":"x","time":{"start":01}}"#,
            r#"{"type":"tool","tool":"b","callID":"c","state":{"status":"pending","input":[],"raw":""}}"#,
            r#"[]"#,
            "",
        ] {
            assert!(!conforms(text, &part), "{text}");
            agrees(text, &part);
        }
    }
}
