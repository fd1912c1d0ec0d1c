//! The fast path of reading one Pi line: a single pass over the bytes that
//! checks the line is JSON and picks out the fields [`super::file`] keeps
//! (type, ids, time, role, tool calls, a label's or compaction's fields,
//! the header's), skipping everything else with `memchr` (most of a line
//! is message text). It answers only when sure to agree with the serde
//! parse ([`super::file::serde_fields`]); anything it does not expect (a
//! field twice, an escaped or non-ASCII key, a field of another type, a
//! `version` that is no plain integer, content blocks that are not
//! objects, nesting past [`DEPTH`]) is `None`, and the caller parses the
//! line with serde (which then also gives the error of a bad line).
//! The cursor is Claude Code's (`claude_code/fast.rs`), kept here so each
//! format's reader stays its own.

use std::borrow::Cow;

use super::file::{Fields, MsgFields};

/// Nesting skipped at most before giving up (serde allows 128).
const DEPTH: u32 = 64;

/// The fields of `line` (without its line end), or `None`: ask serde.
pub(super) fn line(line: &[u8]) -> Option<Fields<'_>> {
    // A control character is no JSON inside a string; most lines have
    // none at all, and then strings need no byte-by-byte check.
    let ctl = line.iter().fold(false, |a, &c| a | (c < 0x20));
    let mut p = P { b: line, i: 0, ctl };
    let mut l = Fields::default();
    let mut seen = 0u32;
    p.object(|k, p| {
        let bit = match k {
            b"type" => 0,
            b"id" => 1,
            b"parentId" => 2,
            b"timestamp" => 3,
            b"message" => 4,
            b"targetId" => 5,
            b"label" => 6,
            b"name" => 7,
            b"firstKeptEntryId" => 8,
            b"version" => 9,
            b"cwd" => 10,
            b"parentSession" => 11,
            _ => return p.skip(0),
        };
        // serde's derive refuses a field given twice.
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => l.ty = p.opt_str()?,
            1 => l.id = p.opt_str()?,
            2 => l.parent_id = Some(p.opt_str()?),
            3 => l.timestamp = p.opt_str()?,
            4 => l.message = p.opt_object(message)?,
            5 => l.target_id = p.opt_str()?,
            6 => l.label = p.opt_str()?,
            7 => l.name = p.opt_str()?,
            8 => l.first_kept = p.opt_str()?,
            9 => l.version = p.opt_u64()?,
            10 => l.cwd = p.opt_str()?,
            _ => l.parent_session = p.opt_str()?,
        }
        Some(())
    })?;
    p.ws();
    (p.i == line.len()).then_some(l)
}

fn message<'a>(p: &mut P<'a>) -> Option<MsgFields<'a>> {
    let mut m = MsgFields::default();
    let mut seen = 0u8;
    p.object(|k, p| {
        let bit = match k {
            b"role" => 0,
            b"content" => 1,
            b"toolCallId" => 2,
            _ => return p.skip(0),
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => m.role = p.opt_str()?,
            1 => match p.peek()? {
                b'[' => m.calls = blocks(p)?,
                // Not blocks: no tool calls (checked as any value).
                _ => p.skip(0)?,
            },
            _ => m.tool_call_id = p.opt_str()?,
        }
        Some(())
    })?;
    Some(m)
}

/// `toolCall` blocks of `content` as `(id, name)`; an element that is not
/// an object, or a field of another type, is left to serde.
fn blocks<'a>(p: &mut P<'a>) -> Option<Vec<(Cow<'a, str>, Cow<'a, str>)>> {
    let mut out = Vec::new();
    p.array(|p| {
        if p.peek()? != b'{' {
            return None;
        }
        let (mut ty, mut id, mut name) = (None, None, None);
        let mut seen = 0u8;
        p.object(|k, p| {
            let bit = match k {
                b"type" => 0,
                b"id" => 1,
                b"name" => 2,
                _ => return p.skip(0),
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            let v = p.opt_str()?;
            match bit {
                0 => ty = v,
                1 => id = v,
                _ => name = v,
            }
            Some(())
        })?;
        if ty.as_deref() == Some("toolCall") {
            out.push((id.unwrap_or_default(), name.unwrap_or_default()));
        }
        Some(())
    })?;
    Some(out)
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

    fn opt_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'"' => self.string().map(Some),
            _ => None,
        }
    }

    /// `null` or a plain integer that fits a `u64` (anything else: serde).
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'0'..=b'9' => {
                let start = self.i;
                self.number()?;
                let digits = &self.b[start..self.i];
                if !digits.iter().all(u8::is_ascii_digit) || (digits.len() > 1 && digits[0] == b'0')
                {
                    return None;
                }
                std::str::from_utf8(digits).ok()?.parse().ok().map(Some)
            }
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
pub(super) mod tests {
    use super::line;
    use crate::sources::pi::file::serde_fields;

    /// What the reader makes of a line without the fast path: serde, else
    /// serde over the repaired line.
    fn full(l: &[u8]) -> Option<String> {
        match serde_fields(l) {
            Ok(x) => Some(format!("{x:?}")),
            Err(_) => {
                let owned = crate::read::lenient::repair(l);
                serde_fields(owned.as_bytes())
                    .ok()
                    .map(|x| format!("{x:?}"))
            }
        }
    }

    /// The fast path says nothing or what the full read says.
    fn agrees(l: &[u8]) {
        if let Some(fast) = line(l).map(|x| format!("{x:?}")) {
            assert_eq!(Some(fast), full(l), "{}", String::from_utf8_lossy(l));
        }
    }

    pub(crate) fn fixture_files() -> Vec<std::path::PathBuf> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi");
        let mut out = Vec::new();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for p in fixture_files() {
            let bytes = std::fs::read(&p).unwrap();
            out.extend(
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
        out
    }

    #[test]
    fn agrees_with_serde_on_every_fixture_line_and_answers_all() {
        let lines = fixture_lines();
        assert!(lines.len() > 50);
        for l in &lines {
            agrees(l);
            assert!(line(l).is_some(), "{}", String::from_utf8_lossy(l));
        }
    }

    #[test]
    fn agrees_on_cut_and_damaged_lines() {
        let lines = fixture_lines();
        for l in lines.iter().filter(|l| l.len() > 50).take(40) {
            // Every cut: none is whole JSON but the full line.
            for n in 0..l.len() {
                agrees(&l[..n]);
            }
            // One byte changed at a time to each of a few troublemakers.
            for at in (0..l.len()).step_by(3) {
                for &c in b"\"\\{}[],:0n \x01\xff" {
                    let mut m = l.clone();
                    m[at] = c;
                    agrees(&m);
                }
            }
        }
    }

    #[test]
    fn leaves_the_unsure_to_serde() {
        let unsure: [&[u8]; 8] = [
            br#"{"type":"message","id":"a","id":"b"}"#,
            br#"{"typ\u0065":"message"}"#,
            br#"{"type":"session","version":3.0}"#,
            br#"{"type":"session","version":-1}"#,
            br#"{"type":"message","message":{"role":"assistant","content":[["toolCall","c","bash"]]}}"#,
            br#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":5}]}}"#,
            br#"["message","a"]"#,
            br#"{"type":"message"} x"#,
        ];
        for l in unsure {
            assert!(line(l).is_none(), "{}", String::from_utf8_lossy(l));
        }
        let plain = br#"{"type":"message","id":"a\u00e9","parentId":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"a\nb"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"x":[1,-2.5e3,true,null]}}]}}"#;
        agrees(plain);
        assert!(line(plain).is_some_and(|f| f.message.unwrap().calls.len() == 1));
        assert!(line(b"{\"x\":\"a\x01b\"}").is_none());
    }
}
