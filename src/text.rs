//! Making untrusted session text safe and tidy for a terminal: control
//! characters and escape sequences are shown, never executed, and widths are
//! measured in terminal columns (CJK and emoji take two).

use std::path::Path;

use unicode_width::UnicodeWidthChar;

/// Replaces every control character with a visible stand-in: ESC becomes
/// `␛` (so `\x1b[31m` shows as `␛[31m`), other C0 controls their Control
/// Pictures symbol, DEL `␡`, C1 controls `�`. Newlines and tabs are kept
/// when `keep_layout`, for multi-line views that handle them themselves.
pub fn sanitize(s: &str, keep_layout: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' if keep_layout => out.push(c),
            '\t' => out.push(' '),
            '\n' => out.push('⏎'),
            '\u{1b}' => out.push('␛'),
            c if (c as u32) < 0x20 => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'))
            }
            '\u{7f}' => out.push('␡'),
            c if ('\u{80}'..='\u{9f}').contains(&c) => out.push('\u{fffd}'),
            // Bidi overrides and isolates could reorder what follows them.
            c if is_bidi_control(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A path (or a file or directory name) for a terminal: bytes that are not
/// UTF-8 become `�`, control characters their stand-ins (one line).
pub fn sanitize_path(p: &Path) -> String {
    sanitize(&p.to_string_lossy(), false)
}

/// A message from a peer or an error for stderr, on one line: server
/// replies, error texts that embed paths.
pub fn sanitize_message(s: &str) -> String {
    sanitize(s, false)
}

/// Serialised JSON made safe for a terminal: JSON itself escapes only C0
/// controls, so DEL, C1 controls (U+009B is a CSI to many terminals) and
/// bidi overrides become `\u` escapes too, and so do the invisible marks
/// a terminal would show as nothing or as a line break (zero-width spaces
/// and joiners, LRM/RLM, ALM, word joiners, BOM, U+2028/2029). They can
/// only occur inside strings, so the document means exactly the same.
pub fn json_for_terminal(json: String) -> String {
    let risky =
        |c: char| ('\u{7f}'..='\u{9f}').contains(&c) || is_bidi_control(c) || is_invisible_mark(c);
    if !json.chars().any(risky) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if risky(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Zero-width and direction marks and the Unicode line/paragraph
/// separators: shown raw they hide or move text.
fn is_invisible_mark(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{061c}'
            | '\u{2060}'..='\u{2064}'
            | '\u{feff}'
    )
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text for an HTML context (Mermaid labels, SVG, HTML): `&<>"'` escaped,
/// after [`sanitize`], so a label can neither run markup nor reach the
/// terminal raw.
pub fn escape_html(s: &str) -> String {
    let clean = sanitize(s, false);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Display width in terminal columns, measured per string as ratatui does
/// (an emoji with a skin-tone modifier is one 2-column glyph, not two).
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// One safe line of at most `max` columns, with `…` when cut. Runs of white
/// space fold to one space so previews stay on one row.
pub fn sanitize_line(s: &str, max: usize) -> String {
    let mut folded = String::with_capacity(s.len().min(max * 4));
    let mut last_space = false;
    for c in sanitize(s, true).chars() {
        if c.is_whitespace() {
            if !last_space && !folded.is_empty() {
                folded.push(' ');
            }
            last_space = true;
        } else {
            folded.push(c);
            last_space = false;
        }
        // Enough for `max` columns; avoids folding a whole 20 MB body.
        if folded.len() > max * 4 + 8 {
            break;
        }
    }
    truncate(folded.trim_end(), max)
}

/// Cuts `s` to at most `max` columns, ending in `…` when anything was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_never_survive() {
        let s = sanitize("a\x1b[31mred\x1b]0;title\x07\r\u{9b}2J", false);
        assert_eq!(s, "a␛[31mred␛]0;title␇␍\u{fffd}2J");
        assert!(!s.chars().any(|c| c.is_control()));
    }

    #[test]
    fn paths_and_html() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(
            b"/s/\x1b]52;c;eA==\x07\xff\xc2\x9b",
        ));
        let s = sanitize_path(p);
        assert_eq!(s, "/s/␛]52;c;eA==␇\u{fffd}\u{fffd}");
        assert_eq!(
            escape_html("<img onerror='x'>&\x1b"),
            "&lt;img onerror=&#39;x&#39;&gt;&amp;␛"
        );
    }

    #[test]
    fn json_keeps_its_meaning() {
        let v = serde_json::json!({"k": "a\u{9b}b\u{7f}\u{202e}\u{1b}"});
        let safe = json_for_terminal(v.to_string());
        assert_eq!(safe, r#"{"k":"a\u009bb\u007f\u202e\u001b"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
        let marks = serde_json::json!({"k": "a\u{200b}\u{200d}\u{200e}\u{200f}\u{2028}\u{2029}b"});
        let safe = json_for_terminal(marks.to_string());
        assert_eq!(safe, r#"{"k":"a\u200b\u200d\u200e\u200f\u2028\u2029b"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&safe).unwrap(),
            marks
        );
    }

    #[test]
    fn widths_count_columns() {
        assert_eq!(width("世界"), 4);
        assert_eq!(truncate("世界世界", 5), "世界…");
        assert_eq!(sanitize_line("a \n\n  b\tc", 10), "a b c");
        assert_eq!(truncate("abc", 3), "abc");
    }
}

/// `1 step`, `3 steps`: a count with its noun in the right number (`noun`
/// is the singular; the plural adds an s).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1u64, "checkpoint"), "1 checkpoint");
        assert_eq!(super::count(0u64, "step"), "0 steps");
        assert_eq!(super::count(3u64, "record"), "3 records");
    }
}
