//! An ordered JSON value with the two spellings kimi-cli produces:
//! Python's `json.dumps` (`", "`/`": "` separators, `\uXXXX` for non-ASCII) for
//! the `_checkpoint`/`_usage`/`_system_prompt` records, wire.jsonl and the
//! metadata files, and pydantic's compact form (raw UTF-8) for messages.
//! Field order matters for byte-exact output, so objects are `Vec`s of pairs.

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(key, value)` pairs, in the given order.
    pub fn obj<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    pub fn opt_str(s: Option<&str>) -> Json {
        s.map_or(Json::Null, Json::str)
    }

    /// Converts a serde_json value; object order is whatever its map keeps.
    pub fn from_value(v: &serde_json::Value) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Json::Int(i),
                None => Json::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Json::Str(s.clone()),
            serde_json::Value::Array(a) => Json::Array(a.iter().map(Json::from_value).collect()),
            serde_json::Value::Object(m) => Json::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// Python `json.dumps(value)`.
    pub fn to_python(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Style::Python, None, 0);
        out
    }

    /// Python `json.dumps(value, indent=2)`.
    pub fn to_python_pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Style::Python, Some(2), 0);
        out
    }

    /// pydantic `model_dump_json()`: no spaces, raw UTF-8.
    pub fn to_compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Style::Compact, None, 0);
        out
    }

    fn write(&self, out: &mut String, style: Style, indent: Option<usize>, depth: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Float(f) => out.push_str(&py_float_repr(*f)),
            Json::Str(s) => write_str(out, s, style),
            Json::Array(items) => {
                if items.is_empty() {
                    out.push_str("[]");
                    return;
                }
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    separator(out, style, indent, depth + 1, i == 0);
                    item.write(out, style, indent, depth + 1);
                }
                closing(out, indent, depth);
                out.push(']');
            }
            Json::Object(pairs) => {
                if pairs.is_empty() {
                    out.push_str("{}");
                    return;
                }
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    separator(out, style, indent, depth + 1, i == 0);
                    write_str(out, k, style);
                    out.push_str(match style {
                        Style::Python => ": ",
                        Style::Compact => ":",
                    });
                    v.write(out, style, indent, depth + 1);
                }
                closing(out, indent, depth);
                out.push('}');
            }
        }
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Self {
        Json::Str(s.to_owned())
    }
}
impl From<String> for Json {
    fn from(s: String) -> Self {
        Json::Str(s)
    }
}
impl From<i64> for Json {
    fn from(i: i64) -> Self {
        Json::Int(i)
    }
}
impl From<bool> for Json {
    fn from(b: bool) -> Self {
        Json::Bool(b)
    }
}
impl From<f64> for Json {
    fn from(f: f64) -> Self {
        Json::Float(f)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Python,
    Compact,
}

fn separator(out: &mut String, style: Style, indent: Option<usize>, depth: usize, first: bool) {
    match indent {
        Some(width) => {
            if !first {
                out.push(',');
            }
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', width * depth));
        }
        None if !first => out.push_str(match style {
            Style::Python => ", ",
            Style::Compact => ",",
        }),
        None => {}
    }
}

fn closing(out: &mut String, indent: Option<usize>, depth: usize) {
    if let Some(width) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * depth));
    }
}

fn write_str(out: &mut String, s: &str, style: Style) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            // Python's ensure_ascii escapes everything outside ' '..='~',
            // DEL included; astral characters become surrogate pairs.
            c if style == Style::Python && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation
/// when the exponent is below -4 or at least 16 (`9.37e-05`, `1e+16`).
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest round-trip digits, e.g. "-9.37e-5".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            let zeros = "0".repeat((-point) as usize);
            format!("{sign}0.{zeros}{digits}")
        } else {
            let point = point as usize;
            if digits.len() <= point {
                let zeros = "0".repeat(point - digits.len());
                format!("{sign}{digits}{zeros}.0")
            } else {
                format!("{sign}{}.{}", &digits[..point], &digits[point..])
            }
        }
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let m = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        format!("{sign}{m}e{exp_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python() {
        assert_eq!(py_float_repr(9.37e-05), "9.37e-05");
        assert_eq!(py_float_repr(0.0001011), "0.0001011");
        assert_eq!(py_float_repr(1796068970.008349), "1796068970.008349");
        assert_eq!(py_float_repr(1796068988.7082503), "1796068988.7082503");
        assert_eq!(py_float_repr(1.0), "1.0");
        assert_eq!(py_float_repr(0.0), "0.0");
        assert_eq!(py_float_repr(-2.5), "-2.5");
        assert_eq!(py_float_repr(1e16), "1e+16");
        assert_eq!(py_float_repr(123456.0), "123456.0");
    }

    #[test]
    fn strings_like_python_and_pydantic() {
        let v = Json::obj([
            ("role", Json::str("_system_prompt")),
            ("content", Json::str("a — b\u{7f}😀\"\n\u{1}")),
        ]);
        assert_eq!(
            v.to_python(),
            r#"{"role": "_system_prompt", "content": "a \u2014 b\u007f\ud83d\ude00\"\n\u0001"}"#
        );
        assert_eq!(
            v.to_compact(),
            "{\"role\":\"_system_prompt\",\"content\":\"a — b\u{7f}😀\\\"\\n\\u0001\"}"
        );
    }

    #[test]
    fn pretty_like_python_indent_2() {
        let v = Json::obj([
            ("a", Json::Int(1)),
            ("b", Json::Array(vec![])),
            ("c", Json::obj([("d", Json::Null)])),
        ]);
        assert_eq!(
            v.to_python_pretty(),
            "{\n  \"a\": 1,\n  \"b\": [],\n  \"c\": {\n    \"d\": null\n  }\n}"
        );
    }
}
