//! `worldline watch --json` as a script sees it: the current state, then a
//! line per change (records, a D-Mail world line, a subagent), and exit 0
//! on SIGTERM or when stdout goes away.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::{session_dir, PATIENCE};
use serde_json::Value;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = session_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-cli")
            .join(name),
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(src.file_name().unwrap());
    copy_dir(&src, &dir);
    (tmp, dir)
}

struct Watch {
    child: Child,
    lines: Receiver<Value>,
}

impl Watch {
    fn start(dir: &Path, poll: bool) -> Watch {
        let mut cmd = common::worldline();
        cmd.arg("watch").arg(dir).arg("--json");
        if poll {
            cmd.arg("--poll");
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { return };
                let v: Value = serde_json::from_str(&l).expect("each line is JSON");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next line satisfying `want`, keeping the ones passed over.
    fn until(&self, what: &str, passed: &mut Vec<Value>, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what}; saw {passed:#?}"));
            if want(&v) {
                return v;
            }
            passed.push(v);
        }
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "watch did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

fn is(v: &Value, event: &str) -> bool {
    v["event"] == event
}

fn streams_state_then_changes(poll: bool) {
    let (_tmp, dir) = fixture_copy("dmail_basic");
    let mut w = Watch::start(&dir, poll);
    let mut seen = Vec::new();
    // The current state: world lines, no records.
    let first = w.until("first world line", &mut seen, |v| is(v, "world_line"));
    assert_eq!(first["file"], "context_1.jsonl");
    assert_eq!(first["agent"], "main");
    let cur = w.until("current world line", &mut seen, |v| is(v, "world_line"));
    assert_eq!(cur["file"], "context.jsonl");
    assert_eq!(cur["records"], 12);
    assert_eq!(cur["fork"]["kind"], "dmail");

    // Appended records, one of them a checkpoint.
    let ctx = dir.join("context.jsonl");
    append(
        &ctx,
        "{\"role\":\"user\",\"content\":\"more\"}\n{\"role\": \"_checkpoint\", \"id\": 3}\n",
    );
    let r = w.until("record", &mut seen, |v| is(v, "record"));
    assert_eq!(r["file"], "context.jsonl");
    assert_eq!(r["index"], 12);
    assert_eq!(r["role"], "user");
    assert!(r.get("checkpoint").is_none());
    let r = w.until("checkpoint record", &mut seen, |v| is(v, "record"));
    assert_eq!(r["index"], 13);
    assert_eq!(r["checkpoint"], 3);
    assert!(seen.iter().all(|v| !is(v, "record")), "{seen:#?}");

    // A D-Mail revert to checkpoint 1, written the way kimi-cli does it.
    let old = std::fs::read_to_string(&ctx).unwrap();
    let rotated = dir.join("context_2.jsonl");
    std::fs::File::create(&rotated).unwrap();
    std::fs::rename(&ctx, &rotated).unwrap();
    let keep: Vec<&str> = old.lines().take(6).collect();
    assert_eq!(keep[4], "{\"role\": \"_checkpoint\", \"id\": 1}");
    append(&ctx, &(keep.join("\n") + "\n"));
    append(
        &ctx,
        "{\"role\":\"user\",\"content\":\"<system>You just got a D-Mail from your future self. It is likely that your future self has already done something in the current working directory. Please read the D-Mail and decide what to do next. You MUST NEVER mention to the user about this information. D-Mail content:\\n\\nhello past</system>\"}\n",
    );
    seen.clear();
    let fresh = w.until("the new world line", &mut seen, |v| {
        is(v, "world_line") && v["file"] == "context.jsonl"
    });
    assert_eq!(fresh["fork"]["kind"], "dmail");
    assert_eq!(fresh["fork"]["checkpoint"], 1);
    assert_eq!(fresh["fork"]["message"], "hello past");
    assert_eq!(fresh["parent"], "context_2.jsonl");
    assert_eq!(fresh["current"], true);
    // The old one was renamed, not born: it is announced under its new name.
    assert!(
        seen.iter().any(|v| is(v, "world_line")
            && v["file"] == "context_2.jsonl"
            && v["current"] == false),
        "{seen:#?}"
    );
    let r = w.until("the D-Mail record", &mut seen, |v| is(v, "record"));
    assert_eq!(r["file"], "context.jsonl");
    assert_eq!(r["index"], 6);
    // Exactly one new world line: nothing else named in between.
    assert!(
        seen.iter().filter(|v| is(v, "world_line")).count() == 1,
        "{seen:#?}"
    );

    // A subagent starts.
    let sub = dir.join("subagents/abc123");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("meta.json"),
        r#"{"agent_id":"abc123","subagent_type":"coder","description":"look around","status":"running","created_at":1.0}"#,
    )
    .unwrap();
    append(
        &sub.join("context.jsonl"),
        "{\"role\":\"user\",\"content\":\"go\"}\n",
    );
    let s = w.until("subagent", &mut seen, |v| is(v, "subagent"));
    assert_eq!(s["agent_id"], "abc123");
    assert_eq!(s["subagent_type"], "coder");
    let l = w.until("subagent world line", &mut seen, |v| {
        is(v, "world_line") && v["agent"] == "abc123"
    });
    assert_eq!(l["file"], "subagents/abc123/context.jsonl");
    // The subagent existed only now, so its records are news too.
    let r = w.until("subagent record", &mut seen, |v| is(v, "record"));
    assert_eq!(r["agent"], "abc123");
    assert_eq!(r["file"], "subagents/abc123/context.jsonl");

    // A malformed line is a warning.
    append(&ctx, "not json\n");
    let wv = w.until("warning", &mut seen, |v| is(v, "warning"));
    assert_eq!(wv["file"], "context.jsonl");
    assert_eq!(wv["line"], 8);

    // SIGTERM: exit 0.
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(w.child.id() as libc::pid_t, libc::SIGTERM);
    }
    let st = w.wait_exit();
    assert!(st.success(), "{st:?}");
}

#[test]
fn watch_streams_state_then_changes_native() {
    streams_state_then_changes(false);
}

#[test]
fn watch_streams_state_then_changes_poll() {
    streams_state_then_changes(true);
}

#[test]
fn watch_exits_quietly_when_stdout_closes() {
    let (_tmp, dir) = fixture_copy("with_clear");
    let mut w = Watch::start(&dir, false);
    let mut seen = Vec::new();
    w.until("a line", &mut seen, |_| true);
    // Close our end of the pipe: the reader thread stops reading.
    let (_, dead) = mpsc::channel();
    w.lines = dead;
    drop(w.child.stdout.take());
    std::thread::sleep(Duration::from_millis(100));
    let ctx = dir.join("context.jsonl");
    for i in 0..200 {
        append(
            &ctx,
            &format!("{{\"role\":\"user\",\"content\":\"{i}\"}}\n"),
        );
        if w.child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = w.wait_exit();
    assert!(st.success(), "{st:?}");
}
