//! Parsing one line as leniently as kimi-cli (Python `json.loads(strict=False)`
//! on text decoded with replacement): invalid UTF-8 becomes U+FFFD and raw
//! control characters inside strings are accepted.

use std::borrow::Cow;

use serde_json::Value;

/// Parses a whole line into a JSON value, or says why it isn't one.
pub fn parse_value(line: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => Ok(v),
        Err(first) => {
            let repaired = repair(line);
            serde_json::from_str::<Value>(&repaired).map_err(|_| first.to_string())
        }
    }
}

/// Replaces invalid UTF-8, escapes raw control characters inside strings and
/// turns lone surrogate escapes (`\uDE00` without its pair) into U+FFFD, so
/// serde_json's strict parser accepts what Python's lenient one does.
pub fn repair(line: &[u8]) -> String {
    let text: Cow<str> = String::from_utf8_lossy(line);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if !in_string {
            in_string = c == '"';
            out.push(c);
            continue;
        }
        match c {
            '"' => in_string = false,
            '\\' if chars.get(i) == Some(&'u') => {
                let unit = hex4(&chars, i + 1);
                match unit {
                    Some(0xD800..=0xDBFF) if is_low_escape(&chars, i + 5) => {
                        // A proper pair: copy both escapes as they are.
                        out.extend(&chars[i - 1..i + 11]);
                        i += 11;
                    }
                    Some(0xD800..=0xDFFF) => {
                        out.push_str("\\ufffd");
                        i += 5;
                    }
                    _ => {
                        out.push(c);
                        out.push('u');
                        i += 1;
                    }
                }
                continue;
            }
            '\\' => {
                out.push(c);
                if let Some(&next) = chars.get(i) {
                    out.push(next);
                    i += 1;
                }
                continue;
            }
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The value of four hex digits at `at`, if there are four.
fn hex4(chars: &[char], at: usize) -> Option<u32> {
    let digits = chars.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0u32, |acc, d| Some(acc * 16 + d.to_digit(16)?))
}

/// Whether a `\uDC00`–`\uDFFF` escape starts at `at`.
fn is_low_escape(chars: &[char], at: usize) -> bool {
    chars.get(at) == Some(&'\\')
        && chars.get(at + 1) == Some(&'u')
        && matches!(hex4(chars, at + 2), Some(0xDC00..=0xDFFF))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_raw_control_characters_and_bad_utf8() {
        let v = parse_value(b"{\"role\":\"user\",\"content\":\"a\tb\x1b[31m\"}").unwrap();
        assert_eq!(v["content"], "a\tb\u{1b}[31m");
        let v = parse_value(b"{\"role\":\"user\",\"content\":\"x\xff\xfey\"}").unwrap();
        assert_eq!(v["content"], "x\u{fffd}\u{fffd}y");
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        // Python's json.loads keeps lone surrogates; serde_json refuses them.
        let v = parse_value(br#"{"role":"user","content":"a\uDE00b\uD83Dc\uD83D\uDE00"}"#).unwrap();
        assert_eq!(v["content"], "a\u{fffd}b\u{fffd}c\u{1F600}");
        let v = parse_value(b"{\"role\":\"user\",\"content\":\"\\\\uDE00\tx\"}").unwrap();
        assert_eq!(v["content"], "\\uDE00\tx");
    }

    #[test]
    fn rejects_non_json() {
        assert!(parse_value(b"{not json").is_err());
    }
}
