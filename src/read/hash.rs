//! Record identity: a hash of the JSON text with the white space between
//! tokens removed, so `{"role": "_checkpoint", "id": 0}` and
//! `{"role":"_checkpoint","id":0}` are the same record.

use memchr::memchr2;
use xxhash_rust::xxh3::Xxh3;

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
}
