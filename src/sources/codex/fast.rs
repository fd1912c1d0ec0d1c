//! The fast path of reading one rollout line: a single pass over the bytes
//! that checks the line is JSON and picks out what [`super::rollout`]
//! keeps of a `response_item`, `event_msg` or `compacted` line (its time,
//! ordinal, kind, call id and name, prompt text, token total), skipping
//! everything else. It answers only when sure to agree with the serde
//! parse; anything it does not expect (a field twice, an escaped or
//! non-ASCII key where fields are looked up, a field of another type, a
//! `session_meta`, a rollback, a spawn, a number it would have to think
//! about) is `None`, and the caller parses the line with serde (which then
//! also gives the error of a bad line).
//!
//! The cursor is the one every fast path shares
//! ([`crate::read::json_cursor`]): skipped values are checked as serde's
//! own skipping checks them, fields read as serde's string parse does.

use crate::read::json_cursor::Cursor as P;
use std::borrow::Cow;

use super::rollout::{item_of, Parsed};

/// What a line says: its timestamp, ordinal (if stated) and kind; `None`:
/// ask serde.
pub(super) fn line(line: &[u8]) -> Option<(Option<Cow<'_, str>>, Option<u64>, Parsed<'_>)> {
    // A control character is no JSON inside a string; most lines have
    // none at all, and then strings need no byte-by-byte check.
    let (ctl, high) = scan(line);
    // serde takes the raw values it keeps (`content`, `info`, …) as text:
    // a line that is no UTF-8 is serde's to judge.
    if high {
        std::str::from_utf8(line).ok()?;
    }
    let mut p = P { b: line, i: 0, ctl };
    let (mut ts, mut ordinal, mut ty, mut payload) = (None, None, None, None);
    let mut seen = 0u8;
    p.object(|k, p| {
        let bit = match k {
            b"timestamp" => 0,
            b"ordinal" => 1,
            b"type" => 2,
            b"payload" => 3,
            _ => return p.skip(0),
        };
        // serde's derive refuses a field given twice.
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => ts = p.opt_str()?,
            1 => ordinal = p.opt_u64()?,
            2 => ty = p.opt_str()?,
            _ => payload = Some(fields(p)?),
        }
        Some(())
    })?;
    p.ws();
    if p.i != line.len() {
        return None;
    }
    let kind = match ty.as_deref()? {
        "response_item" => item(&payload?)?,
        "event_msg" => event(&payload?)?,
        "compacted" => Parsed::Compacted,
        // The thread's meta, and a line without a type (warned of), are
        // serde's.
        "session_meta" | "" => return None,
        _ => Parsed::Other,
    };
    Some((ts, ordinal, kind))
}

/// Whether `line` may hold a byte below 0x20 (exact for ASCII lines; a
/// line with other bytes may say so wrongly, which only costs checking
/// its strings byte by byte), and whether it holds a byte past ASCII.
fn scan(line: &[u8]) -> (bool, bool) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let (mut ctl, mut high) = (0u64, 0u64);
    let mut words = line.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().unwrap_or_default());
        high |= x;
        ctl |= x.wrapping_sub(LO * 0x20) & !x;
    }
    let rest = words.remainder();
    let ctl = ctl & HI != 0 || rest.iter().any(|&c| c < 0x20);
    let high = high & HI != 0 || rest.iter().any(|&c| c >= 0x80);
    (ctl, high)
}

/// A number with an exponent or of many digits somewhere in `raw` (one
/// that may not fit an `f64`); strings may trip it, which only costs the
/// fast path.
fn has_exponent_or_long(raw: &[u8]) -> bool {
    let mut run = 0;
    for &c in raw {
        match c {
            b'0'..=b'9' => {
                run += 1;
                if run > 18 {
                    return true;
                }
            }
            b'e' | b'E' if run > 0 => return true,
            _ => run = 0,
        }
    }
    false
}

/// The payload fields the kinds need.
#[derive(Default)]
struct Fields<'a> {
    ty: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    /// `content` unread: where it starts; `info` unread: where it is.
    content: Option<usize>,
    info: Option<(usize, usize)>,
    /// `item.type` is `CollabAgentToolCall`, or not readable here.
    collab: bool,
    line: &'a [u8],
    ctl: bool,
}

/// The payload object; fields serde reads typed that these kinds don't
/// need (`session_meta`'s, a rollback's `num_turns`) make it serde's.
fn fields<'a>(p: &mut P<'a>) -> Option<Fields<'a>> {
    let mut f = Fields {
        line: p.b,
        ctl: p.ctl,
        ..Fields::default()
    };
    let mut seen = 0u32;
    p.object(|k, p| {
        let bit = match k {
            b"type" => 0,
            b"role" => 1,
            b"name" => 2,
            b"call_id" => 3,
            b"id" => 4,
            b"content" => 5,
            b"info" => 6,
            b"item" => 7,
            b"history_base" => 8,
            b"source" => 9,
            // `session_meta`'s, typed for every line.
            b"cwd" => 10,
            b"timestamp" => 11,
            b"forked_from_id" => 12,
            b"parent_thread_id" => 13,
            b"agent_nickname" => 14,
            b"agent_role" => 15,
            b"cli_version" => 16,
            b"num_turns" => 17,
            b"forked_from_ordinal_exclusive" => 18,
            _ => return p.skip(0),
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            0 => f.ty = p.opt_str()?,
            1 => f.role = p.opt_str()?,
            2 => f.name = p.opt_str()?,
            3 => f.call_id = p.opt_str()?,
            4 => {
                p.opt_str()?;
            }
            5 => {
                f.content = (p.peek()? != b'n').then_some(p.i);
                p.skip(0)?;
            }
            6 => {
                let start = p.i;
                let null = p.peek()? == b'n';
                p.skip(0)?;
                f.info = (!null).then_some((start, p.i));
            }
            7 => f.collab = collab(p)?,
            8 | 9 => p.skip(0)?,
            17 | 18 => {
                p.opt_u64()?;
            }
            _ => {
                p.opt_str()?;
            }
        }
        Some(())
    })?;
    Some(f)
}

/// `item`: whether it is a `CollabAgentToolCall` (or anything this path
/// can't tell from it); any other item is no spawn.
fn collab(p: &mut P<'_>) -> Option<bool> {
    if p.peek()? != b'{' {
        p.skip(0)?;
        return Some(true);
    }
    let (mut found, mut once) = (false, false);
    p.object(|k, p| {
        if k != b"type" {
            return p.skip(0);
        }
        if std::mem::replace(&mut once, true) {
            found = true;
            return p.skip(0);
        }
        match p.peek()? {
            b'"' => found |= p.string()? == "CollabAgentToolCall",
            b'n' => p.lit(b"null")?,
            _ => {
                found = true;
                p.skip(0)?;
            }
        }
        Some(())
    })?;
    Some(found)
}

impl<'a> Fields<'a> {
    fn cursor(&self, at: usize) -> P<'a> {
        P {
            b: self.line,
            i: at,
            ctl: self.ctl,
        }
    }

    /// A user message's first text, as `rollout::first_text` reads it.
    fn first_text(&self) -> Option<String> {
        let Some(at) = self.content else {
            return Some(String::new());
        };
        let mut p = self.cursor(at);
        match p.peek()? {
            b'"' => p.string().map(Cow::into_owned),
            b'[' => {
                let mut first: Option<Cow<'a, str>> = None;
                p.array(|p| {
                    if p.peek()? != b'{' {
                        return None;
                    }
                    let mut once = false;
                    p.object(|k, p| {
                        if k != b"text" {
                            return p.skip(0);
                        }
                        if std::mem::replace(&mut once, true) {
                            return None;
                        }
                        let t = p.opt_str()?;
                        if first.is_none() {
                            first = t;
                        }
                        Some(())
                    })
                })?;
                Some(first.map(Cow::into_owned).unwrap_or_default())
            }
            _ => None,
        }
    }

    /// `info.total_token_usage.total_tokens`, when a plain integer.
    fn total_tokens(&self) -> Option<Option<u64>> {
        let Some((at, end)) = self.info else {
            return Some(None);
        };
        // serde reads `info` whole as a value, so a number out of range
        // or a lone surrogate anywhere in it makes it none: left to serde.
        let raw = &self.line[at..end];
        let escape_u = memchr::memchr_iter(b'\\', raw).any(|i| raw.get(i + 1) == Some(&b'u'));
        if escape_u || has_exponent_or_long(raw) {
            return None;
        }
        let mut p = self.cursor(at);
        let mut total = None;
        p.one_field(b"total_token_usage", |p| {
            if p.peek()? != b'{' {
                return p.skip(0);
            }
            p.one_field(b"total_tokens", |p| {
                total = match p.peek()? {
                    b'0'..=b'9' => p.opt_u64()?,
                    _ => {
                        p.skip(0)?;
                        None
                    }
                };
                Some(())
            })
        })?;
        Some(total)
    }
}

fn item<'a>(f: &Fields<'a>) -> Option<Parsed<'a>> {
    let s = |c: &Option<Cow<'a, str>>| c.clone().unwrap_or(Cow::Borrowed(""));
    item_of(
        f.ty.as_deref().unwrap_or(""),
        f.role.as_deref().unwrap_or(""),
        || s(&f.call_id),
        || f.name.clone().unwrap_or_else(|| s(&f.ty)),
        || f.first_text(),
    )
}

fn event<'a>(f: &Fields<'a>) -> Option<Parsed<'a>> {
    Some(match f.ty.as_deref().unwrap_or("") {
        "task_started" | "turn_started" => Parsed::TurnStarted,
        "task_complete" | "turn_complete" => Parsed::TurnComplete,
        "token_count" => Parsed::Tokens(f.total_tokens()?),
        "item_completed" if f.collab => return None,
        "thread_rolled_back" => return None,
        _ => Parsed::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::super::rollout::{kind_of, Line};
    use super::line;

    type View = (Option<String>, Option<u64>, String);

    /// What the serde parse makes of a line the fast path may answer.
    fn slow(l: &[u8]) -> Option<View> {
        let v: Line = serde_json::from_slice(l).ok()?;
        let ty = v.ty.as_deref()?;
        if ty == "session_meta" || ty.is_empty() {
            return None;
        }
        let p = v.payload.unwrap_or_default();
        let kind = format!("{:?}", kind_of(ty, &p));
        Some((v.timestamp.map(|t| t.into_owned()), v.ordinal, kind))
    }

    fn fast(l: &[u8]) -> Option<View> {
        let (ts, ord, kind) = line(l)?;
        Some((ts.map(|t| t.into_owned()), ord, format!("{kind:?}")))
    }

    /// The fast path says nothing or what serde says.
    fn agrees(l: &[u8]) -> bool {
        let f = fast(l);
        if f.is_some() {
            assert_eq!(f, slow(l), "{}", String::from_utf8_lossy(l));
        }
        f.is_some()
    }

    fn fixture_lines() -> Vec<Vec<u8>> {
        crate::sources::test_util::fixture_lines("codex")
    }

    /// Lines of the shapes Codex writes, and others it might.
    fn made_lines() -> Vec<Vec<u8>> {
        [
            r#"{"timestamp":"2026-12-04T12:00:00.001Z","ordinal":3,"type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}"#,
            r#"{"type":"response_item","ordinal":4,"payload":{"role":"user","type":"message","content":[{"type":"input_text","text":"a \"quoted\" \u00e9 prompt"},{"text":"second"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":"<environment_context>x</environment_context>"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"image"},{"text":null},{"text":"late"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":null}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"text":"x"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"ls\"}","call_id":"call_1"}}"#,
            r#"{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c2","action":{"command":["ls"]}}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2","output":"ok\n"}}"#,
            r#"{"type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"abc"}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1,"total_tokens":42},"last":{"total_tokens":1.5e3}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":42},"x":1e999}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":-4}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":18446744073709551616}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":"n"}}}"#,
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CollabAgentToolCall","tool":"spawn_agent","id":"s","receiver_thread_ids":["a"]}}}"#,
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u"}}}"#,
            r#"{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}"#,
            r#"{"type":"compacted","payload":{"message":"summary","replacement_history":[]}}"#,
            r#"{"type":"turn_context","payload":{"cwd":"/p","model":"m"}}"#,
            r#"{"type":"turn_context","payload":{"cwd":5}}"#,
            r#"{"type":"world_state","ordinal":9,"payload":{"num_turns":"x"}}"#,
            r#"{"type":"response_item","ordinal":1.0,"payload":{"type":"message"}}"#,
            r#"{"type":"response_item","ordinal":-1,"payload":{"type":"message"}}"#,
            r#"{"type":"response_item","ordinal":null,"timestamp":null,"payload":{"type":"message","role":null}}"#,
            r#"{"type":"response_item","type":"event_msg","payload":{}}"#,
            r#"{"type":"response_item","payload":{"type":"message","type":"reasoning"}}"#,
            r#"{"type":"response_item","payload":["message","user"]}"#,
            r#"{"type":"response_item","payload":null}"#,
            r#"{"type":"brand_new","payload":{"anything":[1,{"a":null}]}}"#,
            r#"{"type":"session_meta","payload":{"id":"t"}}"#,
            r#"{"typ\u0065":"response_item","payload":{}}"#,
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .chain([
            // Not UTF-8 in a skipped value, and in a read one.
            b"{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"x\":\"caf\xe9\"}}".to_vec(),
            b"{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"caf\xe9\"}}".to_vec(),
        ])
        .collect()
    }

    #[test]
    fn agrees_with_serde_on_every_fixture_line_and_answers_most() {
        let lines = fixture_lines();
        let (mut answered, mut could) = (0, 0);
        for l in &lines {
            let a = agrees(l);
            answered += usize::from(a);
            could += usize::from(slow(l).is_some());
        }
        // Fixture lines serde reads, bar rollbacks and spawns, are plain
        // enough for the fast path.
        assert!(answered * 10 >= could * 9, "{answered} of {could}");
        let mut made = 0;
        for l in made_lines() {
            made += usize::from(agrees(&l));
        }
        assert!(made > 15, "{made}");
    }

    #[test]
    fn the_byte_scan_misses_no_control_or_non_ascii_byte() {
        let bytes: Vec<u8> = (0..=255u8).collect();
        for len in 0..40 {
            for at in 0..len {
                for &c in &bytes {
                    let mut l = vec![b'a'; len];
                    l[at] = c;
                    if at > 0 {
                        l[at - 1] = 0x9f;
                    }
                    let (ctl, high) = super::scan(&l);
                    assert!(ctl || !l.iter().any(|&b| b < 0x20), "{l:?}");
                    assert_eq!(high, l.iter().any(|&b| b >= 0x80), "{l:?}");
                    if l.is_ascii() {
                        assert_eq!(ctl, l.iter().any(|&b| b < 0x20), "{l:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn agrees_on_cut_and_damaged_lines() {
        let mut lines: Vec<Vec<u8>> = fixture_lines()
            .into_iter()
            .filter(|l| l.len() > 50 && l.len() < 3000)
            .take(40)
            .collect();
        lines.extend(made_lines());
        for l in &lines {
            // Every cut: none is whole JSON but the full line.
            for n in 0..l.len() {
                assert!(fast(&l[..n]).is_none() || slow(&l[..n]).is_some());
            }
            // One byte changed at a time to each of a few troublemakers.
            for at in (0..l.len()).step_by(3) {
                for &c in b"\"\\{}[],:0 \x01\xffe-n" {
                    let mut m = l.clone();
                    m[at] = c;
                    agrees(&m);
                }
            }
        }
    }
}
