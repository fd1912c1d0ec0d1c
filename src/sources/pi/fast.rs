//! The fast path of reading one Pi line: a single pass over the bytes that
//! checks the line is JSON and picks out the fields [`super::file`] keeps
//! (type, ids, time, role, tool calls, a label's or compaction's fields,
//! the header's), skipping everything else with `memchr` (most of a line
//! is message text). It answers only when sure to agree with the serde
//! parse ([`super::file::serde_fields`]); anything it does not expect (a
//! field twice, an escaped or non-ASCII key, a field of another type, a
//! `version` that is no plain integer, content blocks that are not
//! objects, nesting past [`DEPTH`](crate::read::json_cursor::DEPTH)) is `None`, and the caller parses the
//! line with serde (which then also gives the error of a bad line).
//! The cursor is the one every fast path shares
//! ([`crate::read::json_cursor`]).

use crate::read::json_cursor::Cursor as P;
use std::borrow::Cow;

use super::fields::{Fields, MsgFields};

/// The fields of `line` (without its line end) into `l` (default as
/// given), or `None`: ask serde (and `l` holds what was read so far).
pub(super) fn line<'a>(line: &'a [u8], l: &mut Fields<'a>) -> Option<()> {
    let mut p = P::new(line);
    let mut seen = 0u32;
    p.object(|k, p| {
        let bit = match k {
            b"type" => 0,
            b"id" => 1,
            b"parentId" => 2,
            b"timestamp" => 3,
            b"message" => 4,
            b"targetId" => 5,
            b"label" => 6,
            b"name" => 7,
            b"firstKeptEntryId" => 8,
            b"version" => 9,
            b"cwd" => 10,
            b"parentSession" => 11,
            _ => return p.skip(0),
        };
        // serde's derive refuses a field given twice.
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => l.ty = p.opt_known(&["message", "label", "compaction", "session"])?,
            1 => l.id = p.opt_str()?,
            2 => l.parent_id = Some(p.opt_str()?),
            3 => l.timestamp = p.opt_str()?,
            4 => l.message = p.opt_object(message)?,
            5 => l.target_id = p.opt_str()?,
            6 => l.label = p.opt_str()?,
            7 => l.name = p.opt_str()?,
            8 => l.first_kept = p.opt_str()?,
            9 => l.version = p.opt_u64()?,
            10 => l.cwd = p.opt_str()?,
            _ => l.parent_session = p.opt_str()?,
        }
        Some(())
    })?;
    p.ws();
    (p.i == line.len()).then_some(())
}

fn message<'a>(p: &mut P<'a>) -> Option<MsgFields<'a>> {
    let mut m = MsgFields::default();
    let mut seen = 0u8;
    p.object(|k, p| {
        let bit = match k {
            b"role" => 0,
            b"content" => 1,
            b"toolCallId" => 2,
            _ => return p.skip(0),
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => m.role = p.opt_known(&["assistant", "toolResult", "user"])?,
            1 => match p.peek()? {
                b'[' => m.calls = blocks(p)?,
                // Not blocks: no tool calls (checked as any value).
                _ => p.skip(0)?,
            },
            _ => m.tool_call_id = p.opt_str()?,
        }
        Some(())
    })?;
    Some(m)
}

/// `toolCall` blocks of `content` as `(id, name)`; an element that is not
/// an object, or a field of another type, is left to serde.
fn blocks<'a>(p: &mut P<'a>) -> Option<Vec<(Cow<'a, str>, Cow<'a, str>)>> {
    let mut out = Vec::new();
    p.array(|p| {
        if p.peek()? != b'{' {
            return None;
        }
        let (mut ty, mut id, mut name) = (None, None, None);
        let mut seen = 0u8;
        p.object(|k, p| {
            let bit = match k {
                b"type" => 0,
                b"id" => 1,
                b"name" => 2,
                _ => return p.skip(0),
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            let v = match bit {
                0 => p.opt_known(&["text", "thinking", "toolCall"])?,
                _ => p.opt_str()?,
            };
            match bit {
                0 => ty = v,
                1 => id = v,
                _ => name = v,
            }
            Some(())
        })?;
        if ty.as_deref() == Some("toolCall") {
            out.push((id.unwrap_or_default(), name.unwrap_or_default()));
        }
        Some(())
    })?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::sources::pi::fields::{serde_fields, Fields};

    fn line(l: &[u8]) -> Option<Fields<'_>> {
        let mut f = Fields::default();
        super::line(l, &mut f).map(|()| f)
    }

    /// What the reader makes of a line without the fast path: serde, else
    /// serde over the repaired line.
    fn full(l: &[u8]) -> Option<String> {
        match serde_fields(l) {
            Ok(x) => Some(format!("{x:?}")),
            Err(_) => {
                let owned = crate::read::lenient::repair(l);
                serde_fields(owned.as_bytes())
                    .ok()
                    .map(|x| format!("{x:?}"))
            }
        }
    }

    /// The fast path says nothing or what the full read says.
    fn agrees(l: &[u8]) {
        if let Some(fast) = line(l).map(|x| format!("{x:?}")) {
            assert_eq!(Some(fast), full(l), "{}", String::from_utf8_lossy(l));
        }
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        let mut lines = crate::sources::test_util::fixture_lines("pi");
        lines.retain(|l| !l.is_empty());
        lines
    }

    #[test]
    fn agrees_with_serde_on_every_fixture_line_and_answers_all() {
        let lines = fixture_lines();
        assert!(lines.len() > 50);
        for l in &lines {
            agrees(l);
            assert!(line(l).is_some(), "{}", String::from_utf8_lossy(l));
        }
    }

    #[test]
    fn agrees_on_cut_and_damaged_lines() {
        let lines = fixture_lines();
        for l in lines.iter().filter(|l| l.len() > 50).take(40) {
            // Every cut: none is whole JSON but the full line.
            for n in 0..l.len() {
                agrees(&l[..n]);
            }
            // One byte changed at a time to each of a few troublemakers.
            for at in (0..l.len()).step_by(3) {
                for &c in b"\"\\{}[],:0n \x01\xff" {
                    let mut m = l.clone();
                    m[at] = c;
                    agrees(&m);
                }
            }
        }
    }

    #[test]
    fn leaves_the_unsure_to_serde() {
        let unsure: [&[u8]; 8] = [
            br#"{"type":"message","id":"a","id":"b"}"#,
            br#"{"typ\u0065":"message"}"#,
            br#"{"type":"session","version":3.0}"#,
            br#"{"type":"session","version":-1}"#,
            br#"{"type":"message","message":{"role":"assistant","content":[["toolCall","c","bash"]]}}"#,
            br#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":5}]}}"#,
            br#"["message","a"]"#,
            br#"{"type":"message"} x"#,
        ];
        for l in unsure {
            assert!(line(l).is_none(), "{}", String::from_utf8_lossy(l));
        }
        let plain = br#"{"type":"message","id":"a\u00e9","parentId":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"a\nb"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"x":[1,-2.5e3,true,null]}}]}}"#;
        agrees(plain);
        assert!(line(plain).is_some_and(|f| f.message.unwrap().calls.len() == 1));
        assert!(line(b"{\"x\":\"a\x01b\"}").is_none());
    }
}
