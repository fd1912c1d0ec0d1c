//! A validating skim over one JSON object line: finds the raw bytes of the
//! top-level fields the index needs and checks the line is well-formed JSON,
//! without building values. Strings are skipped with memchr, so a 20 MB
//! base64 image costs about as much as reading it once.
//!
//! Like kimi-cli's lenient parser it accepts raw control characters and any
//! bytes inside strings (invalid UTF-8 is replaced later, when a body loads);
//! it rejects what Python's `json.loads` rejects outside strings.

use memchr::memchr2;

/// Raw value bytes of the top-level fields the index reads. A key given twice
/// keeps its last value, as in Python.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fields<'a> {
    pub role: Option<&'a [u8]>,
    pub id: Option<&'a [u8]>,
    pub token_count: Option<&'a [u8]>,
    pub tool_call_id: Option<&'a [u8]>,
    pub tool_calls: Option<&'a [u8]>,
    pub content: Option<&'a [u8]>,
    /// White space between tokens was seen: the line's bytes are not its
    /// canonical spelling.
    pub spaced: bool,
}

/// Deeper nesting goes to the slow path (serde_json's limit is 128 too).
const MAX_DEPTH: usize = 128;

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    spaced: bool,
}

/// Skims a line. `None` means "not a well-formed JSON object" or something
/// this skim doesn't handle; the caller then takes the slow, exact path.
pub fn scan_object(line: &[u8]) -> Option<Fields<'_>> {
    let mut s = Scanner {
        b: line,
        i: 0,
        spaced: false,
    };
    let mut f = Fields::default();
    s.ws();
    // Leading white space is not inside the record: it doesn't count as spacing.
    s.spaced = false;
    s.eat(b'{')?;
    s.ws();
    if s.peek() == Some(b'}') {
        s.i += 1;
    } else {
        loop {
            s.ws();
            let key = s.string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            let start = s.i;
            s.value(1)?;
            let raw = &line[start..s.i];
            match &key[1..key.len() - 1] {
                b"role" => f.role = Some(raw),
                b"id" => f.id = Some(raw),
                b"token_count" => f.token_count = Some(raw),
                b"tool_call_id" => f.tool_call_id = Some(raw),
                b"tool_calls" => f.tool_calls = Some(raw),
                b"content" => f.content = Some(raw),
                _ => {}
            }
            s.ws();
            match s.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    // Trailing white space after the object is not part of the record either.
    f.spaced = s.spaced;
    s.ws();
    if s.i != line.len() {
        return None;
    }
    Some(f)
}

/// The items of a JSON array that lie whole inside `prefix`, the beginning
/// of a longer array (a `content` too long to keep whole).
pub fn leading_items(prefix: &[u8]) -> Vec<&[u8]> {
    let mut s = Scanner {
        b: prefix,
        i: 0,
        spaced: false,
    };
    let mut items = Vec::new();
    if s.eat(b'[').is_none() {
        return items;
    }
    loop {
        s.ws();
        let start = s.i;
        if s.value(1).is_none() {
            return items;
        }
        items.push(&prefix[start..s.i]);
        s.ws();
        if s.next() != Some(b',') {
            return items;
        }
    }
}

/// Where the first `"` or `\\` is. Strings are short and escapes come in
/// runs (`\\n`, `\\u00e9` all through file contents), so the first bytes are
/// looked at eight at a time by hand before paying for a memchr2 call.
fn quote_or_backslash(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i < 32 {
        let Some(word) = b.get(i..i + 8) else {
            return b[i..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\')
                .map(|k| i + k);
        };
        let v = u64::from_le_bytes(word.try_into().ok()?);
        let (q, s) = (v ^ (LO * u64::from(b'"')), v ^ (LO * u64::from(b'\\')));
        // A byte's high bit is set where `q` or `s` has a zero byte; a
        // borrow can only mark bytes above the first, so the lowest is exact.
        let hit = ((q.wrapping_sub(LO) & !q) | (s.wrapping_sub(LO) & !s)) & HI;
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr2(b'"', b'\\', &b[i..]).map(|k| i + k)
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
            self.spaced = true;
        }
    }

    /// A string, quotes included; escapes are checked, other bytes pass.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            self.i += quote_or_backslash(&self.b[self.i..])?;
            if self.b[self.i] == b'"' {
                self.i += 1;
                return Some(&self.b[start..self.i]);
            }
            self.i += 1;
            match self.next()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let hex = self.b.get(self.i..self.i + 4)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 4;
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => continue,
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => continue,
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            // Python also reads NaN and ±Infinity; kimi-cli never writes them
            // and the slow path decides.
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digit()?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digit()?;
            self.digits();
        }
        Some(())
    }

    fn digit(&mut self) -> Option<()> {
        self.next().filter(u8::is_ascii_digit).map(|_| ())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_and_spacing() {
        let f = scan_object(br#"{"role": "_checkpoint", "id": 3}"#).unwrap();
        assert_eq!(f.role, Some(&br#""_checkpoint""#[..]));
        assert_eq!(f.id, Some(&b"3"[..]));
        assert!(f.spaced);
        let f = scan_object(br#"{"role":"user","content":[{"type":"text","text":"a b"}],"x":{"y":[1,-2.5e3,true,null]}}"#).unwrap();
        assert!(!f.spaced, "spaces inside strings don't count");
        assert_eq!(f.content, Some(&br#"[{"type":"text","text":"a b"}]"#[..]));
        assert!(!scan_object(b"{\"role\":\"user\"}  ").unwrap().spaced);
    }

    #[test]
    fn agrees_with_serde_on_validity() {
        let cases: &[&[u8]] = &[
            br#"{"a":1}"#,
            br#"{"a":01}"#,
            br#"{"a":1.}"#,
            br#"{"a":-}"#,
            br#"{"a":tru}"#,
            br#"{"a":"\q"}"#,
            br#"{"a":"\u12g4"}"#,
            br#"{"a":[1,]}"#,
            br#"{"a":1,}"#,
            br#"{"a" 1}"#,
            br#"{"a":1}x"#,
            br#"{"a":{"b":[]}}"#,
            br#"{}"#,
            br#"{"a":1e+5}"#,
            br#"{"a":"x"#,
            br#"["a"]"#,
            br#"{"a":"\""}"#,
            br#"{"a":"\\"}"#,
        ];
        for c in cases {
            let serde_ok = serde_json::from_slice::<serde_json::Value>(c)
                .map(|v| v.is_object())
                .unwrap_or(false);
            assert_eq!(
                scan_object(c).is_some(),
                serde_ok,
                "{}",
                String::from_utf8_lossy(c)
            );
        }
    }

    /// The word-at-a-time search finds what a byte loop finds, at every
    /// position and length, next to bytes that differ from `"` and `\\` by
    /// one bit or a borrow.
    #[test]
    fn quote_or_backslash_equals_a_byte_search() {
        let fill = [
            b'!',
            b'#',
            b'[',
            b']',
            0x22 ^ 0x80,
            0x5c ^ 0x80,
            0,
            0xff,
            b'a',
        ];
        for len in 0..80 {
            for at in 0..=len {
                for &f in &fill {
                    for &hit in b"\"\\" {
                        let mut v = vec![f; len];
                        if at < len {
                            v[at] = hit;
                        }
                        let want = v.iter().position(|&c| c == b'"' || c == b'\\');
                        assert_eq!(quote_or_backslash(&v), want, "{v:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn lenient_inside_strings() {
        assert!(scan_object(b"{\"role\":\"user\",\"content\":\"a\x01\x1b[31m\xff\"}").is_some());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn never_accepts_what_the_exact_parser_rejects(line in r#"[{}\[\]":, 0-9a-z\\.eE+-]{0,40}"#) {
            let b = line.as_bytes();
            if let Some(f) = scan_object(b) {
                let v = crate::read::lenient::parse_value(b);
                proptest::prop_assert!(v.is_ok_and(|v| v.is_object()), "{}", line);
                if !f.spaced {
                    proptest::prop_assert_eq!(
                        crate::read::canonical_hash(b),
                        xxhash_rust::xxh3::xxh3_64(b.trim_ascii())
                    );
                }
            }
        }
    }
}
