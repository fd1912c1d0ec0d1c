//! The fast path of reading one line: a single pass over the bytes that
//! checks the line is JSON and picks out the fields [`super::scan`] keeps,
//! skipping everything else with `memchr` (most of a line is strings: tool
//! output, usage, bookkeeping). It answers only when sure to agree with
//! the full serde parse; anything it does not expect (a field twice, an
//! escaped or non-ASCII key where fields are looked up, a field of another
//! type, nesting past [`DEPTH`]) is `None`, and the caller parses the line
//! with serde (which then also gives the error of a bad line).
//!
//! Skipped values are checked as serde's own skipping checks them
//! (structure, numbers, escapes, no control characters in strings; no
//! UTF-8 check); fields it reads, and keys where it looks fields up, are
//! checked as serde's string parse checks them (UTF-8, escapes decoded).

use std::borrow::Cow;

use super::scan::{
    AgentIdOf, Block, CompactMeta, Content, ForkedFrom, Line, Message, Preserved, Str,
    SummarizeMeta,
};

/// Nesting skipped at most before giving up (serde allows 128).
const DEPTH: u32 = 64;

/// The fields of `line` (without its line end), or `None`: ask serde.
pub(super) fn line(line: &[u8]) -> Option<Line<'_>> {
    // A control character is no JSON inside a string; most lines have
    // none at all, and then strings need no byte-by-byte check.
    let ctl = line.iter().fold(false, |a, &c| a | (c < 0x20));
    let mut p = P { b: line, i: 0, ctl };
    let mut l = Line::default();
    let mut seen = 0u32;
    p.object(|k, p| {
        let bit = match k {
            b"type" => 0,
            b"uuid" => 1,
            b"parentUuid" => 2,
            b"logicalParentUuid" => 3,
            b"subtype" => 4,
            b"timestamp" => 5,
            b"cwd" => 6,
            b"isMeta" => 7,
            b"isCompactSummary" => 8,
            b"compactMetadata" => 9,
            b"summarizeMetadata" => 10,
            b"message" => 11,
            b"toolUseResult" => 12,
            b"forkedFrom" => 13,
            b"customTitle" => 14,
            _ => return p.skip(0),
        };
        // serde's derive refuses a field given twice.
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => l.ty = p.opt_str()?,
            1 => l.uuid = p.opt_str()?,
            2 => l.parent_uuid = p.opt_str()?,
            3 => l.logical = p.opt_str()?,
            4 => l.subtype = p.opt_str()?,
            5 => l.timestamp = p.opt_str()?,
            6 => l.cwd = p.opt_str()?,
            7 => l.is_meta = p.opt_bool()?,
            8 => l.is_compact_summary = p.opt_bool()?,
            9 => {
                l.compact = p.opt_object(|p| {
                    let mut c = CompactMeta::default();
                    let mut once = false;
                    p.object(|k, p| match k {
                        b"preservedSegment" if !std::mem::replace(&mut once, true) => {
                            c.preserved = p.opt_object(|p| {
                                let mut s = Preserved::default();
                                let mut once = false;
                                p.object(|k, p| match k {
                                    b"tailUuid" if !std::mem::replace(&mut once, true) => {
                                        s.tail = p.opt_str()?;
                                        Some(())
                                    }
                                    b"tailUuid" => None,
                                    _ => p.skip(0),
                                })?;
                                Some(s)
                            })?;
                            Some(())
                        }
                        b"preservedSegment" => None,
                        _ => p.skip(0),
                    })?;
                    Some(c)
                })?
            }
            10 => {
                l.summarize = p.opt_object(|p| {
                    let mut d = None;
                    p.one_field(b"direction", |p| {
                        d = p.opt_str()?;
                        Some(())
                    })?;
                    Some(SummarizeMeta { direction: d })
                })?
            }
            11 => l.message = p.opt_object(message)?,
            12 => l.tool_use_result = tool_use_result(p)?,
            13 => {
                l.forked_from = p.opt_object(|p| {
                    let mut s = None;
                    p.one_field(b"sessionId", |p| {
                        s = p.opt_str()?;
                        Some(())
                    })?;
                    Some(ForkedFrom { session_id: s })
                })?
            }
            _ => l.custom_title = p.opt_str()?,
        }
        Some(())
    })?;
    p.ws();
    (p.i == line.len()).then_some(l)
}

fn message<'a>(p: &mut P<'a>) -> Option<Message<'a>> {
    let mut m = Message::default();
    let mut seen = 0u8;
    p.object(|k, p| {
        match k {
            b"id" if seen & 1 == 0 => {
                seen |= 1;
                m.id = p.opt_str()?;
            }
            b"content" if seen & 2 == 0 => {
                seen |= 2;
                m.content = match p.peek()? {
                    b'n' => {
                        p.lit(b"null")?;
                        None
                    }
                    b'"' => Some(Content::Text(p.string()?)),
                    b'[' => Some(Content::Blocks(blocks(p)?)),
                    // An object or a scalar: serde reads it as "other";
                    // rare enough to leave to it.
                    _ => return None,
                };
            }
            b"id" | b"content" => return None,
            _ => p.skip(0)?,
        }
        Some(())
    })?;
    Some(m)
}

/// `message.content` blocks; an element that is not an object is left to
/// serde.
fn blocks<'a>(p: &mut P<'a>) -> Option<Vec<Block<'a>>> {
    let mut out = Vec::new();
    p.array(|p| {
        let mut b = Block {
            ty: Cow::Borrowed(""),
            id: None,
            name: None,
            tool_use_id: None,
            text: None,
        };
        let mut seen = 0u8;
        if p.peek()? != b'{' {
            return None;
        }
        p.object(|k, p| {
            let bit = match k {
                b"type" => 0,
                b"id" => 1,
                b"name" => 2,
                b"tool_use_id" => 3,
                b"text" => 4,
                _ => return p.skip(0),
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            let v = p.opt_str()?.map(|s| s.0);
            match bit {
                0 => b.ty = v.unwrap_or_default(),
                1 => b.id = v.map(Cow::into_owned),
                2 => b.name = v.map(Cow::into_owned),
                3 => b.tool_use_id = v.map(Cow::into_owned),
                _ => b.text = v,
            }
            Some(())
        })?;
        out.push(b);
        Some(())
    })?;
    Some(out)
}

/// `toolUseResult`: `agentId` when it is an object that has one.
fn tool_use_result(p: &mut P<'_>) -> Option<Option<AgentIdOf>> {
    match p.peek()? {
        b'n' => {
            p.lit(b"null")?;
            Some(None)
        }
        b'{' => {
            let mut found = None;
            p.one_field(b"agentId", |p| {
                found = p.opt_str()?.map(|s| s.0.into_owned());
                Some(())
            })?;
            Some(Some(AgentIdOf(found)))
        }
        // serde reads a string whole (checked as text).
        b'"' => {
            p.string()?;
            Some(Some(AgentIdOf(None)))
        }
        _ => {
            p.skip(0)?;
            Some(Some(AgentIdOf(None)))
        }
    }
}

/// The first `"` or `\\` at or after `i`. Most strings (keys, ids,
/// numbers) end within a few bytes: 8 at a time first, `memchr` for the
/// long ones.
fn quote_or_escape(b: &[u8], i: usize) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Bytes of `w` equal to `c`, as their high bits (exact up to the first).
    let eq = |w: u64, c: u8| {
        let x = w ^ (LO * u64::from(c));
        x.wrapping_sub(LO) & !x & HI
    };
    let mut j = i;
    for _ in 0..4 {
        let Some(word) = b.get(j..j + 8) else { break };
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let m = eq(w, b'"') | eq(w, b'\\');
        if m != 0 {
            return Some(j + (m.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    Some(j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?)
}

/// A cursor over one line.
struct P<'a> {
    b: &'a [u8],
    i: usize,
    /// The line has bytes below 0x20 somewhere.
    ctl: bool,
}

impl<'a> P<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after white space.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn lit(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// An object, `f` reading each member's value (keys plain ASCII).
    fn object(&mut self, mut f: impl FnMut(&'a [u8], &mut Self) -> Option<()>) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        self.i += 1;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let k = self.key()?;
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.ws();
            f(k, self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object of which only `name` is read (once) by `f`.
    fn one_field(&mut self, name: &[u8], mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        let mut seen = false;
        self.object(|k, p| {
            if k == name {
                if std::mem::replace(&mut seen, true) {
                    return None;
                }
                f(p)
            } else {
                p.skip(0)
            }
        })
    }

    /// `null` or an object read by `f`.
    fn opt_object<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'{' => f(self).map(Some),
            _ => None,
        }
    }

    fn array(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.peek()? != b'[' {
            return None;
        }
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            f(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A key where fields are looked up: plain printable ASCII only (an
    /// escape or other bytes: serde decodes and checks them).
    fn key(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        loop {
            match *self.b.get(i)? {
                b'"' => break,
                b'\\' | 0..=0x1f | 0x80..=0xff => return None,
                _ => i += 1,
            }
        }
        self.i = i + 1;
        Some(&self.b[start..i])
    }

    /// Past a string (at its opening quote), checked as serde skips one;
    /// returns where its content ends and whether it has escapes.
    fn skip_str(&mut self) -> Option<(usize, bool)> {
        let b = self.b;
        let mut i = self.i + 1;
        let mut escaped = false;
        loop {
            let j = quote_or_escape(b, i)?;
            if self.ctl && b[i..j].iter().any(|&c| c < 0x20) {
                return None;
            }
            if b[j] == b'"' {
                self.i = j + 1;
                return Some((j, escaped));
            }
            escaped = true;
            match *b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = j + 2,
                b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => i = j + 6,
                _ => return None,
            }
        }
    }

    /// A string as serde parses one: UTF-8, escapes decoded.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i;
        let (end, escaped) = self.skip_str()?;
        if escaped {
            serde_json::from_slice::<String>(&self.b[start..self.i])
                .ok()
                .map(Cow::Owned)
        } else {
            std::str::from_utf8(&self.b[start + 1..end])
                .ok()
                .map(Cow::Borrowed)
        }
    }

    fn opt_str(&mut self) -> Option<Option<Str<'a>>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'"' => self.string().map(|s| Some(Str(s))),
            _ => None,
        }
    }

    fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b't' => self.lit(b"true").map(|_| Some(true)),
            b'f' => self.lit(b"false").map(|_| Some(false)),
            _ => None,
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let digits = |i: &mut usize| {
            let s = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > s
        };
        let mut i = self.i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                digits(&mut i);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        self.i = i;
        Some(())
    }

    /// Past any value, checked as serde checks a value it ignores.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_str().map(|_| ()),
            b'{' if depth < DEPTH => {
                self.i += 1;
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    if self.peek()? != b'"' {
                        return None;
                    }
                    self.skip_str()?;
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.i += 1;
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' if depth < DEPTH => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.lit(b"true"),
            b'f' => self.lit(b"false"),
            b'n' => self.lit(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::Line;
    use super::line;

    /// The fast path says nothing or what serde says.
    fn agrees(l: &[u8]) {
        let fast = line(l).map(|x| format!("{x:?}"));
        let full = serde_json::from_slice::<Line>(l)
            .ok()
            .map(|x| format!("{x:?}"));
        if fast.is_some() {
            assert_eq!(fast, full, "{}", String::from_utf8_lossy(l));
        }
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-code");
        let mut out = Vec::new();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    let bytes = std::fs::read(&p).unwrap();
                    out.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
                }
            }
        }
        out
    }

    #[test]
    fn agrees_with_serde_on_every_fixture_line_and_answers_most() {
        let lines = fixture_lines();
        let mut answered = 0;
        for l in &lines {
            agrees(l);
            answered += usize::from(line(l).is_some());
        }
        // Every recorded line serde reads is plain enough for the fast path
        // (`history.jsonl`'s numeric timestamps are no session line).
        let json = lines
            .iter()
            .filter(|l| serde_json::from_slice::<Line>(l).is_ok())
            .count();
        assert_eq!(answered, json);
    }

    #[test]
    fn agrees_on_cut_and_damaged_lines() {
        let lines = fixture_lines();
        let some: Vec<&Vec<u8>> = lines.iter().filter(|l| l.len() > 50).take(12).collect();
        for l in some {
            // Every cut: none is whole JSON but the full line.
            for n in 0..l.len() {
                assert!(line(&l[..n]).is_none() || serde_json::from_slice::<Line>(&l[..n]).is_ok());
            }
            // One byte changed at a time to each of a few troublemakers.
            for at in (0..l.len()).step_by(7) {
                for &c in b"\"\\{}[],:0 \x01\xff" {
                    let mut m = l.clone();
                    m[at] = c;
                    agrees(&m);
                }
            }
        }
    }

    #[test]
    fn leaves_the_unsure_to_serde() {
        let twice = br#"{"type":"user","uuid":"8b0161b3-7395-4709-9383-037d1ebc0af3","uuid":"8b0161b3-7395-4709-9383-037d1ebc0af4"}"#;
        assert!(line(twice).is_none());
        let escaped_key = br#"{"typ\u0065":"user"}"#;
        assert!(line(escaped_key).is_none());
        assert_eq!(
            serde_json::from_slice::<Line>(escaped_key)
                .unwrap()
                .ty
                .map(|s| s.0.into_owned()),
            Some("user".into())
        );
        let trailing = br#"{"type":"user"} x"#;
        assert!(line(trailing).is_none());
        let escaped = br#"{"type":"user","message":{"content":"a\nb \u00e9 \ud83d\ude00"},"x":[1,-2.5e3,true,null,{"y":"\u0001"}]}"#;
        agrees(escaped);
        assert!(line(escaped).is_some());
        // A control character inside a skipped string is no JSON.
        assert!(line(b"{\"x\":\"a\x01b\"}").is_none());
        assert!(serde_json::from_slice::<Line>(b"{\"x\":\"a\x01b\"}").is_err());
    }
}
