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

/// Replaces invalid UTF-8 and escapes raw control characters inside strings,
/// so serde_json's strict parser accepts what Python's lenient one does.
pub fn repair(line: &[u8]) -> String {
    let text: Cow<str> = String::from_utf8_lossy(line);
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if (c as u32) < 0x20 {
                out.push_str(&format!("\\u{:04x}", c as u32));
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
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
    fn rejects_non_json() {
        assert!(parse_value(b"{not json").is_err());
    }
}
