//! A checked cursor over one JSON line, for the sources' fast paths: it
//! reads the few fields an index needs in one pass and answers `None` to
//! anything it is not sure of exactly as serde would read it (an escape in
//! a key, a control byte in a string, a number it cannot hold, nesting past
//! [`DEPTH`]); the caller then parses the line with serde. Each source's
//! `fast.rs` says which fields it reads; tests there compare it with serde.

use std::borrow::Cow;

/// Deepest nesting skipped; deeper values go to serde.
pub const DEPTH: u32 = 64;

/// The first `"` or `\\` at or after `i`. Most strings (keys, ids,
/// numbers) end within a few bytes: 8 at a time first, `memchr` for the
/// long ones.
pub fn quote_or_escape(b: &[u8], i: usize) -> Option<usize> {
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
pub struct Cursor<'a> {
    pub b: &'a [u8],
    pub i: usize,
    /// The line has bytes below 0x20 somewhere.
    pub ctl: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `line`, told whether it holds any control
    /// byte (most lines have none, and then strings need no byte check).
    pub fn new(line: &'a [u8]) -> Cursor<'a> {
        let ctl = line.iter().fold(false, |a, &c| a | (c < 0x20));
        Cursor { b: line, i: 0, ctl }
    }

    pub fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after white space.
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    pub fn lit(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// An object, `f` reading each member's value (keys plain ASCII).
    pub fn object(&mut self, mut f: impl FnMut(&'a [u8], &mut Self) -> Option<()>) -> Option<()> {
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
    pub fn one_field(
        &mut self,
        name: &[u8],
        mut f: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
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
    pub fn opt_object<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'{' => f(self).map(Some),
            _ => None,
        }
    }

    pub fn array(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
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
    pub fn key(&mut self) -> Option<&'a [u8]> {
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
    pub fn skip_str(&mut self) -> Option<(usize, bool)> {
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
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
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

    pub fn opt_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'"' => self.string().map(Some),
            _ => None,
        }
    }

    /// [`Cursor::opt_str`] where most values are one of `known` (a line's
    /// type, a role): one of them is taken as it is written, with no
    /// check of the bytes; any other string is read as `opt_str` reads it.
    pub fn opt_known(&mut self, known: &[&'static str]) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'"' {
            let start = self.i + 1;
            let end = quote_or_escape(self.b, start)?;
            if self.b[end] == b'"' {
                let raw = &self.b[start..end];
                if let Some(k) = known.iter().find(|k| k.as_bytes() == raw) {
                    self.i = end + 1;
                    return Some(Some(Cow::Borrowed(k)));
                }
            }
        }
        self.opt_str()
    }

    pub fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b't' => self.lit(b"true").map(|_| Some(true)),
            b'f' => self.lit(b"false").map(|_| Some(false)),
            _ => None,
        }
    }

    /// `null` or a non-negative integer that fits: what serde reads as an
    /// `Option<u64>` (and `as_u64` takes); anything else is `None`.
    pub fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'0'..=b'9' => {
                let start = self.i;
                self.number()?;
                let digits = &self.b[start..self.i];
                if !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                let mut n: u64 = 0;
                for &d in digits {
                    n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                }
                Some(Some(n))
            }
            _ => None,
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    pub fn number(&mut self) -> Option<()> {
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
    pub fn skip(&mut self, depth: u32) -> Option<()> {
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
