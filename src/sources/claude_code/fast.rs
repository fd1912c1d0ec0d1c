//! The fast path of reading one line: a single pass over the bytes that
//! checks the line is JSON and picks out the fields [`super::scan`] keeps,
//! skipping everything else with `memchr` (most of a line is strings: tool
//! output, usage, bookkeeping). It answers only when sure to agree with
//! the full serde parse; anything it does not expect (a field twice, an
//! escaped or non-ASCII key where fields are looked up, a field of another
//! type, nesting past [`DEPTH`](crate::read::json_cursor::DEPTH)) is `None`, and the caller parses the line
//! with serde (which then also gives the error of a bad line).
//!
//! Skipped values are checked as serde's own skipping checks them
//! (structure, numbers, escapes, no control characters in strings; no
//! UTF-8 check); fields it reads, and keys where it looks fields up, are
//! checked as serde's string parse checks them (UTF-8, escapes decoded).

use crate::read::json_cursor::Cursor as P;
use std::borrow::Cow;

use super::scan::{
    AgentIdOf, Block, CompactMeta, Content, ForkedFrom, Line, Message, Preserved, Str,
    SummarizeMeta,
};

/// The fields of `line` (without its line end), or `None`: ask serde.
pub(super) fn line(line: &[u8]) -> Option<Line<'_>> {
    let mut p = P::new(line);
    let mut l = Line::default();
    let mut seen = 0u32;
    p.object(|k, p| {
        let bit = match k {
            b"type" => 0,
            b"uuid" => 1,
            b"parentUuid" => 2,
            b"logicalParentUuid" => 3,
            b"subtype" => 4,
            b"timestamp" => 5,
            b"cwd" => 6,
            b"isMeta" => 7,
            b"isCompactSummary" => 8,
            b"compactMetadata" => 9,
            b"summarizeMetadata" => 10,
            b"message" => 11,
            b"toolUseResult" => 12,
            b"forkedFrom" => 13,
            b"customTitle" => 14,
            _ => return p.skip(0),
        };
        // serde's derive refuses a field given twice.
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => l.ty = opt_str(p)?,
            1 => l.uuid = opt_str(p)?,
            2 => l.parent_uuid = opt_str(p)?,
            3 => l.logical = opt_str(p)?,
            4 => l.subtype = opt_str(p)?,
            5 => l.timestamp = opt_str(p)?,
            6 => l.cwd = opt_str(p)?,
            7 => l.is_meta = p.opt_bool()?,
            8 => l.is_compact_summary = p.opt_bool()?,
            9 => {
                l.compact = p.opt_object(|p| {
                    let mut c = CompactMeta::default();
                    let mut once = false;
                    p.object(|k, p| match k {
                        b"preservedSegment" if !std::mem::replace(&mut once, true) => {
                            c.preserved = p.opt_object(|p| {
                                let mut s = Preserved::default();
                                let mut once = false;
                                p.object(|k, p| match k {
                                    b"tailUuid" if !std::mem::replace(&mut once, true) => {
                                        s.tail = opt_str(p)?;
                                        Some(())
                                    }
                                    b"tailUuid" => None,
                                    _ => p.skip(0),
                                })?;
                                Some(s)
                            })?;
                            Some(())
                        }
                        b"preservedSegment" => None,
                        _ => p.skip(0),
                    })?;
                    Some(c)
                })?
            }
            10 => {
                l.summarize = p.opt_object(|p| {
                    let mut d = None;
                    p.one_field(b"direction", |p| {
                        d = opt_str(p)?;
                        Some(())
                    })?;
                    Some(SummarizeMeta { direction: d })
                })?
            }
            11 => l.message = p.opt_object(message)?,
            12 => l.tool_use_result = tool_use_result(p)?,
            13 => {
                l.forked_from = p.opt_object(|p| {
                    let mut s = None;
                    p.one_field(b"sessionId", |p| {
                        s = opt_str(p)?;
                        Some(())
                    })?;
                    Some(ForkedFrom { session_id: s })
                })?
            }
            _ => l.custom_title = opt_str(p)?,
        }
        Some(())
    })?;
    p.ws();
    (p.i == line.len()).then_some(l)
}

fn message<'a>(p: &mut P<'a>) -> Option<Message<'a>> {
    let mut m = Message::default();
    let mut seen = 0u8;
    p.object(|k, p| {
        match k {
            b"id" if seen & 1 == 0 => {
                seen |= 1;
                m.id = opt_str(p)?;
            }
            b"content" if seen & 2 == 0 => {
                seen |= 2;
                m.content = match p.peek()? {
                    b'n' => {
                        p.lit(b"null")?;
                        None
                    }
                    b'"' => Some(Content::Text(p.string()?)),
                    b'[' => Some(Content::Blocks(blocks(p)?)),
                    // An object or a scalar: serde reads it as "other";
                    // rare enough to leave to it.
                    _ => return None,
                };
            }
            b"id" | b"content" => return None,
            _ => p.skip(0)?,
        }
        Some(())
    })?;
    Some(m)
}

/// `message.content` blocks; an element that is not an object is left to
/// serde.
fn blocks<'a>(p: &mut P<'a>) -> Option<Vec<Block<'a>>> {
    let mut out = Vec::new();
    p.array(|p| {
        let mut b = Block {
            ty: Cow::Borrowed(""),
            id: None,
            name: None,
            tool_use_id: None,
            text: None,
        };
        let mut seen = 0u8;
        if p.peek()? != b'{' {
            return None;
        }
        p.object(|k, p| {
            let bit = match k {
                b"type" => 0,
                b"id" => 1,
                b"name" => 2,
                b"tool_use_id" => 3,
                b"text" => 4,
                _ => return p.skip(0),
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            let v = opt_str(p)?.map(|s| s.0);
            match bit {
                0 => b.ty = v.unwrap_or_default(),
                1 => b.id = v.map(Cow::into_owned),
                2 => b.name = v.map(Cow::into_owned),
                3 => b.tool_use_id = v.map(Cow::into_owned),
                _ => b.text = v,
            }
            Some(())
        })?;
        out.push(b);
        Some(())
    })?;
    Some(out)
}

/// `toolUseResult`: `agentId` when it is an object that has one.
fn tool_use_result(p: &mut P<'_>) -> Option<Option<AgentIdOf>> {
    match p.peek()? {
        b'n' => {
            p.lit(b"null")?;
            Some(None)
        }
        b'{' => {
            let mut found = None;
            p.one_field(b"agentId", |p| {
                found = opt_str(p)?.map(|s| s.0.into_owned());
                Some(())
            })?;
            Some(Some(AgentIdOf(found)))
        }
        // serde reads a string whole (checked as text).
        b'"' => {
            p.string()?;
            Some(Some(AgentIdOf(None)))
        }
        _ => {
            p.skip(0)?;
            Some(Some(AgentIdOf(None)))
        }
    }
}

/// A string or null, as the scan's [`Str`].
fn opt_str<'a>(p: &mut P<'a>) -> Option<Option<Str<'a>>> {
    p.opt_str().map(|o| o.map(Str))
}

#[cfg(test)]
mod tests {
    use super::super::scan::Line;
    use super::line;

    /// The fast path says nothing or what serde says.
    fn agrees(l: &[u8]) {
        let fast = line(l).map(|x| format!("{x:?}"));
        let full = serde_json::from_slice::<Line>(l)
            .ok()
            .map(|x| format!("{x:?}"));
        if fast.is_some() {
            assert_eq!(fast, full, "{}", String::from_utf8_lossy(l));
        }
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        crate::sources::test_util::fixture_lines("claude-code")
    }

    #[test]
    fn agrees_with_serde_on_every_fixture_line_and_answers_most() {
        let lines = fixture_lines();
        let mut answered = 0;
        for l in &lines {
            agrees(l);
            answered += usize::from(line(l).is_some());
        }
        // Every recorded line serde reads is plain enough for the fast path
        // (`history.jsonl`'s numeric timestamps are no session line).
        let json = lines
            .iter()
            .filter(|l| serde_json::from_slice::<Line>(l).is_ok())
            .count();
        assert_eq!(answered, json);
    }

    #[test]
    fn agrees_on_cut_and_damaged_lines() {
        let lines = fixture_lines();
        let some: Vec<&Vec<u8>> = lines.iter().filter(|l| l.len() > 50).take(12).collect();
        for l in some {
            // Every cut: none is whole JSON but the full line.
            for n in 0..l.len() {
                assert!(line(&l[..n]).is_none() || serde_json::from_slice::<Line>(&l[..n]).is_ok());
            }
            // One byte changed at a time to each of a few troublemakers.
            for at in (0..l.len()).step_by(7) {
                for &c in b"\"\\{}[],:0 \x01\xff" {
                    let mut m = l.clone();
                    m[at] = c;
                    agrees(&m);
                }
            }
        }
    }

    #[test]
    fn leaves_the_unsure_to_serde() {
        let twice = br#"{"type":"user","uuid":"8b0161b3-7395-4709-9383-037d1ebc0af3","uuid":"8b0161b3-7395-4709-9383-037d1ebc0af4"}"#;
        assert!(line(twice).is_none());
        let escaped_key = br#"{"typ\u0065":"user"}"#;
        assert!(line(escaped_key).is_none());
        assert_eq!(
            serde_json::from_slice::<Line>(escaped_key)
                .unwrap()
                .ty
                .map(|s| s.0.into_owned()),
            Some("user".into())
        );
        let trailing = br#"{"type":"user"} x"#;
        assert!(line(trailing).is_none());
        let escaped = br#"{"type":"user","message":{"content":"a\nb \u00e9 \ud83d\ude00"},"x":[1,-2.5e3,true,null,{"y":"\u0001"}]}"#;
        agrees(escaped);
        assert!(line(escaped).is_some());
        // A control character inside a skipped string is no JSON.
        assert!(line(b"{\"x\":\"a\x01b\"}").is_none());
        assert!(serde_json::from_slice::<Line>(b"{\"x\":\"a\x01b\"}").is_err());
    }
}
