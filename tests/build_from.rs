//! `Session::build_from(parts, prev)` against `Session::build(parts)` on
//! hand-written sessions that change the ways a live one does: records
//! appended to the current world line, a rotation adding one, a D-Mail
//! result arriving after its call, wire times arriving after the records
//! they time, a subagent's Agent call written after the subagent started,
//! and a file truncated and written again. Each step must equal a build
//! from scratch, and show the change.

mod common;

use std::path::{Path, PathBuf};

use common::{
    assistant, cp, cp_note, dmail_call, dmail_err, dmail_ok, revert, sys, turn, user, write,
};
use worldline::worldline::{RecordRef, Session};

/// Builds the session in `dir` from the previous step and from scratch.
struct Steps {
    prev: Option<Session>,
}

impl Steps {
    fn new() -> Steps {
        Steps { prev: None }
    }

    fn next(&mut self, dir: &Path) -> &Session {
        let parts = worldline::sources::parts(dir).unwrap();
        let full = Session::build(parts.clone());
        let incremental = Session::build_from(parts, self.prev.as_ref());
        assert!(incremental == full, "{incremental:#?}\n!=\n{full:#?}");
        self.prev.insert(incremental)
    }
}

fn append(path: &Path, lines: &[String]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn at(line: usize, record: usize) -> RecordRef {
    RecordRef {
        agent: 0,
        line,
        record,
    }
}

fn tool_call(id: &str, name: &str) -> String {
    serde_json::json!({"role": "assistant", "content": "",
        "tool_calls": [{"type": "function", "id": id, "function": {"name": name, "arguments": "{}"}}]})
    .to_string()
}

fn tool_result(id: &str, text: &str) -> String {
    serde_json::json!({"role": "tool", "content": text, "tool_call_id": id}).to_string()
}

fn wire(ts: f64, kind: &str, payload: serde_json::Value) -> String {
    serde_json::json!({"timestamp": ts, "message": {"type": kind, "payload": payload}}).to_string()
}

/// A session directory whose `context.jsonl` holds the system prompt, turn
/// 0 and `more`; its path.
fn start(more: &[String]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = vec![sys()];
    lines.extend(turn(0, "hi", "hello"));
    lines.extend_from_slice(more);
    write(tmp.path(), "context.jsonl", &lines);
    let ctx = tmp.path().join("context.jsonl");
    (tmp, ctx)
}

#[test]
fn appending_to_the_current_world_line_extends_it() {
    let (tmp, ctx) = start(&[]);
    let mut steps = Steps::new();
    assert_eq!(steps.next(tmp.path()).main().line_len(0), 5);
    for n in 1..4 {
        append(&ctx, &turn(n, "more", "sure"));
        let s = steps.next(tmp.path());
        assert_eq!(s.main().line_len(0), 5 + 4 * n as usize);
        assert_eq!(s.main().last_record(0), Some(at(0, 4 + 4 * n as usize)));
    }
}

#[test]
fn a_rotation_adds_a_world_line_with_its_sender() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("context.jsonl");
    let mut old = vec![sys()];
    old.extend(turn(0, "hi", "hello"));
    old.extend(turn(1, "do it", "trying"));
    old.push(dmail_call("d1", "go back", 1));
    old.push(dmail_ok("d1"));
    write(tmp.path(), "context.jsonl", &old);
    let mut steps = Steps::new();
    assert_eq!(steps.next(tmp.path()).main().lines.len(), 1);
    std::fs::rename(&ctx, tmp.path().join("context_1.jsonl")).unwrap();
    write(tmp.path(), "context.jsonl", &revert(&old, 1, "go back"));
    let s = steps.next(tmp.path());
    let m = s.main();
    assert_eq!(m.lines.len(), 2);
    let fork = m.lines[1].fork.clone().unwrap();
    assert_eq!(fork.sender.as_ref().map(|x| x.call), Some(at(0, 9)));
    assert_eq!(m.attempts[0].caused, Some(1));
    // The new world line grows on.
    append(&ctx, &[assistant("redone")]);
    assert_eq!(steps.next(tmp.path()).main().lines[1].fork, Some(fork));
}

#[test]
fn a_dmail_result_after_its_call_settles_the_attempt() {
    let (tmp, ctx) = start(&[dmail_call("d1", "go back", 7)]);
    let mut steps = Steps::new();
    assert_eq!(steps.next(tmp.path()).main().attempts[0].accepted, None);
    append(&ctx, &[user("unrelated")]);
    assert_eq!(steps.next(tmp.path()).main().attempts[0].accepted, None);
    append(
        &ctx,
        &[dmail_err("d1", "There is no checkpoint with the given ID")],
    );
    let s = steps.next(tmp.path());
    let a = &s.main().attempts[0];
    assert_eq!(a.accepted, Some(false));
    assert_eq!(
        a.error.as_deref(),
        Some("There is no checkpoint with the given ID")
    );
}

#[test]
fn wire_times_arriving_late_are_joined_once_they_arrive() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join("wire.jsonl");
    let mut lines = vec![sys(), cp(0), cp_note(0), user("hi"), cp(1)];
    lines.push(tool_call("c1", "ReadFile"));
    lines.push(tool_result("c1", "text"));
    lines.push(assistant("done"));
    write(tmp.path(), "context.jsonl", &lines);
    append(
        &w,
        &[
            r#"{"type": "metadata", "protocol_version": "1.10"}"#.to_string(),
            wire(100.0, "TurnBegin", serde_json::json!({"user_input": "hi"})),
        ],
    );
    let mut steps = Steps::new();
    let s = steps.next(tmp.path());
    // Checkpoint 1's step has not begun in the wire yet: turn time.
    assert_eq!(s.time(at(0, 4)), Some(100.0));
    assert_eq!(s.time(at(0, 5)), Some(100.0));
    append(&w, &[wire(101.0, "StepBegin", serde_json::json!({"n": 1}))]);
    let s = steps.next(tmp.path());
    assert_eq!(s.time(at(0, 4)), Some(101.0));
    assert_eq!(s.time(at(0, 7)), Some(101.0));
    let call = serde_json::json!({"type": "function", "id": "c1", "function": {"name": "ReadFile", "arguments": "{}"}});
    append(&w, &[wire(102.5, "ToolCall", call)]);
    let s = steps.next(tmp.path());
    assert_eq!(s.time(at(0, 5)), Some(102.5));
    // The result and what follows carry the time on.
    assert_eq!(s.time(at(0, 7)), Some(102.5));
    let result = serde_json::json!({"tool_call_id": "c1", "return_value": {"is_error": false, "output": "text"}});
    append(&w, &[wire(103.0, "ToolResult", result)]);
    let s = steps.next(tmp.path());
    assert_eq!(s.time(at(0, 6)), Some(103.0));
    assert_eq!(s.time(at(0, 7)), Some(103.0));
}

#[test]
fn a_subagent_attaches_once_its_agent_call_arrives() {
    let (tmp, ctx) = start(&[]);
    let sub = tmp.path().join("subagents/a9");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("meta.json"),
        r#"{"agent_id": "a9", "subagent_type": "coder", "created_at": 10.0}"#,
    )
    .unwrap();
    write(&sub, "context.jsonl", &[sys(), user("look around")]);
    let mut steps = Steps::new();
    let s = steps.next(tmp.path());
    assert_eq!(s.agents.len(), 2);
    assert_eq!(s.agents[1].parent_call, None);
    append(&ctx, &[tool_call("a1", "Agent")]);
    assert_eq!(steps.next(tmp.path()).agents[1].parent_call, None);
    append(
        &ctx,
        &[tool_result("a1", "agent_id: a9\nstatus: completed")],
    );
    let s = steps.next(tmp.path());
    assert_eq!(s.agents[1].parent_call, Some(at(0, 5)));
    assert_eq!(s.agents[1].parent_tool_call_id.as_deref(), Some("a1"));
    append(&ctx, &[assistant("thanks")]);
    assert_eq!(steps.next(tmp.path()).agents[1].parent_call, Some(at(0, 5)));
}

#[test]
fn a_truncated_file_is_built_afresh() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = vec![sys()];
    for n in 0..3 {
        lines.extend(turn(n, "hi", "hello"));
    }
    lines.push(dmail_call("d1", "again", 1));
    write(tmp.path(), "context.jsonl", &lines);
    let mut steps = Steps::new();
    assert_eq!(steps.next(tmp.path()).main().attempts.len(), 1);
    // Cut back and written on differently.
    let mut cut = lines[..6].to_vec();
    cut.push(assistant("other"));
    write(tmp.path(), "context.jsonl", &cut);
    let s = steps.next(tmp.path());
    assert_eq!(s.main().line_len(0), 7);
    assert!(s.main().attempts.is_empty());
}
