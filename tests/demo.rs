//! The demo agent, run flat out on a fake clock, writes what kimi-cli would.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use worldline::demo::{Clock, DemoAgent, DemoConfig, DemoEvent, FakeClock};
use worldline::denwa::{DMail, DenwaRenji};
use worldline::kimi_writer::{checkpoint_line, dmail_injection_text, message_line, Message, Part};

fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn new_agent(share: &Path) -> (DemoAgent, Arc<Mutex<DenwaRenji>>, FakeClock) {
    let cfg = DemoConfig {
        share_dir: share.to_owned(),
        work_dir: PathBuf::from("/home/demo/tally"),
        session_id: "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3".into(),
        seed: 7,
    };
    let renji = Arc::new(Mutex::new(DenwaRenji::new()));
    let clock = FakeClock::starting_at(1_796_000_000.0);
    let agent = DemoAgent::create(&cfg, renji.clone(), Box::new(clock.clone())).unwrap();
    (agent, renji, clock)
}

fn world_lines(events: &[DemoEvent]) -> Vec<(PathBuf, i64, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            DemoEvent::WorldLine {
                rotated_to,
                checkpoint_id,
                message,
                own,
            } => Some((rotated_to.clone(), *checkpoint_id, message.clone(), *own)),
            _ => None,
        })
        .collect()
}

#[test]
fn script_with_an_external_dmail_writes_kimi_rotations() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, renji, clock) = new_agent(tmp.path());
    let dir = agent.session_dir().to_owned();
    assert!(dir.starts_with(tmp.path().join("sessions")));
    let kimi: Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("kimi.json")).unwrap()).unwrap();
    assert_eq!(
        kimi["work_dirs"][0]["last_session_id"],
        "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
    );
    let state: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert!(state["custom_title"].as_str().unwrap().contains("tally"));

    let external = "The tests live in tests/; run them with python -m pytest -q.";
    let mut sent_external = false;
    let mut beats = 0;
    let mut elapsed = 0.0;
    while !agent.script_done() {
        let pause = agent.step().unwrap();
        clock.sleep(pause);
        elapsed += pause.as_secs_f64();
        beats += 1;
        assert!(beats < 2000, "the script never ends");
        // Mid-run, between steps, as `worldline send` would.
        if beats == 20 && !sent_external {
            let n = renji.lock().unwrap().n_checkpoints();
            assert!(n > 3, "n_checkpoints {n}");
            renji
                .lock()
                .unwrap()
                .send_dmail(DMail {
                    message: external.into(),
                    checkpoint_id: 2,
                })
                .unwrap();
            sent_external = true;
        }
    }
    assert!(elapsed > 60.0, "too fast to watch: {elapsed}s");

    let lines_made = world_lines(agent.events());
    assert_eq!(lines_made.len(), 3, "{lines_made:#?}");
    assert!(!lines_made[0].3, "the external D-Mail comes first");
    assert_eq!(lines_made[0].1, 2);
    assert_eq!(lines_made[0].2, external);
    assert!(
        lines_made[1].3 && lines_made[2].3,
        "then the agent's own two"
    );
    assert!(
        lines_made[2].1 < lines_made[1].1,
        "the second own D-Mail goes back further"
    );

    // Own D-Mails went through SendDMail and DenwaRenji.
    let sent: Vec<_> = agent
        .events()
        .iter()
        .filter(|e| matches!(e, DemoEvent::DMailSent { accepted: true, .. }))
        .collect();
    assert_eq!(sent.len(), 2);

    // Rotation files: context_1..3 in order, then the live context.jsonl.
    for (i, (rotated, c, message, _)) in lines_made.iter().enumerate() {
        assert_eq!(*rotated, dir.join(format!("context_{}.jsonl", i + 1)));
        let old = lines(rotated);
        let successor = if i + 1 < lines_made.len() {
            dir.join(format!("context_{}.jsonl", i + 2))
        } else {
            dir.join("context.jsonl")
        };
        let new = lines(&successor);
        let cp = checkpoint_line(*c);
        let cp = cp.trim_end();
        let cut = old
            .iter()
            .position(|l| l == cp)
            .expect("old line has the checkpoint");
        assert_eq!(
            new[..cut],
            old[..cut],
            "verbatim prefix of {}",
            rotated.display()
        );
        assert_eq!(new[cut], cp);
        assert_eq!(
            new[cut + 1],
            format!("{{\"role\":\"user\",\"content\":\"<system>CHECKPOINT {c}</system>\"}}")
        );
        let injection = message_line(&Message::user(vec![Part::text(dmail_injection_text(
            message,
        ))]));
        assert_eq!(new[cut + 2], injection.trim_end());
        assert!(new[cut + 2].contains(&message.replace('"', "\\\"")));
        // The abandoned line of an own D-Mail ends with its SendDMail result.
        if lines_made[i].3 {
            assert!(old.iter().any(|l| l.contains("\"name\":\"SendDMail\"")));
            assert!(old
                .last()
                .unwrap()
                .contains("the D-Mail was NOT sent successfully"));
        }
    }
    assert!(!dir.join("context_4.jsonl").exists());

    // Every context line parses and starts with the system prompt.
    for f in [
        "context.jsonl",
        "context_1.jsonl",
        "context_2.jsonl",
        "context_3.jsonl",
    ] {
        let ls = lines(&dir.join(f));
        assert!(ls[0]
            .starts_with("{\"role\": \"_system_prompt\", \"content\": \"You are Kimi Code CLI"));
        for l in &ls {
            let v: Value = serde_json::from_str(l).unwrap();
            assert!(v["role"].is_string());
        }
        assert!(
            ls.iter().any(|l| l.contains("{\"type\":\"think\"")),
            "{f} has think parts"
        );
    }

    // The subagent: its own dir, meta.json and context.
    let subs: Vec<_> = agent
        .events()
        .iter()
        .filter_map(|e| match e {
            DemoEvent::SubagentStarted { agent_id, dir } => Some((agent_id.clone(), dir.clone())),
            _ => None,
        })
        .collect();
    assert!(!subs.is_empty());
    for (id, sub) in &subs {
        assert_eq!(*sub, dir.join("subagents").join(id));
        let meta: Value =
            serde_json::from_str(&fs::read_to_string(sub.join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["agent_id"], id.as_str());
        assert_eq!(meta["status"], "idle");
        let ctx = lines(&sub.join("context.jsonl"));
        assert!(ctx[0].contains("_system_prompt"));
        assert!(
            ctx.iter().all(|l| !l.contains("CHECKPOINT")),
            "subagents have no SendDMail"
        );
        assert!(sub.join("wire.jsonl").exists());
    }
    // The parent's Agent tool result names the subagent.
    let all: String = ["context_1.jsonl", "context_2.jsonl"]
        .iter()
        .map(|f| fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    assert!(all.contains(&format!("agent_id: {}", subs[0].0)));

    // wire.jsonl: metadata line, then events with rising timestamps.
    let wire = lines(&dir.join("wire.jsonl"));
    assert_eq!(
        wire[0],
        "{\"type\": \"metadata\", \"protocol_version\": \"1.10\"}"
    );
    let mut last = 0.0;
    let mut kinds = std::collections::BTreeSet::new();
    for l in &wire[1..] {
        let v: Value = serde_json::from_str(l).unwrap();
        let ts = v["timestamp"].as_f64().unwrap();
        assert!(ts > last, "timestamps rise: {l}");
        last = ts;
        kinds.insert(v["message"]["type"].as_str().unwrap().to_owned());
    }
    for k in [
        "TurnBegin",
        "StepBegin",
        "ContentPart",
        "ToolCall",
        "ToolResult",
        "StatusUpdate",
        "TurnEnd",
        "SubagentEvent",
    ] {
        assert!(kinds.contains(k), "wire has {k}");
    }

    // After the script it keeps going with ordinary turns.
    for _ in 0..40 {
        agent.step().unwrap();
    }
    let turns = agent
        .events()
        .iter()
        .filter(|e| matches!(e, DemoEvent::TurnBegan { .. }))
        .count();
    assert!(turns >= 4);
}

#[test]
fn own_dmails_arrive_within_two_minutes_at_speed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, _renji, clock) = new_agent(tmp.path());
    let start = clock.now();
    let mut times = Vec::new();
    while times.len() < 2 {
        let before = world_lines(agent.events()).len();
        let pause = agent.step().unwrap();
        if world_lines(agent.events()).len() > before {
            times.push(clock.now() - start);
        }
        clock.sleep(pause);
        assert!(clock.now() - start < 600.0);
    }
    assert!(times[1] < 150.0, "own D-Mails at {times:?} s");
    assert!(times[0] > 20.0, "first D-Mail not instant: {times:?}");
}

#[test]
fn headless_binary_prints_the_session_dir_and_stops_cleanly_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let tmp = tempfile::tempdir().unwrap();
    // Its own runtime dir: never the shared /tmp/worldline-<uid>.
    let runtime = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_worldline"))
        .args(["demo", "--headless", "--speed", "50", "--dir"])
        .arg(tmp.path())
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let session = PathBuf::from(first.trim_end());
    assert!(session.starts_with(tmp.path().join("sessions")), "{first}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let pid = i32::try_from(child.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(session.join("context.jsonl").exists());
    assert!(session.join("wire.jsonl").exists());
    assert!(
        !session.join("denwa.json").exists(),
        "denwa.json removed on SIGTERM"
    );
}
