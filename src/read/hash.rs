//! Record identity: a hash of the JSON text with the white space between
//! tokens removed, so `{"role": "_checkpoint", "id": 0}` and
//! `{"role":"_checkpoint","id":0}` are the same record.

use memchr::memchr2;
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

/// Two lines whose text differs but which kimi-cli's Python would read as
/// the same record: parsed (a repeated key keeps its last value, as
/// `json.loads` does) and compared as Python compares (key order does not
/// matter, `1 == 1.0 == True`). `false` when either is not JSON.
pub fn same_parsed(a: &[u8], b: &[u8]) -> bool {
    match (
        super::lenient::parse_value(a),
        super::lenient::parse_value(b),
    ) {
        (Ok(x), Ok(y)) => py_eq(&x, &y),
        _ => false,
    }
}

fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| py_eq(v, w))
        }
        (Value::Number(_) | Value::Bool(_), Value::Number(_) | Value::Bool(_)) => {
            match (as_int(a), as_int(b)) {
                (Some(x), Some(y)) => x == y,
                _ => as_f64(a).is_some_and(|x| as_f64(b) == Some(x)),
            }
        }
        _ => a == b,
    }
}

fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        _ => None,
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

pub fn canonical_hash(line: &[u8]) -> u64 {
    let mut hasher = Xxh3::new();
    let mut segment_start = 0;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => i = string_end(line, i + 1),
            b' ' | b'\t' | b'\r' | b'\n' => {
                hasher.update(&line[segment_start..i]);
                i += 1;
                segment_start = i;
            }
            _ => i += 1,
        }
    }
    hasher.update(&line[segment_start..]);
    hasher.digest()
}

/// `canonical_hash` fed in pieces: string and escape state carry over, so
/// any split of a line gives the same digest as hashing it whole.
#[derive(Clone)]
pub struct CanonHasher {
    hasher: Xxh3,
    in_string: bool,
    /// A backslash ended the last piece: the next byte is escaped.
    escape: bool,
}

impl Default for CanonHasher {
    fn default() -> Self {
        CanonHasher {
            hasher: Xxh3::new(),
            in_string: false,
            escape: false,
        }
    }
}

impl CanonHasher {
    pub fn update(&mut self, piece: &[u8]) {
        let mut i = 0;
        if self.escape && !piece.is_empty() {
            self.escape = false;
            i = 1;
        }
        let mut segment_start = 0;
        while i < piece.len() {
            if self.in_string {
                match memchr2(b'"', b'\\', &piece[i..]) {
                    Some(k) if piece[i + k] == b'\\' => {
                        i += k + 2;
                        if i > piece.len() {
                            self.escape = true;
                        }
                    }
                    Some(k) => {
                        i += k + 1;
                        self.in_string = false;
                    }
                    None => i = piece.len(),
                }
                continue;
            }
            match piece[i] {
                b'"' => self.in_string = true,
                b' ' | b'\t' | b'\r' | b'\n' => {
                    self.hasher.update(&piece[segment_start..i]);
                    segment_start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.hasher.update(&piece[segment_start..]);
    }

    pub fn digest(&self) -> u64 {
        self.hasher.digest()
    }
}

/// Index just past the closing quote of a string whose body starts at `from`
/// (or the line's end when the string never closes).
fn string_end(line: &[u8], mut from: usize) -> usize {
    while from < line.len() {
        match memchr2(b'"', b'\\', &line[from..]) {
            Some(k) if line[from + k] == b'\\' => from += k + 2,
            Some(k) => return from + k + 1,
            None => return line.len(),
        }
    }
    line.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_does_not_matter_but_string_content_does() {
        let a = canonical_hash(br#"{"role": "_checkpoint", "id": 0}"#);
        let b = canonical_hash(br#"{"role":"_checkpoint","id":0}"#);
        assert_eq!(a, b);
        let c = canonical_hash(br#"{"role":"user","content":"a b"}"#);
        let d = canonical_hash(br#"{"role":"user","content":"ab"}"#);
        assert_ne!(c, d);
        let e = canonical_hash(br#"{"role":"user","content":"q\" x"}"#);
        let f = canonical_hash(br#"{"role":"user","content":"q\"x"}"#);
        assert_ne!(e, f);
        // An unterminated string or a trailing backslash must not panic.
        canonical_hash(br#"{"a":"\"#);
        canonical_hash(br#"{"a":"abc"#);
    }

    #[test]
    fn parsed_like_python() {
        assert!(same_parsed(
            br#"{"role":"_checkpoint","id":0,"id":0}"#,
            br#"{"role": "_checkpoint", "id": 0}"#
        ));
        assert!(same_parsed(
            br#"{"a":1,"b":2,"a":3}"#,
            br#"{"b":2.0,"a":3}"#
        ));
        assert!(same_parsed(
            br#"{"a":"\u00e9"}"#,
            "{\"a\":\"é\"}".as_bytes()
        ));
        assert!(!same_parsed(br#"{"a":1,"a":2}"#, br#"{"a":1}"#));
        assert!(!same_parsed(br#"{"a":"1"}"#, br#"{"a":1}"#));
        assert!(!same_parsed(b"nope", b"nope"));
    }

    proptest::proptest! {
        #[test]
        fn pieces_hash_like_the_whole(
            line in r#"[{}"\\ \t\r\na-c:,]{0,60}"#,
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let b = line.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(b.len())).collect();
            cuts.sort_unstable();
            let mut h = CanonHasher::default();
            let mut from = 0;
            for c in cuts.into_iter().chain([b.len()]) {
                h.update(&b[from..c]);
                from = c;
            }
            proptest::prop_assert_eq!(h.digest(), canonical_hash(b));
        }
    }
}
