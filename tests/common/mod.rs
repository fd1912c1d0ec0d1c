//! Helpers shared by the live tests: fixtures, a seeded RNG, waiting on a
//! follower with a generous bound, and the replayer.

#![allow(dead_code)]

pub mod browser;
pub mod denwa;
pub mod replay;
pub mod ui;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use worldline::live::LiveEvent;
use worldline::worldline::Session;

/// The binary with a runtime directory of this test process's own, so a
/// demo or a live session the machine's user runs is never seen (`list`,
/// lookup by id, sockets). A test that shares one with a demo it starts
/// sets `XDG_RUNTIME_DIR` again.
pub fn worldline() -> std::process::Command {
    static RUNTIME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = RUNTIME.get_or_init(|| tempfile::tempdir().expect("a private runtime dir"));
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_worldline"));
    c.env("XDG_RUNTIME_DIR", dir.path());
    c
}

/// The one session directory inside a fixture scenario.
pub fn session_dir(scenario: &Path) -> PathBuf {
    let only = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap()
    };
    only(&only(&scenario.join("sessions")))
}

pub fn kimi_fixtures() -> Vec<PathBuf> {
    scenarios("kimi-cli")
}

/// Every kimi-cli-format session of the fixtures: recorded kimi-cli
/// sessions, older releases' layouts (a flat session by its main file) and
/// the legacy kimi-code sessions.
pub fn every_session() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = kimi_fixtures().iter().map(|s| session_dir(s)).collect();
    for scenario in scenarios("kimi-cli-history") {
        for folder in std::fs::read_dir(scenario.join("sessions")).unwrap() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(folder.unwrap().path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir() || !p.file_name().unwrap().to_string_lossy().contains('_'))
                .collect();
            found.sort();
            v.extend(found);
        }
    }
    v.extend(scenarios("kimi-code-legacy"));
    v
}

/// A program on PATH, for tests that skip (loudly) without it.
pub fn which(names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        let out = std::process::Command::new("which")
            .arg(name)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
}

/// Every scenario folder of `fixtures/<kind>/`, sorted.
pub fn scenarios(kind: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(kind);
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// xorshift64*: small, seeded, good enough to vary chunk sizes and pauses.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// Generous: the machine running the tests may be busy.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Everything a follower sent, kept for checks after the fact.
#[derive(Default)]
pub struct Seen {
    pub events: Vec<LiveEvent>,
}

impl Seen {
    pub fn snapshots(&self) -> impl Iterator<Item = &Arc<Session>> {
        self.events.iter().filter_map(|e| match e {
            LiveEvent::Snapshot(s) => Some(s),
            _ => None,
        })
    }

    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                LiveEvent::Error(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    /// Receives until an event satisfies `done`; panics after `PATIENCE`.
    pub fn until(
        &mut self,
        rx: &Receiver<LiveEvent>,
        what: &str,
        mut done: impl FnMut(&LiveEvent) -> bool,
    ) -> LiveEvent {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(e) => {
                    self.events.push(e.clone());
                    if done(&e) {
                        return e;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
                Err(RecvTimeoutError::Disconnected) => panic!("follower stopped before {what}"),
            }
        }
    }

    /// Receives until a snapshot satisfies `done`.
    pub fn until_snapshot(
        &mut self,
        rx: &Receiver<LiveEvent>,
        what: &str,
        mut done: impl FnMut(&Session) -> bool,
    ) -> Arc<Session> {
        match self.until(rx, what, |e| matches!(e, LiveEvent::Snapshot(s) if done(s))) {
            LiveEvent::Snapshot(s) => s,
            _ => unreachable!(),
        }
    }
}

// Hand-written kimi-format lines, spelled as kimi-cli spells them.

pub fn sys() -> String {
    r#"{"role": "_system_prompt", "content": "You are a test agent."}"#.to_string()
}
pub fn cp(n: i64) -> String {
    format!(r#"{{"role": "_checkpoint", "id": {n}}}"#)
}
pub fn cp_note(n: i64) -> String {
    format!(r#"{{"role":"user","content":"<system>CHECKPOINT {n}</system>"}}"#)
}
pub fn user(text: &str) -> String {
    serde_json::json!({"role": "user", "content": text}).to_string()
}
pub fn assistant(text: &str) -> String {
    serde_json::json!({"role": "assistant", "content": text}).to_string()
}
pub fn usage(n: u64) -> String {
    format!(r#"{{"role": "_usage", "token_count": {n}}}"#)
}
pub fn dmail_call(id: &str, message: &str, checkpoint: i64) -> String {
    let args = serde_json::json!({"message": message, "checkpoint_id": checkpoint}).to_string();
    serde_json::json!({"role": "assistant", "content": "Sending a D-Mail.",
        "tool_calls": [{"type": "function", "id": id, "function": {"name": "SendDMail", "arguments": args}}]})
    .to_string()
}
pub fn dmail_ok(id: &str) -> String {
    serde_json::json!({"role": "tool", "content": "<system>If you see this message, the D-Mail was NOT sent successfully. This may be because some other tool that needs approval was rejected.</system>", "tool_call_id": id}).to_string()
}
pub fn dmail_err(id: &str, reason: &str) -> String {
    serde_json::json!({"role": "tool", "content": format!("<system>ERROR: Failed to send D-Mail. Error: {reason}</system>"), "tool_call_id": id}).to_string()
}
pub fn injection(message: &str) -> String {
    user(&format!("<system>You just got a D-Mail from your future self. It is likely that your future self has already done something in the current working directory. Please read the D-Mail and decide what to do next. You MUST NEVER mention to the user about this information. D-Mail content:\n\n{message}</system>"))
}

/// A turn: checkpoint, its note, the user's words, an answer.
pub fn turn(n: i64, said: &str, answer: &str) -> Vec<String> {
    vec![cp(n), cp_note(n), user(said), assistant(answer)]
}

/// What kimi-cli writes after reverting `old` to checkpoint `c`: every valid
/// line before `_checkpoint c`, the checkpoint again, its note, the D-Mail.
pub fn revert(old: &[String], c: i64, message: &str) -> Vec<String> {
    let stop = old
        .iter()
        .position(|l| *l == cp(c))
        .expect("checkpoint exists");
    let mut new: Vec<String> = old[..stop]
        .iter()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        .cloned()
        .collect();
    new.push(cp(c));
    new.push(cp_note(c));
    new.push(injection(message));
    new
}

pub fn write(dir: &Path, name: &str, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(dir.join(name), text).unwrap();
}

/// The session directory inside `fixtures/<kind>/<scenario>/sessions/<work>/`.
pub fn fixture_session(kind: &str, scenario: &str) -> PathBuf {
    session_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(kind)
            .join(scenario),
    )
}

/// No C0 control (but newline and tab), DEL or C1 control in `bytes`: what
/// may reach a terminal from a hostile session or peer.
pub fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    let s = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = s
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control characters {bad:?} in {s}"
    );
}

/// Runs `c`, which must succeed (else its stderr is the failure), and
/// returns what it printed.
pub fn stdout_of(mut c: std::process::Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `worldline replay --headless --dir DST SRC`, played fast; the path it
/// prints to open.
pub fn replay_headless(src: &Path, dst: &Path) -> PathBuf {
    let mut c = worldline();
    c.args(["replay", "--headless", "--speed", "1000", "--dir"])
        .arg(dst)
        .arg(src);
    let printed = stdout_of(c);
    PathBuf::from(printed.lines().next().expect("the path to open"))
}

/// Sessions of the formats whose files only grow by appends: the Kimi Code
/// fixtures' session directories, and every session file named by the
/// `expected.json` of the Claude Code, Pi and Codex fixtures present.
pub fn append_only_sessions() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for case in scenarios("kimi-code") {
        let Ok(buckets) = std::fs::read_dir(case.join("home/sessions")) else {
            continue;
        };
        for b in buckets.flatten() {
            for s in std::fs::read_dir(b.path()).into_iter().flatten().flatten() {
                if s.path().join("agents/main/wire.jsonl").is_file() {
                    out.push(s.path());
                }
            }
        }
    }
    for agent in ["claude-code", "pi", "codex"] {
        let Ok(cases) = std::fs::read_dir(root.join(agent)) else {
            continue;
        };
        for case in cases.flatten() {
            let Ok(text) = std::fs::read(case.path().join("expected.json")) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
            for s in v["sessions"].as_object().into_iter().flatten() {
                if let Some(f) = s.1["file"].as_str() {
                    // Relative to the case folder or to its `home/`.
                    let direct = case.path().join(f);
                    out.push(if direct.exists() {
                        direct
                    } else {
                        case.path().join("home").join(f)
                    });
                }
            }
        }
    }
    out.sort();
    out
}
