//! Byte-level JSON scanning without a full parse.
//!
//! Two tools live here:
//! * [`Depth`], a tiny lexer that follows string/escape state and bracket depth, so that a JSON
//!   value spread over several physical lines (pretty-printed, or cut by a 64 KiB pipe split in the
//!   middle of a string) can be re-joined: a newline met *inside a string* is an artifact and is
//!   dropped, one met outside is whitespace and is kept.
//! * [`locate`], which finds the byte range of the value at a path (`["part", "state", "status"]`)
//!   in JSON text, so a diagnostic can point at `"failed"` rather than at a whole 200-line object.

/// Lexer state carried across chunks of one JSON value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Depth {
    depth: u32,
    in_string: bool,
    escape: bool,
}

/// What happened while feeding a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fed {
    /// The value is still open after the whole chunk.
    Open,
    /// The value closed; the index is one past its closing bracket.
    Closed(usize),
}

impl Depth {
    pub fn in_string(&self) -> bool {
        self.in_string
    }

    /// Feeds bytes of a value that started with `{` or `[` (the opening bracket must be fed too).
    ///
    /// The bytes are read 64 at a time: one pass classifies a block into bit masks of quotes,
    /// backslashes and brackets ([`Masks`]), the escapes and the string state follow from the
    /// masks with a few word operations, and only brackets outside strings are looked at one by
    /// one. A block with a backslash outside a string (not JSON, but a log holds anything) is
    /// read byte by byte instead, exactly as before; both ways agree on every input (tested
    /// against [`Depth::feed_bytewise`]).
    pub fn feed(&mut self, bytes: &[u8]) -> Fed {
        let mut at = 0;
        let mut blocks = bytes.chunks_exact(64);
        for block in &mut blocks {
            if let Some(k) = self.read(&Masks::of(block), block) {
                return Fed::Closed(at + k);
            }
            at += 64;
        }
        let rest = blocks.remainder();
        if !rest.is_empty()
            && let Some(k) = self.read(&Masks::at(bytes, at, rest.len()), rest)
        {
            return Fed::Closed(at + k);
        }
        Fed::Open
    }

    /// Reads one block from its masks, or byte by byte where they cannot tell: where in it the
    /// value closes, if it does.
    #[inline(always)]
    fn read(&mut self, masks: &Masks, block: &[u8]) -> Option<usize> {
        match self.block(masks, block) {
            Some(closed) => closed,
            None => match self.feed_bytewise(block) {
                Fed::Open => None,
                Fed::Closed(k) => Some(k),
            },
        }
    }

    /// Reads one block (1 to 64 bytes) from its masks: `Some(Some(k))` when the value closes
    /// `k` bytes into it, `Some(None)` when it stays open, `None` (nothing changed) when a
    /// backslash lies outside a string, which the masks cannot tell apart from an escape.
    fn block(&mut self, m: &Masks, block: &[u8]) -> Option<Option<usize>> {
        let len = block.len();
        // The escaped bytes: each backslash not escaped itself escapes the byte after it.
        let mut escaped: u64 = u64::from(self.escape);
        let mut escape_out = false;
        let mut backslashes = m.backslash;
        while backslashes != 0 {
            let p = backslashes.trailing_zeros();
            let bit = 1u64 << p;
            if escaped & bit == 0 {
                if p as usize + 1 >= len {
                    escape_out = true;
                } else {
                    escaped |= bit << 1;
                }
            }
            backslashes &= backslashes - 1;
        }
        // Inside a string after each byte: the running parity of the unescaped quotes.
        let mut inside = m.quote & !escaped;
        for shift in [1, 2, 4, 8, 16, 32] {
            inside ^= inside << shift;
        }
        if self.in_string {
            inside = !inside;
        }
        let before = (inside << 1) | u64::from(self.in_string);
        if m.backslash & !before != 0 {
            return None;
        }
        // Brackets are few (a handful per record): each is looked at.
        let mut brackets = m.bracket & !inside;
        while brackets != 0 {
            let p = brackets.trailing_zeros();
            // `[` | 0x20 is `{`, and `]` | 0x20 is `}`.
            if block.get(p as usize).is_some_and(|&c| c | 0x20 == b'{') {
                self.depth += 1;
            } else {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.in_string = false;
                    self.escape = false;
                    return Some(Some(p as usize + 1));
                }
            }
            brackets &= brackets - 1;
        }
        self.in_string = inside >> (len - 1) & 1 == 1;
        self.escape = escape_out;
        Some(None)
    }

    /// [`Depth::feed`] one byte at a time: the fallback for a block the masks cannot read, and
    /// the reference the block reading is tested against.
    fn feed_bytewise(&mut self, bytes: &[u8]) -> Fed {
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                // Skip ahead to the next byte that can change string state.
                match quote_or_backslash(bytes, i) {
                    None => return Fed::Open,
                    Some(k) => {
                        i = k;
                        if bytes[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match bytes[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Fed::Closed(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Fed::Open
    }
}

/// Where a block of up to 64 bytes holds each byte [`Depth`] reads: bit `i` of a mask is byte
/// `i` of the block. Bytes past the block's end are in no mask.
struct Masks {
    quote: u64,
    backslash: u64,
    /// `{`, `[`, `}` and `]`.
    bracket: u64,
}

impl Masks {
    /// The masks of the `len` (1 to 64) bytes of `bytes` from `start`. A block shorter than 64
    /// bytes at the end of a longer input is read as the input's last 64 bytes, the masks then
    /// shifted to start at `start`; only an input shorter than 64 bytes is copied.
    fn at(bytes: &[u8], start: usize, len: usize) -> Masks {
        if len < 64
            && start + len == bytes.len()
            && let Some(last) = bytes.len().checked_sub(64)
            && let Some(tail) = bytes.get(last..)
        {
            let shift = 64 - len;
            let m = Masks::of(tail);
            return Masks {
                quote: m.quote >> shift,
                backslash: m.backslash >> shift,
                bracket: m.bracket >> shift,
            };
        }
        Masks::of(bytes.get(start..start + len).unwrap_or_default())
    }

    /// Sixteen bytes at a time, with the processor's vector instructions where it has them
    /// (SSE2 on every x86-64, NEON on AArch64).
    fn of(block: &[u8]) -> Masks {
        use wide::u8x16;
        // Set up only for an input shorter than a block.
        let mut padded;
        let full: &[u8] = match block.get(..64) {
            Some(full) => full,
            None => {
                padded = [b' '; 64];
                padded[..block.len()].copy_from_slice(block);
                &padded
            }
        };
        let (quote, backslash) = (u8x16::splat(b'"'), u8x16::splat(b'\\'));
        // `[` and `{` differ only in bit 0x20, as do `]` and `}`, and no other byte sets it to
        // either.
        let (open, close, case) = (u8x16::splat(b'{'), u8x16::splat(b'}'), u8x16::splat(0x20));
        let mut m = Masks {
            quote: 0,
            backslash: 0,
            bracket: 0,
        };
        for (k, lane) in full.chunks_exact(16).enumerate() {
            let mut bytes = [0; 16];
            bytes.copy_from_slice(lane);
            let v = u8x16::new(bytes);
            let folded = v | case;
            let bits = |eq: u8x16| u64::from(eq.to_bitmask()) << (16 * k);
            m.quote |= bits(v.simd_eq(quote));
            m.backslash |= bits(v.simd_eq(backslash));
            m.bracket |= bits(folded.simd_eq(open) | folded.simd_eq(close));
        }
        m
    }
}

/// The index of the first `"` or `\\` at or after `i`. Most strings of a log are short (keys,
/// ids, names): their first 64 bytes are looked at sixteen at a time with the processor's vector
/// instructions, where a call to `memchr2` would cost more than the string; a longer one is
/// left to `memchr2`, and the last bytes before `b`'s end (less than sixteen) are looked at one
/// by one.
fn quote_or_backslash(b: &[u8], start: usize) -> Option<usize> {
    use wide::u8x16;
    let mut i = start;
    while i < start + 64 {
        let Some(lane) = b.get(i..i + 16) else {
            let rest = b.get(i..)?;
            return rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\')
                .map(|k| i + k);
        };
        let mut bytes = [0; 16];
        bytes.copy_from_slice(lane);
        let v = u8x16::new(bytes);
        let hits = (v.simd_eq(u8x16::splat(b'"')) | v.simd_eq(u8x16::splat(b'\\'))).to_bitmask();
        if hits != 0 {
            return Some(i + hits.trailing_zeros() as usize);
        }
        i += 16;
    }
    memchr::memchr2(b'"', b'\\', b.get(i..)?).map(|k| i + k)
}

/// One step of a path into a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

impl<'a> From<&'a str> for Seg<'a> {
    fn from(key: &'a str) -> Self {
        Seg::Key(key)
    }
}

impl From<usize> for Seg<'_> {
    fn from(i: usize) -> Self {
        Seg::Index(i)
    }
}

/// Byte range `(start, end)` in `text` of the value found at `path`, or `None`.
///
/// Keys are compared with their raw (still escaped) text, which is exact for the ASCII keys rewind
/// looks up. The text must be valid JSON up to the value; on anything unexpected the answer is
/// `None`, never a panic.
pub fn locate(text: &str, path: &[Seg<'_>]) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    for seg in path {
        match (seg, b.get(pos)?) {
            (Seg::Key(key), b'{') => {
                pos = skip_ws(b, pos + 1);
                loop {
                    if *b.get(pos)? == b'}' {
                        return None;
                    }
                    let (ks, ke) = string_range(b, pos)?;
                    let found = &text[ks + 1..ke - 1] == *key;
                    pos = skip_ws(b, ke);
                    if *b.get(pos)? != b':' {
                        return None;
                    }
                    pos = skip_ws(b, pos + 1);
                    if found {
                        break;
                    }
                    pos = skip_ws(b, value_end(b, pos)?);
                    match *b.get(pos)? {
                        b',' => pos = skip_ws(b, pos + 1),
                        _ => return None,
                    }
                }
            }
            (Seg::Index(want), b'[') => {
                pos = skip_ws(b, pos + 1);
                let mut i = 0;
                loop {
                    if *b.get(pos)? == b']' {
                        return None;
                    }
                    if i == *want {
                        break;
                    }
                    pos = skip_ws(b, value_end(b, pos)?);
                    match *b.get(pos)? {
                        b',' => pos = skip_ws(b, pos + 1),
                        _ => return None,
                    }
                    i += 1;
                }
            }
            _ => return None,
        }
    }
    Some((pos, value_end(b, pos)?))
}

/// [`locate`], with `path` followed from the value at `from` (a byte range of `text`, as
/// [`locate`] or [`array_items`] give it) rather than from the top. Finding something in each
/// item of a long array this way walks each item once; a path with the item's index walks every
/// item before it again, for each item.
pub fn locate_from(text: &str, from: (usize, usize), path: &[Seg<'_>]) -> Option<(usize, usize)> {
    let (s, e) = locate(text.get(from.0..from.1)?, path)?;
    Some((from.0 + s, from.0 + e))
}

/// Locates many paths in one text, keeping the items of each array a path went through: paths
/// through the items of one long array (an issue per item) then cost a walk of the array once,
/// not a walk of the items before each. What it finds is what [`locate`] finds in a text that is
/// JSON.
pub struct Locator<'t> {
    text: &'t str,
    /// The items of each array met, by the path to it (written out).
    arrays: std::collections::HashMap<String, Option<Vec<(usize, usize)>>>,
}

impl<'t> Locator<'t> {
    pub fn new(text: &'t str) -> Self {
        Self {
            text,
            arrays: std::collections::HashMap::new(),
        }
    }

    /// Byte range in the text of the value at `path` (see [`locate`]).
    pub fn locate(&mut self, path: &[Seg<'_>]) -> Option<(usize, usize)> {
        let Some(j) = path.iter().rposition(|s| matches!(s, Seg::Index(_))) else {
            return locate(self.text, path);
        };
        let Seg::Index(k) = path[j] else {
            return None;
        };
        let key = format!("{:?}", &path[..j]);
        let items = match self.arrays.get(&key) {
            Some(items) => items.as_ref(),
            None => {
                let items = self
                    .locate(&path[..j])
                    .and_then(|array| array_items_from(self.text, array, &[]));
                self.arrays.entry(key).or_insert(items).as_ref()
            }
        };
        let item = *items?.get(k)?;
        locate_from(self.text, item, &path[j + 1..])
    }
}

/// Byte ranges of the items of the array at `path` (one pass over the array), or `None` when
/// there is no array there.
pub fn array_items(text: &str, path: &[Seg<'_>]) -> Option<Vec<(usize, usize)>> {
    array_items_from(text, (0, text.len()), path)
}

/// [`array_items`] of the array at `path` from the value at `from` (see [`locate_from`]).
pub fn array_items_from(
    text: &str,
    from: (usize, usize),
    path: &[Seg<'_>],
) -> Option<Vec<(usize, usize)>> {
    let (start, _) = locate_from(text, from, path)?;
    let b = text.as_bytes();
    if *b.get(start)? != b'[' {
        return None;
    }
    let mut out = Vec::new();
    let mut pos = skip_ws(b, start + 1);
    if *b.get(pos)? == b']' {
        return Some(out);
    }
    loop {
        let end = value_end(b, pos)?;
        out.push((pos, end));
        pos = skip_ws(b, end);
        match *b.get(pos)? {
            b',' => pos = skip_ws(b, pos + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// Re-indents JSON text (two spaces per level), keeping every key, value and escape exactly as
/// written and the keys in their stored order. Text that is not JSON comes back unchanged.
pub fn pretty(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut depth = 0usize;
    let mut i = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                let Some((s, e)) = string_range(b, i) else {
                    return text.to_owned();
                };
                out.push_str(&text[s..e]);
                i = e;
                continue;
            }
            b'{' | b'[' => {
                let close = if b[i] == b'{' { b'}' } else { b']' };
                let next = skip_ws(b, i + 1);
                if b.get(next) == Some(&close) {
                    out.push(b[i] as char);
                    out.push(close as char);
                    i = next + 1;
                    continue;
                }
                out.push(b[i] as char);
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b[i] as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => {
                // A number, literal or anything else: copy up to the next structural byte.
                let start = i;
                while i < b.len()
                    && !matches!(
                        b[i],
                        b'"' | b'{'
                            | b'['
                            | b'}'
                            | b']'
                            | b','
                            | b':'
                            | b' '
                            | b'\t'
                            | b'\n'
                            | b'\r'
                    )
                {
                    i += 1;
                }
                out.push_str(&text[start..i]);
                continue;
            }
        }
        i += 1;
    }
    out
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// Range of the string starting at `pos` (quotes included). A backslash escapes the byte after
/// it, whatever it is; the bytes between are skipped with [`quote_or_backslash`] (an id or a key
/// takes a few word compares, not a step per byte).
fn string_range(b: &[u8], pos: usize) -> Option<(usize, usize)> {
    if *b.get(pos)? != b'"' {
        return None;
    }
    let mut i = pos + 1;
    loop {
        i = quote_or_backslash(b, i)?;
        match b.get(i)? {
            b'\\' => i += 2,
            _ => return Some((pos, i + 1)),
        }
    }
}

/// [`string_range`] one byte at a time: the reference.
#[cfg(test)]
fn string_range_bytewise(b: &[u8], pos: usize) -> Option<(usize, usize)> {
    if *b.get(pos)? != b'"' {
        return None;
    }
    let mut i = pos + 1;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some((pos, i + 1)),
            _ => i += 1,
        }
    }
}

/// One past the end of the value starting at `pos`.
fn value_end(b: &[u8], pos: usize) -> Option<usize> {
    match *b.get(pos)? {
        b'"' => string_range(b, pos).map(|(_, e)| e),
        b'{' | b'[' => {
            let mut d = Depth::default();
            match d.feed(&b[pos..]) {
                Fed::Closed(n) => Some(pos + n),
                Fed::Open => None,
            }
        }
        _ => {
            let mut i = pos;
            while let Some(c) = b.get(i) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings end where reading them byte by byte ends them: random strings dense in quotes and
    /// backslashes, long and short, with and without an end, read from every start.
    #[test]
    fn strings_end_where_the_bytewise_reading_ends_them() {
        const ALPHABET: &[u8] = b"\"\\\\ab\n\xc3\xa9 ";
        let mut next = crate::text::xorshift(0x2545_F491_4F6C_DD1D);
        let mut ended = 0;
        for round in 0..5_000 {
            let len = next(if round % 10 == 0 { 300 } else { 60 });
            let dense = round % 3 == 0;
            let mut bytes = vec![b'"'];
            for _ in 0..len {
                let plain = !dense && next(6) != 0;
                bytes.push(if plain {
                    b'x'
                } else {
                    ALPHABET[next(ALPHABET.len())]
                });
            }
            for pos in 0..bytes.len() {
                let fast = string_range(&bytes, pos);
                assert_eq!(
                    fast,
                    string_range_bytewise(&bytes, pos),
                    "{bytes:?} at {pos}"
                );
                ended += usize::from(fast.is_some());
            }
        }
        assert!(ended > 5_000, "{ended}");
    }

    /// Reading 64 bytes at a time from masks finds what reading byte by byte finds: the same
    /// end and the same state after every piece, for inputs dense in quotes, backslashes and
    /// brackets (in and out of strings), cut into pieces at every kind of place.
    #[test]
    fn the_block_lexer_agrees_with_the_bytewise_one() {
        const ALPHABET: &[u8] = b"{}[]\"\"\\\\ab:,0\n\xc3\xa9 ";
        let mut next = crate::text::xorshift(0x9E37_79B9_7F4A_7C15);
        for round in 0..20_000 {
            let len = 1 + next(if round % 10 == 0 { 700 } else { 150 });
            let mut bytes = vec![b'{'];
            // Mostly plain text with the special bytes sprinkled in, or dense in them.
            let dense = round % 3 == 0;
            for _ in 0..len {
                if dense || next(8) == 0 {
                    bytes.push(ALPHABET[next(ALPHABET.len())]);
                } else {
                    bytes.push(b'a' + next(26) as u8);
                }
            }
            let (mut fast, mut slow) = (Depth::default(), Depth::default());
            let mut at = 0;
            while at < bytes.len() {
                let end = (at + 1 + next(130)).min(bytes.len());
                let piece = &bytes[at..end];
                let (f, s) = (fast.feed(piece), slow.feed_bytewise(piece));
                assert_eq!(f, s, "{:?} at {at}", String::from_utf8_lossy(&bytes));
                if f != Fed::Open {
                    break;
                }
                assert_eq!(fast, slow, "{:?} at {at}", String::from_utf8_lossy(&bytes));
                at = end;
            }
        }
    }

    /// Locating inside an item found by `array_items` finds what a path with the item's index
    /// finds, for items of every kind, spaced or not, at the top and nested.
    #[test]
    fn locate_from_an_item_is_locate_with_its_index() {
        let texts = [
            r#"{"a":[{"k":1,"t":"x"}, 7 ,"s",[1,[2]],{"k":{"t":[3]}},true,null,-1.5e3]}"#,
            r#"{ "z": 0, "a" : [ { "t" : "é" } , { "k" : [ 1 , 2 ] } ] , "a": [] }"#,
            r#"{"a":[]}"#,
            r#"{"a":{"b":[{"t":1},{"t":2}]}}"#,
        ];
        let rests: [&[Seg<'_>]; 4] = [&[], &[Seg::Key("k")], &[Seg::Key("t")], &[Seg::Index(1)]];
        for text in texts {
            for path in [&[Seg::Key("a")][..], &[Seg::Key("a"), Seg::Key("b")]] {
                let items = array_items(text, path).unwrap_or_default();
                for k in 0..items.len() + 1 {
                    for rest in rests {
                        let mut full = path.to_vec();
                        full.push(Seg::Index(k));
                        full.extend_from_slice(rest);
                        let from = items.get(k).and_then(|&i| locate_from(text, i, rest));
                        assert_eq!(from, locate(text, &full), "{text} {full:?}");
                    }
                }
                let nested = array_items_from(text, (0, text.len()), path);
                assert_eq!(nested, array_items(text, path));
            }
        }
    }

    /// A locator finds what `locate` finds, for paths through several arrays, asked in any
    /// order and again.
    #[test]
    fn a_locator_finds_what_locate_finds() {
        let text = r#"{"a":[[1,{"k":[5,6]}], {"k":[{"t":"x"},7]}, 3],"b":{"c":[0,[1,2]]}}"#;
        let keys = [
            Seg::Key("a"),
            Seg::Key("b"),
            Seg::Key("c"),
            Seg::Key("k"),
            Seg::Key("t"),
        ];
        let mut paths: Vec<Vec<Seg<'_>>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<Seg<'_>>> = (paths.iter())
                .flat_map(|p| {
                    (keys.iter().copied().chain((0..4).map(Seg::Index))).map(move |s| {
                        let mut q = p.clone();
                        q.push(s);
                        q
                    })
                })
                .collect();
            paths.extend(longer);
        }
        let mut locator = Locator::new(text);
        for path in paths.iter().chain(paths.iter().rev()) {
            assert_eq!(locator.locate(path), locate(text, path), "{path:?}");
        }
    }

    #[test]
    fn quote_or_backslash_finds_the_first_one() {
        // Every position of a `"` or `\\` (or none) in texts of every length up to 100 (past
        // the lanes, into `memchr2`), from every start.
        for len in 0..100 {
            for at in 0..=len {
                for c in [b'"', b'\\', b'x'] {
                    let mut text = vec![b'a'; len];
                    if at < len {
                        text[at] = c;
                    }
                    // A byte one off from a quote, next to it.
                    if at + 1 < len {
                        text[at + 1] = b'#';
                    }
                    for start in 0..=len {
                        let naive = text[start..]
                            .iter()
                            .position(|&b| b == b'"' || b == b'\\')
                            .map(|k| start + k);
                        assert_eq!(
                            quote_or_backslash(&text, start),
                            naive,
                            "{len} {at} {start}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pretty_keeps_order_and_escapes() {
        let raw =
            r#"{"type":"tool","state":{"status":"error","input":{},"list":[1,"a\"b"]},"x":[]}"#;
        let p = pretty(raw);
        assert_eq!(
            p,
            "{\n  \"type\": \"tool\",\n  \"state\": {\n    \"status\": \"error\",\n    \"input\": {},\n    \"list\": [\n      1,\n      \"a\\\"b\"\n    ]\n  },\n  \"x\": []\n}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&p).ok(),
            serde_json::from_str::<serde_json::Value>(raw).ok()
        );
        assert_eq!(pretty("not json \"open"), "not json \"open");
    }

    #[test]
    fn array_items_in_one_pass() {
        let text = r#"{"messages": [ {"a": [1, 2]}, "x" , 3 ], "n": []}"#;
        let items = array_items(text, &["messages".into()]).unwrap();
        let got: Vec<&str> = items.iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(got, [r#"{"a": [1, 2]}"#, "\"x\"", "3"]);
        assert_eq!(array_items(text, &["n".into()]), Some(vec![]));
        assert_eq!(array_items(text, &["missing".into()]), None);
    }

    #[test]
    fn depth_tracks_strings_and_escapes() {
        let mut d = Depth::default();
        assert_eq!(d.feed(br#"{"a": "x}\"{"#), Fed::Open);
        assert!(d.in_string());
        assert_eq!(d.feed(br#"", "b": [1, {"c": "]"}]}"#), Fed::Closed(24));
    }

    #[test]
    fn escape_state_survives_a_chunk_boundary() {
        // The chunk ends right after a backslash: the next quote is escaped, not a terminator.
        let mut d = Depth::default();
        assert_eq!(d.feed(br#"{"a": "x\"#), Fed::Open);
        assert_eq!(d.feed(br#""}"#), Fed::Open);
        assert!(d.in_string());
        assert_eq!(d.feed(br#""}"#), Fed::Closed(2));
    }

    #[test]
    fn locate_finds_nested_values() {
        let text = r#"{
  "type": "tool_use",
  "part": {"id": "prt_1", "state": {"status": "running", "input": {}}},
  "list": [1, "two", {"k": null}]
}"#;
        let at = |path: &[Seg<'_>]| locate(text, path).map(|(s, e)| &text[s..e]);
        assert_eq!(at(&["type".into()]), Some("\"tool_use\""));
        assert_eq!(
            at(&["part".into(), "state".into(), "status".into()]),
            Some("\"running\"")
        );
        assert_eq!(
            at(&["part".into(), "state".into(), "input".into()]),
            Some("{}")
        );
        assert_eq!(at(&["list".into(), 1.into()]), Some("\"two\""));
        assert_eq!(at(&["list".into(), 2.into(), "k".into()]), Some("null"));
        assert_eq!(at(&["missing".into()]), None);
        assert_eq!(at(&["list".into(), 7.into()]), None);
    }

    #[test]
    fn locate_survives_garbage() {
        for text in [
            "",
            "{",
            "{\"a\"",
            "{\"a\":",
            "[1,",
            "{\"a\": \"unterminated",
        ] {
            assert_eq!(locate(text, &["a".into(), "b".into()]), None);
        }
    }
}
