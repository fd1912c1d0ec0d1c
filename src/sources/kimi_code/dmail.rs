//! A D-Mail into a live Kimi Code session, through the server that has it
//! loaded: (1) check by Kimi Code's own undo rule over `GET …/messages`
//! that N turns can be undone, touching nothing if not; (2) if a turn
//! runs, abort the queued prompts and the turn, and wait for idle; (3)
//! `:undo {count: N}`; (4) the message as the next prompt, with a
//! client-chosen `prompt_id` and `metadata.worldline.kind = "dmail"`, which
//! the wire keeps as the message's `origin.clientMetadata` (how the D-Mail
//! is read back). Not atomic: a prompt slipping in between the steps is
//! detected and said.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_64;

use super::server::{self, Api, Served};
use super::{home, Home};
use crate::denwa::{Back, TurnsError, TurnsSent, TurnsStatus};

/// Pages of 100 messages read at most (a bound, not a session size).
const MAX_PAGES: usize = 500;
/// How long an aborted turn may take to stop.
const IDLE_WAIT: Duration = Duration::from_secs(30);

/// Kimi Code's refusal codes (HTTP 200, nonzero `code`).
pub const UNDO_UNAVAILABLE: i64 = 40911;
pub const SESSION_BUSY: i64 = 40901;
pub const PROMPT_ID_CONFLICT: i64 = 40927;

/// One message as the undo rule needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub id: String,
    pub role: String,
    /// `metadata.origin.kind` (absent: a user's).
    pub origin: Option<String>,
    pub in_turn: bool,
    /// `origin.trigger` (skills and plugin commands typed by the user).
    pub trigger: Option<String>,
    /// Its text parts, joined.
    pub text: String,
}

impl Msg {
    pub fn from_json(v: &Value) -> Msg {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        Msg {
            id: s("/id").unwrap_or_default(),
            role: s("/role").unwrap_or_default(),
            origin: s("/metadata/origin/kind"),
            in_turn: v
                .pointer("/metadata/origin/inTurn")
                .and_then(Value::as_bool)
                == Some(true),
            trigger: s("/metadata/origin/trigger"),
            text: v
                .get("content")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("")
                })
                .unwrap_or_default(),
        }
    }

    /// Kimi Code's `isUndoAnchor`: a prompt a user typed.
    fn is_anchor(&self) -> bool {
        if self.role != "user" || self.in_turn {
            return false;
        }
        match self.origin.as_deref() {
            None | Some("user") => true,
            Some("skill_activation" | "plugin_command") => {
                self.trigger.as_deref() == Some("user-slash")
            }
            _ => false,
        }
    }
}

/// Kimi Code's `computeUndoCut`, over messages oldest first: walking back,
/// injections are passed over, a compaction summary stops the walk, and
/// every anchor is one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub removed: u32,
    pub stopped_at_compaction: bool,
    /// The oldest anchor the cut removes.
    pub from_id: Option<String>,
}

pub fn undo_cut(msgs: &[Msg], count: u32) -> Cut {
    let mut cut = Cut {
        removed: 0,
        stopped_at_compaction: false,
        from_id: None,
    };
    for m in msgs.iter().rev() {
        if cut.removed >= count {
            break;
        }
        match m.origin.as_deref() {
            Some("injection") => continue,
            Some("compaction_summary") => {
                cut.stopped_at_compaction = true;
                break;
            }
            _ => {}
        }
        if m.is_anchor() {
            cut.removed += 1;
            cut.from_id = Some(m.id.clone());
        }
    }
    cut
}

/// Kimi Code's own words for a refused undo (`formatUndoUnavailableMessage`).
pub fn refusal(cut: &Cut, count: u32) -> Option<String> {
    if cut.removed >= count && cut.from_id.is_some() {
        return None;
    }
    Some(if cut.stopped_at_compaction {
        "Nothing to undo: would cross a compaction boundary".to_string()
    } else if cut.removed == 0 {
        "Nothing to undo: no user message to undo".to_string()
    } else {
        format!(
            "Nothing to undo: only {} of {count} requested turn(s) available",
            cut.removed
        )
    })
}

/// Turns of the current world line: its anchors.
pub fn turns(msgs: &[Msg]) -> u32 {
    u32::try_from(msgs.iter().filter(|m| m.is_anchor()).count()).unwrap_or(u32::MAX)
}

/// Every message of the session's current world line, oldest first.
fn messages(api: &Api, id: &str) -> Result<Vec<Msg>, TurnsError> {
    let mut newest_first: Vec<Msg> = Vec::new();
    let mut before: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut path = format!("/sessions/{id}/messages?page_size=100");
        if let Some(b) = &before {
            path.push_str(&format!("&before_id={b}"));
        }
        let r = api.get(&path).map_err(TurnsError::Failed)?;
        if !r.ok() {
            return Err(TurnsError::Failed(format!(
                "listing the messages: {}",
                r.reason()
            )));
        }
        let items = r
            .data
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        newest_first.extend(items.iter().map(Msg::from_json));
        let more = r.data.get("has_more").and_then(Value::as_bool) == Some(true);
        match newest_first.last() {
            Some(last) if more && !items.is_empty() => before = Some(last.id.clone()),
            _ => {
                newest_first.reverse();
                return Ok(newest_first);
            }
        }
    }
    Err(TurnsError::Failed(format!(
        "the session has more than {} messages",
        MAX_PAGES * 100
    )))
}

fn find(home: &Home, dir: &Path, load: bool) -> Result<(String, Api, Served), TurnsError> {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (api, served) = server::server_for(home, &id, load).map_err(TurnsError::NoServer)?;
    Ok((id, api, served))
}

/// `send --status`: which server, loaded and busy, how many turns back. A
/// session loaded nowhere is only named: listing its messages would load it.
pub fn status(home: &Home, dir: &Path) -> Result<TurnsStatus, TurnsError> {
    let (id, api, served) = find(home, dir, true)?;
    let mut st = TurnsStatus {
        server: served.instance.describe(),
        loaded: served.loaded,
        busy: served.busy,
        turns: None,
        undoable: None,
        stopped_at_compaction: false,
    };
    if served.loaded {
        let msgs = messages(&api, &id)?;
        let cut = undo_cut(&msgs, u32::MAX);
        st.turns = Some(turns(&msgs));
        st.undoable = Some(cut.removed);
        st.stopped_at_compaction = cut.stopped_at_compaction;
    }
    Ok(st)
}

/// The `prompt_id` of a D-Mail: the same D-Mail to the same turn of the
/// same session has the same id, so a retry is recognised in the wire.
pub fn prompt_id(session: &str, from_turn: &str, message: &str) -> String {
    let h = xxh3_64(format!("{session}\n{from_turn}\n{message}").as_bytes());
    format!("wl-dmail-{h:016x}")
}

/// Sends a D-Mail `back` turns into the session at `dir`.
pub fn send(
    home: &Home,
    dir: &Path,
    back: Back,
    message: &str,
    load: bool,
) -> Result<TurnsSent, TurnsError> {
    let (id, api, served) = find(home, dir, load)?;
    let server = served.instance.describe();
    // (1) Kimi Code's rule, before touching anything.
    let msgs = messages(&api, &id)?;
    let total = turns(&msgs);
    let n = match back {
        Back::Turns(n) => n,
        Back::KeepTurns(k) if k >= total => {
            return Err(TurnsError::Refused(format!(
                "the current world line has {total} turn(s): keeping {k} undoes nothing"
            )))
        }
        Back::KeepTurns(k) => total - k,
        Back::Checkpoint(_) => return Err(TurnsError::Refused(
            "a Kimi Code session goes back by turns (--turns-back N or --turn K), not checkpoints"
                .into(),
        )),
    };
    if n == 0 {
        return Err(TurnsError::Refused(
            "a D-Mail goes back at least one turn".into(),
        ));
    }
    let cut = undo_cut(&msgs, n);
    if let Some(why) = refusal(&cut, n) {
        return Err(TurnsError::Refused(format!("{why} (nothing was changed)")));
    }
    let from = cut.from_id.clone().unwrap_or_default();
    let pid = prompt_id(&id, &from, message);
    // A retry of a D-Mail that landed must not undo again.
    if wire_has_id(&home::agent_wire(dir, "main"), &pid) {
        return Err(TurnsError::Refused(format!(
            "this D-Mail was already delivered (prompt {pid} is in the wire); nothing was changed"
        )));
    }
    let newest_msg = msgs.iter().rev().find(|m| m.is_anchor());
    // The same D-Mail just delivered (a retry after a lost answer): its
    // turn is the newest; sending it again would undo it.
    if let Some(m) = newest_msg.filter(|m| m.id.starts_with("wl-dmail-") && m.text == message) {
        return Err(TurnsError::Refused(format!(
            "this D-Mail was just delivered (prompt {}); nothing was changed",
            m.id
        )));
    }
    let newest = newest_msg.map(|m| m.id.clone());
    // (2) A running turn is aborted first, and its queued prompts with it.
    let mut aborted = false;
    if server::busy(&api, &id).map_err(TurnsError::Failed)? {
        abort(&api, &id)?;
        aborted = true;
    }
    // Just before the undo, the newest turn must still be the one checked:
    // else a prompt slipped in and the undo would take it instead.
    let now = messages(&api, &id)?;
    let newest_now = now
        .iter()
        .rev()
        .find(|m| m.is_anchor())
        .map(|m| m.id.clone());
    if newest_now != newest {
        return Err(TurnsError::Refused(format!(
            "a prompt slipped in {}: {}nothing was undone; look at the session and send again",
            if aborted {
                "while the running turn was aborted"
            } else {
                "before the undo"
            },
            if aborted {
                "the turn was aborted, "
            } else {
                ""
            }
        )));
    }
    // (3) The undo.
    let r = api
        .post(&format!("/sessions/{id}:undo"), &json!({ "count": n }))
        .map_err(TurnsError::Failed)?;
    if !r.ok() {
        let what = if r.code == SESSION_BUSY {
            format!("a prompt slipped in before the undo: {}", r.reason())
        } else {
            r.reason()
        };
        return Err(TurnsError::Refused(format!(
            "{what} ({}nothing was undone)",
            if aborted {
                "the running turn was aborted; "
            } else {
                ""
            }
        )));
    }
    // (4) The D-Mail, as the next prompt.
    let body = json!({
        "content": [{ "type": "text", "text": message }],
        "prompt_id": pid,
        "metadata": { "worldline": { "kind": "dmail", "turns": n } },
    });
    let r = api
        .post(&format!("/sessions/{id}/prompts"), &body)
        .map_err(|e| {
            TurnsError::Failed(format!(
                "{n} turn(s) were undone, but sending the D-Mail failed: {e}"
            ))
        })?;
    if !r.ok() {
        let what = match r.code {
            SESSION_BUSY => format!("a prompt slipped in after the undo: {}", r.reason()),
            PROMPT_ID_CONFLICT => format!("the D-Mail's prompt id was taken: {}", r.reason()),
            _ => r.reason(),
        };
        return Err(TurnsError::Refused(format!(
            "{n} turn(s) were undone, but the D-Mail was not taken: {what}"
        )));
    }
    Ok(TurnsSent {
        turns: n,
        prompt_id: pid,
        aborted,
        server,
    })
}

/// Aborts the queued prompts, then the running turn, and waits for idle.
fn abort(api: &Api, id: &str) -> Result<(), TurnsError> {
    if let Ok(r) = api.get(&format!("/sessions/{id}/prompts")) {
        let queued = r
            .data
            .get("queued")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for q in queued {
            if let Some(p) = q.get("prompt_id").and_then(Value::as_str) {
                let _ = api.post(
                    &format!("/sessions/{id}/prompts/{p}:abort"),
                    &server::empty(),
                );
            }
        }
    }
    let r = api
        .post(&format!("/sessions/{id}:abort"), &server::empty())
        .map_err(TurnsError::Failed)?;
    if !r.ok() {
        return Err(TurnsError::Refused(format!(
            "aborting the running turn was refused: {} (nothing was undone)",
            r.reason()
        )));
    }
    let end = Instant::now() + IDLE_WAIT;
    while Instant::now() < end {
        if !server::busy(api, id).map_err(TurnsError::Failed)? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(TurnsError::Failed(format!(
        "the aborted turn did not stop within {}s (nothing was undone)",
        IDLE_WAIT.as_secs()
    )))
}

/// Does the wire hold a message with this id? A streaming scan.
fn wire_has_id(wire: &Path, id: &str) -> bool {
    use std::io::Read;
    let needle = format!("\"id\":\"{id}\"");
    let needle = needle.as_bytes();
    let Ok(mut f) = std::fs::File::open(wire) else {
        return false;
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        carry.extend_from_slice(&buf[..n]);
        if memchr::memmem::find(&carry, needle).is_some() {
            return true;
        }
        let keep = carry.len().min(needle.len() - 1);
        carry.drain(..carry.len() - keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, role: &str, origin: Option<&str>) -> Msg {
        Msg {
            id: id.into(),
            role: role.into(),
            origin: origin.map(str::to_string),
            in_turn: false,
            trigger: None,
            text: String::new(),
        }
    }

    #[test]
    fn the_undo_rule_is_kimi_codes() {
        let msgs = vec![
            m("u1", "user", Some("user")),
            m("a1", "assistant", None),
            m("s", "user", Some("compaction_summary")),
            m("u2", "user", Some("user")),
            m("i", "user", Some("injection")),
            m("a2", "assistant", None),
            m("u3", "user", None),
        ];
        assert_eq!(turns(&msgs), 3);
        let c = undo_cut(&msgs, 1);
        assert_eq!((c.removed, c.from_id.as_deref()), (1, Some("u3")));
        assert_eq!(refusal(&c, 1), None);
        let c = undo_cut(&msgs, 3);
        assert!(c.stopped_at_compaction);
        assert_eq!(
            refusal(&c, 3).unwrap(),
            "Nothing to undo: would cross a compaction boundary"
        );
        let short = &msgs[3..];
        let c = undo_cut(short, 5);
        assert_eq!(
            refusal(&c, 5).unwrap(),
            "Nothing to undo: only 2 of 5 requested turn(s) available"
        );
        assert_eq!(
            refusal(&undo_cut(&[], 1), 1).unwrap(),
            "Nothing to undo: no user message to undo"
        );
    }

    #[test]
    fn prompt_ids_repeat_for_the_same_dmail_only() {
        let a = prompt_id("s", "u3", "hi");
        assert_eq!(a, prompt_id("s", "u3", "hi"));
        assert_ne!(a, prompt_id("s", "u2", "hi"));
        assert!(a.starts_with("wl-dmail-"));
    }
}
