//! `worldline send` into a Kimi Code session through a scripted fake of its
//! server (127.0.0.1, the 2.1.0 REST envelope): the order of the four steps,
//! every refusal writing nothing (no POST), and the exit codes. The real
//! `kimi web` is driven by tests/kimi_code_bridge.sh.

mod common;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

const SID: &str = "session_0000aaaa-bbbb-cccc-dddd-eeeeffff0000";
const TOKEN: &str = "tok-secret";

/// What the fake answers; every request is logged as `METHOD path`.
#[derive(Default)]
struct Script {
    /// Messages oldest first, as `GET …/messages` pages them (newest first).
    messages: Vec<Value>,
    /// Messages once an abort ran (a prompt may slip in).
    after_abort: Option<Vec<Value>>,
    /// Messages from the second listing on (a prompt slipped in, its turn
    /// already over).
    second_listing: Option<Vec<Value>>,
    listings: usize,
    /// Answers to "busy?" in order; the last one repeats.
    busy: VecDeque<bool>,
    loaded: bool,
    undo: Option<Value>,
    prompt: Option<Value>,
    queued: Vec<String>,
    aborted: bool,
    log: Vec<String>,
    bodies: Vec<Value>,
}

fn ok(data: Value) -> Value {
    json!({"code": 0, "msg": "success", "data": data})
}

fn user(id: &str) -> Value {
    json!({"id": id, "role": "user", "content": [], "metadata": {"origin": {"kind": "user"}}})
}

fn assistant(id: &str) -> Value {
    json!({"id": id, "role": "assistant", "content": []})
}

fn compaction(id: &str) -> Value {
    json!({"id": id, "role": "user", "content": [], "metadata": {"origin": {"kind": "compaction_summary"}}})
}

fn answer(s: &mut Script, method: &str, path: &str, auth: bool, body: &Value) -> (u16, Value) {
    s.log.push(format!(
        "{method} {}",
        path.split('?').next().unwrap_or(path)
    ));
    s.bodies.push(body.clone());
    if !auth {
        return (
            401,
            json!({"code": 40101, "msg": "Unauthorized", "data": null}),
        );
    }
    let base = format!("/api/v1/sessions/{SID}");
    let rest = path.strip_prefix(&base);
    match (method, rest) {
        ("GET", Some("")) => {
            let busy = if s.busy.len() > 1 {
                s.busy.pop_front().unwrap_or(false)
            } else {
                s.busy.front().copied().unwrap_or(false)
            };
            let model = if s.loaded { "fake" } else { "" };
            (
                200,
                ok(
                    json!({"id": SID, "busy": busy, "main_turn_active": busy, "agent_config": {"model": model}}),
                ),
            )
        }
        ("GET", Some(q)) if q.starts_with("/messages") => {
            if !q.contains("before_id=") {
                s.listings += 1;
            }
            let msgs = match (&s.after_abort, s.aborted, &s.second_listing) {
                (Some(a), true, _) => a.clone(),
                (_, _, Some(m)) if s.listings >= 2 => m.clone(),
                _ => s.messages.clone(),
            };
            // Newest first, pages of 2 (to exercise paging), `before_id`.
            let mut newest: Vec<Value> = msgs.into_iter().rev().collect();
            if let Some(b) = q.split("before_id=").nth(1) {
                let at = newest
                    .iter()
                    .position(|m| m["id"] == b)
                    .map_or(newest.len(), |i| i + 1);
                newest.drain(..at);
            }
            let more = newest.len() > 2;
            newest.truncate(2);
            (200, ok(json!({"items": newest, "has_more": more})))
        }
        ("GET", Some("/prompts")) => {
            let q: Vec<Value> = s.queued.iter().map(|p| json!({"prompt_id": p})).collect();
            (
                200,
                ok(json!({"active": {"prompt_id": "running"}, "queued": q})),
            )
        }
        ("POST", Some(":abort")) => {
            s.aborted = true;
            (200, ok(json!({"aborted": true})))
        }
        ("POST", Some(a)) if a.starts_with("/prompts/") && a.ends_with(":abort") => {
            (200, ok(json!({"aborted": true})))
        }
        ("POST", Some(":undo")) => (200, s.undo.clone().unwrap_or_else(|| ok(json!({})))),
        ("POST", Some("/prompts")) => (
            200,
            s.prompt.clone().unwrap_or_else(|| {
                ok(json!({"prompt_id": body["prompt_id"], "status": "running"}))
            }),
        ),
        _ => (
            200,
            json!({"code": 40401, "msg": "not found", "data": null}),
        ),
    }
}

/// Serves `script` on 127.0.0.1 until the test ends; returns the port.
fn serve(script: Arc<Mutex<Script>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let (mut len, mut auth) = (0usize, false);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                let lower = h.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                if h.trim_end() == format!("Authorization: Bearer {TOKEN}")
                    || h.trim_end() == format!("authorization: Bearer {TOKEN}")
                {
                    auth = true;
                }
            }
            let mut body = vec![0u8; len];
            let _ = reader.read_exact(&mut body);
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, v) = answer(&mut script.lock().unwrap(), &method, &path, auth, &body);
            let text = v.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    port
}

/// A Kimi Code home with one session and, when `port` is given, one live
/// instance file (this test's own pid: alive).
fn home(port: Option<u16>, token: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = home.join("sessions/wd_p_000000000000").join(SID);
    std::fs::create_dir_all(dir.join("agents/main")).unwrap();
    std::fs::write(
        dir.join("agents/main/wire.jsonl"),
        "{\"type\":\"metadata\",\"protocol_version\":\"1.5\"}\n",
    )
    .unwrap();
    std::fs::write(dir.join("state.json"), "{}").unwrap();
    std::fs::write(home.join("server.token"), token).unwrap();
    if let Some(port) = port {
        std::fs::create_dir_all(home.join("server/instances")).unwrap();
        std::fs::write(
            home.join("server/instances/01X.json"),
            json!({"server_id": "01X", "pid": std::process::id(), "host": "127.0.0.1",
                   "port": port, "heartbeat_at": 0, "host_version": "2.1.0"})
            .to_string(),
        )
        .unwrap();
    }
    (tmp, dir)
}

fn send(home_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = common::worldline()
        .arg("send")
        .args(args)
        .env("KIMI_CODE_HOME", home_dir)
        .env("KIMI_SHARE_DIR", home_dir.join("no-kimi-cli"))
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn three_turns() -> Vec<Value> {
    vec![
        user("u1"),
        assistant("a1"),
        user("u2"),
        assistant("a2"),
        user("u3"),
        assistant("a3"),
    ]
}

fn setup(script: Script) -> (Arc<Mutex<Script>>, tempfile::TempDir, PathBuf) {
    let script = Arc::new(Mutex::new(script));
    let port = serve(script.clone());
    let (tmp, dir) = home(Some(port), TOKEN);
    (script, tmp, dir)
}

fn posts(s: &Arc<Mutex<Script>>) -> Vec<String> {
    s.lock()
        .unwrap()
        .log
        .iter()
        .filter(|l| l.starts_with("POST"))
        .cloned()
        .collect()
}

#[test]
fn an_idle_session_is_undone_then_prompted_with_the_dmail() {
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, out, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "2", "--message", "take the other road"],
    );
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("2 turn(s) undone"), "{out}");
    let p = s.lock().unwrap();
    let posts: Vec<&String> = p.log.iter().filter(|l| l.starts_with("POST")).collect();
    let base = format!("/api/v1/sessions/{SID}");
    assert_eq!(
        posts,
        [
            &format!("POST {base}:undo"),
            &format!("POST {base}/prompts")
        ]
    );
    let undo = &p.bodies[p.log.iter().position(|l| l.ends_with(":undo")).unwrap()];
    assert_eq!(undo, &json!({"count": 2}));
    let prompt = p.bodies.last().unwrap();
    assert_eq!(prompt["content"][0]["text"], "take the other road");
    assert_eq!(prompt["metadata"]["worldline"]["kind"], "dmail");
    assert_eq!(prompt["metadata"]["worldline"]["turns"], 2);
    assert!(prompt["prompt_id"]
        .as_str()
        .unwrap()
        .starts_with("wl-dmail-"));
}

#[test]
fn keep_turns_undoes_the_rest() {
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turn", "1", "--message", "x"],
    );
    assert_eq!(code, 0, "{err}");
    let p = s.lock().unwrap();
    let i = p.log.iter().position(|l| l.ends_with(":undo")).unwrap();
    assert_eq!(p.bodies[i], json!({"count": 2}));
}

#[test]
fn a_running_turn_is_aborted_with_its_queue_first() {
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false, true, true, false].into(),
        loaded: true,
        queued: vec!["q1".into()],
        ..Script::default()
    });
    let (code, out, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "stop"],
    );
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("running turn aborted"), "{out}");
    let base = format!("/api/v1/sessions/{SID}");
    assert_eq!(
        posts(&s),
        [
            format!("POST {base}/prompts/q1:abort"),
            format!("POST {base}:abort"),
            format!("POST {base}:undo"),
            format!("POST {base}/prompts"),
        ]
    );
}

#[test]
fn a_prompt_slipping_in_during_the_abort_stops_before_the_undo() {
    let mut after = three_turns();
    after.push(user("u4"));
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        after_abort: Some(after),
        busy: [false, true, false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "x"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("slipped in"), "{err}");
    assert!(
        !posts(&s).iter().any(|p| p.ends_with(":undo")),
        "{:?}",
        posts(&s)
    );
}

#[test]
fn refusals_touch_nothing_and_say_kimi_codes_reason() {
    // Too many turns.
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [true].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "5", "--message", "x"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("only 3 of 5 requested turn(s) available"),
        "{err}"
    );
    assert!(
        posts(&s).is_empty(),
        "a refusal must not abort, undo or prompt: {:?}",
        posts(&s)
    );

    // A compaction boundary.
    let (s, tmp, _) = setup(Script {
        messages: vec![user("u1"), compaction("c"), user("u2")],
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "2", "--message", "x"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("compaction boundary"), "{err}");
    assert!(posts(&s).is_empty());

    // The server refuses the undo (a turn started meanwhile): no prompt.
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        undo: Some(
            json!({"code": 40901, "msg": "Cannot undo while a turn is active or queued.", "data": null}),
        ),
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "x"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("slipped in before the undo") && err.contains("nothing was undone"),
        "{err}"
    );
    assert!(!posts(&s).iter().any(|p| p.ends_with("/prompts")));

    // Keeping every turn undoes nothing.
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turn", "3", "--message", "x"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(posts(&s).is_empty());
}

#[test]
fn a_dmail_already_in_the_wire_is_not_sent_twice() {
    let (s, tmp, dir) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "once"],
    );
    assert_eq!(code, 0, "{err}");
    let pid = s.lock().unwrap().bodies.last().unwrap()["prompt_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Kimi Code wrote it; the server's history did not change yet (a retry
    // after a lost answer).
    let wire = dir.join("agents/main/wire.jsonl");
    let mut text = std::fs::read_to_string(&wire).unwrap();
    text.push_str(&format!(
        "{{\"type\":\"context.append_message\",\"message\":{{\"role\":\"user\",\"content\":[],\"id\":\"{pid}\"}}}}\n"
    ));
    std::fs::write(&wire, text).unwrap();
    s.lock().unwrap().log.clear();
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "once"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("already delivered"), "{err}");
    assert!(posts(&s).is_empty());
}

#[test]
fn no_server_a_wrong_token_or_an_unloaded_session_exit_2() {
    // No instance file.
    let (tmp, _) = home(None, TOKEN);
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "x"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("no Kimi Code server is running") && err.contains("/web"),
        "{err}"
    );

    // A stale instance file (a dead pid) is no server either.
    let (tmp, _) = home(Some(1), TOKEN);
    let inst = tmp.path().join("home/server/instances/01X.json");
    let stale = std::fs::read_to_string(&inst).unwrap().replace(
        &format!("\"pid\":{}", std::process::id()),
        "\"pid\":999999999",
    );
    std::fs::write(&inst, stale).unwrap();
    let (code, _, err) = send(&tmp.path().join("home"), &[SID, "--status"]);
    assert_eq!(code, 2, "{err}");

    // The wrong token.
    let script = Arc::new(Mutex::new(Script {
        loaded: true,
        ..Script::default()
    }));
    let port = serve(script.clone());
    let (tmp, _) = home(Some(port), "not-the-token");
    let (code, _, err) = send(&tmp.path().join("home"), &[SID, "--status"]);
    assert_eq!(code, 2);
    assert!(err.contains("token refused (401)"), "{err}");

    // Loaded nowhere: the TUI may have it; refuse and say /web.
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "x"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("not loaded there") && err.contains("/web"),
        "{err}"
    );
    assert!(posts(&s).is_empty());
}

#[test]
fn status_says_server_load_busy_and_how_far_back() {
    let (_s, tmp, _) = setup(Script {
        messages: vec![user("u1"), compaction("c"), user("u2"), user("u3")],
        busy: [true].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, out, err) = send(&tmp.path().join("home"), &[SID, "--status"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("127.0.0.1:") && out.contains("2.1.0"), "{out}");
    assert!(out.contains("loaded: yes; busy"), "{out}");
    assert!(
        out.contains("turns: 3; a D-Mail may go back 1..=2 turn(s) (undo stops at a compaction)"),
        "{out}"
    );
}

#[test]
fn checkpoints_are_not_turns() {
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--checkpoint", "1", "--message", "x"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--turns-back"), "{err}");
    assert!(posts(&s).is_empty());
}

/// The TUI's send (`ui::compose::send`) takes the same route: the session's
/// home is found from its directory, the server from its instance file.
#[test]
fn the_tui_send_goes_through_the_same_steps() {
    use worldline::ui::compose::{send as tui_send, Back, Reply, SendRequest};
    let (s, _tmp, dir) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let req = SendRequest {
        dir: dir.join("agents/main"),
        back: Back::Turns(1),
        session: dir.clone(),
        tool: worldline::sources::Tool::KimiCode,
        message: "from the TUI".into(),
        lines_before: 1,
    };
    assert_eq!(tui_send(&req), Reply::Accepted);
    let base = format!("/api/v1/sessions/{SID}");
    assert_eq!(
        posts(&s),
        [format!("POST {base}:undo"), format!("POST {base}/prompts")]
    );

    // Refused: the reason comes back for the compose box.
    let (_s, _tmp, dir) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let req = SendRequest {
        back: Back::Turns(7),
        session: dir.clone(),
        dir: dir.join("agents/main"),
        ..req
    };
    match tui_send(&req) {
        Reply::Refused(why) => assert!(why.contains("only 3 of 7"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_same_dmail_just_delivered_is_not_sent_again() {
    let mut msgs = three_turns();
    msgs.push(json!({"id": "wl-dmail-0123456789abcdef", "role": "user",
                     "content": [{"type": "text", "text": "again?"}],
                     "metadata": {"origin": {"kind": "user"}}}));
    let (s, tmp, _) = setup(Script {
        messages: msgs,
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "again?"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("just delivered"), "{err}");
    assert!(posts(&s).is_empty());
}

#[test]
fn a_prompt_slipping_in_before_the_undo_stops_it() {
    let mut later = three_turns();
    later.push(user("u4"));
    later.push(assistant("a4"));
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        second_listing: Some(later),
        busy: [false].into(),
        loaded: true,
        ..Script::default()
    });
    let (code, _, err) = send(
        &tmp.path().join("home"),
        &[SID, "--turns-back", "1", "--message", "x"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("slipped in before the undo") && err.contains("nothing was undone"),
        "{err}"
    );
    assert!(posts(&s).is_empty(), "{:?}", posts(&s));
}

/// A wire as Kimi Code 2.1.0 writes a D-Mail worldline sent (lines taken
/// from a real recording, trimmed): undo edge, undo, undone, then the
/// D-Mail's prompt with its metadata.
fn dmail_wire() -> String {
    let lines = [
        r#"{"type":"metadata","protocol_version":"1.5","created_at":1796396288116}"#,
        r#"{"type":"turn.prompt","agentId":"main","input":[{"type":"text","text":"D1: first."}],"origin":{"kind":"user"},"promptId":"m1","turnId":0,"time":1796396288266}"#,
        r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"D1: first."}],"id":"m1","toolCalls":[],"origin":{"kind":"user"}},"time":1796396288267}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.begin","uuid":"s1","turnId":"0","step":1},"time":1796396288274}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"content.part","uuid":"p1","turnId":"0","step":1,"stepUuid":"s1","part":{"type":"text","text":"Scripted reply to: D1: first."}},"time":1796396288329}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"s1","turnId":"0","step":1,"finishReason":"end_turn"},"time":1796396288330}"#,
        r#"{"type":"turn.prompt","agentId":"main","input":[{"type":"text","text":"D2: the wrong road."}],"origin":{"kind":"user"},"promptId":"m2","turnId":1,"time":1796396288610}"#,
        r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"D2: the wrong road."}],"id":"m2","toolCalls":[],"origin":{"kind":"user"}},"time":1796396288610}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.begin","uuid":"s2","turnId":"1","step":1},"time":1796396288614}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"content.part","uuid":"p2","turnId":"1","step":1,"stepUuid":"s2","part":{"type":"text","text":"On the wrong road."}},"time":1796396288759}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"s2","turnId":"1","step":1,"finishReason":"end_turn"},"time":1796396288760}"#,
        r#"{"type":"agent.switched","agentId":"main","branch":"b1","reason":"undo","base":{"branch":"main","line":6},"turns":1,"legacyUndoLine":13,"time":1796396290458}"#,
        r#"{"type":"context.undo","agentId":"main","count":1,"time":1796396290458}"#,
        r#"{"type":"context.undone","agentId":"main","turns":1,"fromTurnId":1,"time":1796396290458}"#,
        r#"{"type":"turn.prompt","agentId":"main","input":[{"type":"text","text":"Take the second road."}],"origin":{"kind":"user","clientMetadata":[{"worldline":{"kind":"dmail","turns":1}}]},"promptId":"wl-dmail-dc4aa9c84f0966ac","turnId":2,"time":1796396290564}"#,
        r#"{"type":"context.append_message","agentId":"main","message":{"role":"user","content":[{"type":"text","text":"Take the second road."}],"id":"wl-dmail-dc4aa9c84f0966ac","toolCalls":[],"origin":{"kind":"user","clientMetadata":[{"worldline":{"kind":"dmail","turns":1}}]}},"time":1796396290564}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.begin","uuid":"s3","turnId":"2","step":1},"time":1796396290583}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"content.part","uuid":"p3","turnId":"2","step":1,"stepUuid":"s3","part":{"type":"text","text":"On the second road."}},"time":1796396290615}"#,
        r#"{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"s3","turnId":"2","step":1,"finishReason":"end_turn"},"time":1796396290616}"#,
    ];
    lines.join("\n") + "\n"
}

fn tree(dir: &Path, format: &str) -> String {
    let out = common::worldline()
        .args(["tree", "--format", format])
        .arg(dir)
        .env("KIMI_CODE_HOME", dir.join("no-home"))
        .env("KIMI_SHARE_DIR", dir.join("no-kimi-cli"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_dmail_branch_reads_as_one_in_every_format() {
    let (_tmp, dir) = home(None, TOKEN);
    std::fs::write(dir.join("agents/main/wire.jsonl"), dmail_wire()).unwrap();
    let v: Value = serde_json::from_str(&tree(&dir, "json")).unwrap();
    let b1 = &v["world_lines"][1];
    assert_eq!(b1["branch"], "b1");
    assert_eq!(b1["current"], true);
    assert_eq!(b1["fork"]["kind"], "dmail");
    assert_eq!(b1["fork"]["turns"], 1);
    assert_eq!(b1["fork"]["message"], "Take the second road.");
    assert_eq!(b1["fork"]["line"], 6);
    assert_eq!(v["warnings"], json!([]));
    let text = tree(&dir, "text");
    assert!(
        text.contains("D-Mail from outside the agent → 1 turn back")
            && text.contains("Take the second road."),
        "{text}"
    );
    for format in ["mermaid", "dot", "svg", "html"] {
        let out = tree(&dir, format);
        assert!(out.contains("1 turn back"), "{format}: {out}");
        assert!(out.contains("Take the second road"), "{format}");
    }
    // An undo worldline did not make stays an undo.
    let plain = dmail_wire().replace(
        r#","clientMetadata":[{"worldline":{"kind":"dmail","turns":1}}]"#,
        "",
    );
    std::fs::write(dir.join("agents/main/wire.jsonl"), plain).unwrap();
    let v: Value = serde_json::from_str(&tree(&dir, "json")).unwrap();
    assert_eq!(v["world_lines"][1]["fork"]["kind"], "undo");
    assert_eq!(v["world_lines"][1]["fork"]["message"], Value::Null);
}

/// A session loaded nowhere (after `/web` in the Kimi Code TUI, the TUI is
/// gone and the server loads the session only when asked): `--status` says
/// so without loading it, `send` refuses unless `--load` says nothing else
/// has it open.
#[test]
fn a_session_loaded_nowhere_needs_load() {
    let (s, tmp, _) = setup(Script {
        messages: three_turns(),
        busy: [false].into(),
        ..Script::default()
    });
    let home = tmp.path().join("home");
    let (code, out, err) = send(&home, &[SID, "--status"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("loaded: no") && out.contains("--load"),
        "{out}"
    );
    assert!(
        !s.lock()
            .unwrap()
            .log
            .iter()
            .any(|l| l.contains("/messages")),
        "status must not list messages (that loads the session)"
    );
    let (code, _, err) = send(&home, &[SID, "--turns-back", "1", "--message", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("/web") && err.contains("--load"), "{err}");
    assert!(posts(&s).is_empty());
    let (code, out, err) = send(
        &home,
        &[SID, "--turns-back", "1", "--message", "x", "--load"],
    );
    assert_eq!(code, 0, "{out} {err}");
    let base = format!("/api/v1/sessions/{SID}");
    assert_eq!(
        posts(&s),
        [format!("POST {base}:undo"), format!("POST {base}/prompts")]
    );
}

/// The compose box for a D-Mail by turns lists what the undone turns did
/// that stays on disk (a command run), as for checkpoints.
#[test]
fn the_box_lists_what_the_undone_turns_left_on_disk() {
    use ratatui::layout::Size;
    use worldline::ui::app::{Action, App, Denwa, Effect, Live, Overlay};
    use worldline::ui::compose::Back;
    use worldline::ui::theme::Theme;
    let lines = [
        r#"{"type":"metadata","protocol_version":"1.5"}"#,
        r#"{"type":"context.append_message","message":{"role":"user","content":[{"type":"text","text":"D1: first."}],"id":"m1","origin":{"kind":"user"}},"time":1}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"step.begin","uuid":"s1","turnId":"0","step":1},"time":2}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"content.part","uuid":"p1","stepUuid":"s1","part":{"type":"text","text":"Done one."}},"time":3}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"step.end","uuid":"s1"},"time":4}"#,
        r#"{"type":"context.append_message","message":{"role":"user","content":[{"type":"text","text":"D2: run it."}],"id":"m2","origin":{"kind":"user"}},"time":5}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"step.begin","uuid":"s2","turnId":"1","step":1},"time":6}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"tool.call","uuid":"c","stepUuid":"s2","toolCallId":"call_1","name":"Bash","args":{"command":"rm -rf build/"}},"time":7}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"tool.result","toolCallId":"call_1","result":{"output":""}},"time":8}"#,
        r#"{"type":"context.append_loop_event","event":{"type":"step.end","uuid":"s2"},"time":9}"#,
    ];
    let (_tmp, dir) = home(None, TOKEN);
    std::fs::write(dir.join("agents/main/wire.jsonl"), lines.join("\n") + "\n").unwrap();
    let session = worldline::worldline::Session::load(&dir).unwrap();
    let mut app = App::new(Theme { color: false }, false, Size::new(100, 30));
    app.update(Live::Snapshot(std::sync::Arc::new(session.clone())));
    // The second turn's prompt.
    let mut found = None;
    app.update(Action::Top);
    for _ in 0..20 {
        app.prepare();
        let r = app.selected().unwrap();
        if session
            .body(r)
            .is_ok_and(|b| b.text().contains("D2: run it"))
        {
            found = Some(r);
            break;
        }
        app.update(Action::Move(1));
    }
    assert!(found.is_some(), "no row for D2");
    let Effect::Probe(target) = app.update(Action::DMail) else {
        panic!("{:?}", app.status())
    };
    assert_eq!(target.back, Back::Turns(1));
    app.update(Denwa::Probed { target, live: true });
    app.prepare();
    let Overlay::Compose(c) = app.overlay() else {
        panic!("no box")
    };
    let kept = c.kept().expect("the turn is on the current line");
    assert_eq!(kept.summary(), ["ran `rm -rf build/`"]);
}
