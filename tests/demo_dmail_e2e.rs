//! End to end: a headless demo agent, a D-Mail from `worldline send`, and the
//! new world line in the files and in `worldline tree --format json`; and the
//! demo's files read back into the world lines the demo says it made.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use worldline::demo::{Clock, DemoAgent, DemoConfig, DemoEvent, FakeClock};
use worldline::denwa::DenwaRenji;
use worldline::worldline::{ForkKind, Session};

struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wl() -> Command {
    common::worldline()
}

fn tree_json(dir: &Path) -> serde_json::Value {
    let mut c = wl();
    c.args(["tree", "--format", "json"]).arg(dir);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

#[test]
fn worldline_send_makes_the_demo_revert() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let mut child = wl()
        .args(["demo", "--headless", "--speed", "20", "--dir"])
        .arg(tmp.path())
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut demo = Demo(child);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let dir = PathBuf::from(first.trim_end());

    // Wait until the agent has passed checkpoint 2, then send to checkpoint 2.
    // The agent may have its own D-Mail pending: DenwaRenji refuses a second
    // one (exit 1), so try again.
    let message = "e2e: the tests were fine all along. Read tests/conftest.py and run `python -m pytest -q` once.";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "D-Mail never accepted");
        let status = wl()
            .arg("send")
            .arg(&dir)
            .arg("--status")
            .env("XDG_RUNTIME_DIR", runtime.path())
            .output()
            .unwrap();
        let ready = status.status.success()
            && String::from_utf8_lossy(&status.stdout)
                .split_whitespace()
                .filter_map(|w| w.parse::<i64>().ok())
                .next()
                .is_some_and(|n| n > 3);
        if ready {
            let out = wl()
                .arg("send")
                .arg(&dir)
                .args(["--checkpoint", "2", "--message", message])
                .env("XDG_RUNTIME_DIR", runtime.path())
                .output()
                .unwrap();
            match out.status.code() {
                Some(0) => break,
                Some(1) => {}
                other => panic!("send: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // The revert shows up as a dmail world line at checkpoint 2 with no sender
    // inside the agent (it came from outside).
    let deadline = Instant::now() + Duration::from_secs(30);
    let line = loop {
        assert!(Instant::now() < deadline, "no dmail world line appeared");
        let v = tree_json(&dir);
        let found = v["world_lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["fork"]["message"] == message)
            .cloned();
        if let Some(l) = found {
            break l;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(line["fork"]["kind"], "dmail");
    assert_eq!(line["fork"]["checkpoint"], 2);
    assert!(line["fork"]["sender"].is_null());
    // And in the files: the parent was rotated to context_N.jsonl, and the
    // world line's file holds kimi-cli's injection text with the message.
    let parent = line["parent"].as_str().unwrap();
    assert!(parent.starts_with("context_"), "{parent}");
    let text = std::fs::read_to_string(dir.join(line["file"].as_str().unwrap())).unwrap();
    assert!(text.contains("You just got a D-Mail from your future self"));
    assert!(text.contains(message));

    // The new world line takes the message up: after the injection the
    // agent lists its sentences, reads the file it names and runs the
    // command it quotes, before the story goes on.
    let deadline = Instant::now() + Duration::from_secs(30);
    let taken_up = loop {
        let line = tree_json(&dir)["world_lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["fork"]["message"] == message)
            .cloned()
            .unwrap();
        let text = std::fs::read_to_string(dir.join(line["file"].as_str().unwrap())).unwrap();
        let after = &text[text.find("D-Mail content").unwrap()..];
        let calls = [
            "SetTodoList",
            "The D-Mail names `tests/conftest.py`",
            "python -m pytest -q",
            "Done with what the D-Mail asked",
        ];
        if calls.iter().all(|c| after.contains(c)) {
            break after.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "the D-Mail was not taken up: {after}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let pos = |s: &str| taken_up.find(s).unwrap();
    assert!(taken_up[pos("SetTodoList")..].contains("e2e: the tests were fine all along"));
    let read = pos("The D-Mail names `tests/conftest.py`; reading it.");
    assert!(pos("SetTodoList") < read);
    assert!(read < pos("Running `python -m pytest -q`, as the D-Mail says"));

    // The story still ends by itself, and says where its session stays.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = demo.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        rest.contains("The demo's story ended; its session ("),
        "{rest}"
    );
    assert!(rest.contains(&dir.display().to_string()), "{rest}");
    let v = tree_json(&dir);
    assert!(v["world_lines"].as_array().unwrap().len() >= 4, "{v}");
}

#[test]
fn the_demo_files_read_back_into_the_world_lines_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = DemoConfig {
        share_dir: tmp.path().to_owned(),
        work_dir: PathBuf::from("/home/demo/tally"),
        session_id: "4d3e0000-0000-4000-8000-000000000001".into(),
        seed: 11,
    };
    let renji = Arc::new(Mutex::new(DenwaRenji::new()));
    let clock = FakeClock::starting_at(1_796_000_000.0);
    let mut agent = DemoAgent::create(&cfg, renji, Box::new(clock.clone())).unwrap();
    while !agent.finished() {
        let pause = agent.step().unwrap();
        clock.sleep(pause);
    }
    let made: Vec<(i64, String)> = agent
        .events()
        .iter()
        .filter_map(|e| match e {
            DemoEvent::WorldLine {
                checkpoint_id,
                message,
                ..
            } => Some((*checkpoint_id, message.clone())),
            _ => None,
        })
        .collect();
    assert!(made.len() >= 2, "the demo branches on its own");
    let s = Session::load(agent.session_dir()).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let main = s.main();
    assert_eq!(main.lines.len(), made.len() + 1);
    for (line, (cp, msg)) in main.lines[1..].iter().zip(&made) {
        let fork = line.fork.as_ref().unwrap();
        assert_eq!(fork.kind, ForkKind::Dmail);
        assert_eq!(fork.checkpoint, Some(*cp));
        assert_eq!(fork.message.as_deref(), Some(msg.trim()));
        // The demo's own D-Mails go through a real SendDMail call.
        assert!(fork.sender.is_some(), "{msg}");
    }
    // A tree, not a chain: some world line branches from an older one.
    assert!(main
        .lines
        .iter()
        .any(|l| l.fork.as_ref().is_some_and(|f| f.origin != l.parent)));
    assert_eq!(s.agents.len(), 2, "one subagent");
    assert!(s.agents[1].parent_call.is_some());
}
