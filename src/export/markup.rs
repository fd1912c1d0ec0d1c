//! Untrusted text into XML and HTML (the SVG map and the HTML report), by
//! `text::escape_html`: control characters become their visible stand-ins
//! (XML 1.0 cannot hold most of them at all), the five markup characters
//! entities, so session text is only ever text — never a tag, an
//! attribute's end or an entity. Here: keeping line breaks, and the two
//! non-characters XML also refuses.

use crate::text::escape_html;

/// Text for an element's content or a quoted attribute value; line breaks
/// and tabs are kept (for `<pre>` and `white-space: pre-wrap`).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut from = 0;
    for (at, sep) in s.match_indices(['\n', '\t']) {
        out.push_str(&esc_line(&s[from..at]));
        out.push_str(sep);
        from = at + sep.len();
    }
    out.push_str(&esc_line(&s[from..]));
    out
}

/// One line of text: a newline inside shows as `⏎`.
pub fn esc_line(s: &str) -> String {
    // Not characters XML allows, and `sanitize` keeps them.
    escape_html(&s.replace(['\u{fffe}', '\u{ffff}'], "\u{fffd}"))
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
        assert_eq!(esc("two\nlines\tand\ttabs\n"), "two\nlines\tand\ttabs\n");
        assert_eq!(esc_line("two\nlines"), "two⏎lines");
    }
}
