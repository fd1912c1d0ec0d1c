//! Untrusted text into XML and HTML (the SVG map and the HTML report):
//! control characters become their visible stand-ins first (as in the
//! terminal, and because XML 1.0 cannot hold most of them at all), then the
//! five markup characters become entities, so session text is only ever
//! text — never a tag, an attribute's end or an entity.

use crate::text::sanitize;

/// Text for an element's content or a quoted attribute value.
pub fn esc(s: &str) -> String {
    let safe = sanitize(s, true);
    let mut out = String::with_capacity(safe.len() + safe.len() / 8);
    for c in safe.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Not characters XML allows; sanitize leaves them.
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Like `esc`, on one line: tabs and newlines become spaces (attribute
/// values and SVG text, where a newline would be folded anyway).
pub fn esc_line(s: &str) -> String {
    esc(&s.replace(['\n', '\t', '\r'], " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_controls_become_text() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(esc("a\x1b[31m\u{0}b"), "a␛[31m␀b");
        assert_eq!(esc("two\nlines"), "two\nlines");
        assert_eq!(esc_line("two\nlines"), "two lines");
    }
}
