//! The demo agent, run flat out on a fake clock, writes what kimi-cli would.

mod common;

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
    while !agent.finished() {
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

    // The story is over: more beats write nothing.
    let before = fs::read_to_string(dir.join("context.jsonl")).unwrap();
    for _ in 0..40 {
        clock.sleep(agent.step().unwrap());
    }
    assert!(agent.finished());
    assert_eq!(
        fs::read_to_string(dir.join("context.jsonl")).unwrap(),
        before
    );
}

/// Runs the agent on its fake clock until its story ends; returns the
/// seconds it took at speed 1.
fn run_to_end(agent: &mut DemoAgent, clock: &FakeClock) -> f64 {
    let start = clock.now();
    while !agent.finished() {
        clock.sleep(agent.step().unwrap());
        assert!(clock.now() - start < 3600.0, "the story never ends");
    }
    clock.now() - start
}

#[test]
fn the_story_ends_by_itself_in_two_to_three_minutes_at_the_default_speed() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, _renji, clock) = new_agent(tmp.path());
    let start = clock.now();
    let mut times = Vec::new();
    while !agent.finished() {
        let before = world_lines(agent.events()).len();
        let pause = agent.step().unwrap();
        if world_lines(agent.events()).len() > before {
            times.push(clock.now() - start);
        }
        clock.sleep(pause);
        assert!(clock.now() - start < 3600.0, "the story never ends");
    }
    // The default speed is 2: halve the seconds at speed 1.
    let at_default = (clock.now() - start) / 2.0;
    assert!(
        (120.0..=180.0).contains(&at_default),
        "the story takes {at_default:.0} s at the default speed"
    );
    assert_eq!(times.len(), 2, "two own D-Mails: {times:?}");
    assert!(times[0] / 2.0 > 20.0, "first D-Mail not instant: {times:?}");
    assert!(
        times[0] / 2.0 < 70.0,
        "first D-Mail within a minute: {times:?}"
    );

    // The last record is the epilogue: every world line, and keys to try.
    let ctx = lines(&agent.session_dir().join("context.jsonl"));
    let last: Value = serde_json::from_str(ctx.last().unwrap()).unwrap();
    assert_eq!(last["role"], "assistant", "the epilogue is the last record");
    let text = last["content"].to_string();
    assert!(
        text.contains("end of the demo: 3 world lines (α β γ)"),
        "{text}"
    );
    for name in [
        "α (context_1.jsonl)",
        "β (context_2.jsonl)",
        "γ (context.jsonl)",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
    assert!(text.contains("d on a step sends your own D-Mail"), "{text}");
}

/// The content of the last assistant message of `file`, as JSON text.
fn last_words(file: &Path) -> String {
    let last = lines(file)
        .iter()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["role"] == "assistant")
        .unwrap();
    last["content"].to_string()
}

/// The assistant messages and tool calls that follow the injection of the
/// D-Mail `message` in `file`, as JSON text.
fn after_injection(file: &Path, message: &str, n: usize) -> Vec<String> {
    let ls = lines(file);
    let at = ls
        .iter()
        .position(|l| l.contains("You just got a D-Mail") && l.contains(message))
        .unwrap_or_else(|| panic!("no injection of {message:?} in {}", file.display()));
    ls[at + 1..]
        .iter()
        .filter(|l| l.contains("\"role\": \"assistant\"") || l.contains("\"role\":\"assistant\""))
        .take(n)
        .cloned()
        .collect()
}

#[test]
fn a_user_dmail_after_the_end_wakes_the_agent_and_it_follows_the_message() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, renji, clock) = new_agent(tmp.path());
    run_to_end(&mut agent, &clock);
    let dir = agent.session_dir().to_owned();
    let message = "Check tests/test_cli.py before anything else. Then run `python -m pytest -q`.";
    renji
        .lock()
        .unwrap()
        .send_dmail(DMail {
            message: message.into(),
            checkpoint_id: 1,
        })
        .unwrap();
    clock.sleep(agent.step().unwrap());
    assert!(!agent.finished(), "the D-Mail wakes the agent");
    let made = world_lines(agent.events());
    assert_eq!(made.len(), 3);
    assert_eq!(
        (made[2].1, made[2].2.as_str(), made[2].3),
        (1, message, false)
    );
    run_to_end(&mut agent, &clock);

    // The new world line takes the message up: a todo list of its
    // sentences, the file it names, the command it quotes.
    let next = after_injection(&dir.join("context.jsonl"), message, 4);
    assert!(next[0].contains("SetTodoList"), "{}", next[0]);
    assert!(next[0].contains("Check tests/test_cli.py before anything else"));
    assert!(next[0].contains("Then run `python -m pytest -q`"));
    assert!(next[1].contains("ReadFile") && next[1].contains("tests/test_cli.py"));
    assert!(next[2].contains("Shell") && next[2].contains("python -m pytest -q"));
    // Both fixes of the first world lines are on disk: the tests say so.
    let ctx = fs::read_to_string(dir.join("context.jsonl")).unwrap();
    let shell_result = ctx
        .lines()
        .skip_while(|l| !l.contains("as the D-Mail says"))
        .find(|l| l.contains("\"role\": \"tool\"") || l.contains("\"role\":\"tool\""))
        .unwrap();
    assert!(
        shell_result.contains("9 passed") || shell_result.contains("7 passed"),
        "{shell_result}"
    );

    // And a new epilogue names the user's D-Mail.
    let text = last_words(&dir.join("context.jsonl"));
    let n = world_lines(agent.events()).len() + 1;
    assert!(n > 3);
    assert!(text.contains(&format!("{n} world lines")), "{text}");
    assert!(
        text.contains("began with your D-Mail to checkpoint 1"),
        "{text}"
    );
}

#[test]
fn a_user_dmail_that_names_the_cli_bug_spares_the_agent_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, renji, clock) = new_agent(tmp.path());
    // Until the agent has read parse.py and is about to test (⚑4).
    while renji.lock().unwrap().n_checkpoints() < 6 {
        clock.sleep(agent.step().unwrap());
    }
    let message = "Two bugs: the header skip in tally/parse.py, and tally/cli.py passes header= instead of skip_header=. Fix both.";
    renji
        .lock()
        .unwrap()
        .send_dmail(DMail {
            message: message.into(),
            checkpoint_id: 4,
        })
        .unwrap();
    run_to_end(&mut agent, &clock);
    let made = world_lines(agent.events());
    // The user's D-Mail, then only the whole-plan one: D-Mail 1's lesson
    // was taught by the user.
    assert_eq!(made.len(), 2, "{made:#?}");
    assert!(!made[0].3 && made[1].3);
    let own: Vec<String> = agent
        .events()
        .iter()
        .filter_map(|e| match e {
            DemoEvent::DMailSent { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(own.len(), 1);
    assert!(
        own[0].contains("whole") || own[0].contains("skip_blank"),
        "{own:?}"
    );
    // After the reaction the agent edits both files before testing.
    let rotated = &made[1].0;
    let text = fs::read_to_string(rotated).unwrap();
    let at = text.find(message).unwrap();
    let rest = &text[at..];
    let parse = rest.find("Fixing the header skip in read_rows").unwrap();
    let cli = rest.find("And the keyword in the CLI call").unwrap();
    let tests = rest.find("7 passed").unwrap();
    assert!(parse < cli && cli < tests);
}

#[test]
fn headless_binary_prints_the_session_dir_and_stops_cleanly_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    // Its own runtime dir: never the shared /tmp/worldline-<uid>.
    let runtime = tempfile::tempdir().unwrap();
    let mut child = common::worldline()
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

#[test]
fn headless_binary_runs_the_story_to_its_end_and_keeps_the_session() {
    use std::io::Read;
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let out = common::worldline()
        .args(["demo", "--headless", "--speed", "400", "--dir"])
        .arg(tmp.path())
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = out;
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let session = PathBuf::from(stdout.lines().next().unwrap());
    assert!(session.starts_with(tmp.path().join("sessions")), "{stdout}");
    assert!(
        stdout.contains("The demo's story ended; its session (3 world lines) stays in"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("worldline tree {}", session.display())),
        "{stdout}"
    );
    assert!(
        !session.join("denwa.json").exists(),
        "nothing serves D-Mails now"
    );
    // The kept session reads back: three world lines, the last one current.
    let tree = common::worldline()
        .args(["tree", "--format", "json"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(tree.status.success());
    let v: Value = serde_json::from_slice(&tree.stdout).unwrap();
    assert_eq!(v["world_lines"].as_array().unwrap().len(), 3, "{v}");
}

#[test]
fn own_dmails_say_what_a_revert_leaves_on_disk() {
    use worldline::worldline::revert;
    use worldline::worldline::Session;

    let tmp = tempfile::tempdir().unwrap();
    let (mut agent, _renji, clock) = new_agent(tmp.path());
    run_to_end(&mut agent, &clock);
    let s = Session::load(agent.session_dir()).unwrap();
    let kept = |line: usize| {
        revert::kept_at_landing(&s, 0, line, &mut |r| s.body(r).ok())
            .unwrap()
            .summary()
    };
    // β began with D-Mail 1: after ⚑6 α had edited parse.py and run the
    // tests (still failing), as the D-Mail tells its past self.
    assert_eq!(
        kept(1),
        [
            "edited tally/parse.py",
            "ran `python -m pytest -q` (failed)"
        ]
    );
    let dmail_1 = s.main().lines[1]
        .fork
        .as_ref()
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(dmail_1.contains("tally/parse.py now skips the header"));
    // γ began with D-Mail 2: β's work after ⚑3, all of it still on disk.
    let k2 = kept(2);
    for change in [
        "edited tally/cli.py",
        "edited tally/parse.py",
        "wrote tests/test_skip_blank.py",
    ] {
        assert!(k2.iter().any(|l| l == change), "{change} in {k2:?}");
    }
    let dmail_2 = s.main().lines[2]
        .fork
        .as_ref()
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(dmail_2.contains("tests/test_skip_blank.py exists"));
    // Each leads with what it says (the map's reason, the rows and `tree`
    // show its start), the on-disk list after it.
    for m in [&dmail_1, &dmail_2] {
        assert!(!m.starts_with("Already on disk"), "{m}");
        assert!(m.contains("Already on disk"), "{m}");
    }
    let map = worldline::worldline::map::Map::of_session(&s);
    let (b, g) = (&map.tracks[1].reason, &map.tracks[2].reason);
    let start = |r: &str| {
        r.split(':')
            .nth(1)
            .unwrap_or("")
            .chars()
            .take(20)
            .collect::<String>()
    };
    assert_ne!(start(b), start(g), "β: {b}\nγ: {g}");
}

#[test]
fn a_running_demo_can_be_found_listed_and_named_by_id() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let empty_share = tempfile::tempdir().unwrap();
    let wl = |args: &[&str]| {
        let out = common::worldline()
            .args(args)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .env("KIMI_SHARE_DIR", empty_share.path())
            .env("KIMI_CODE_HOME", empty_share.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (
            out.status.code(),
            text,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // No demo yet: nothing live.
    let (code, none, _) = wl(&["send", "--status"]);
    assert_eq!(code, Some(0));
    assert!(none.starts_with("no live sessions"), "{none}");
    // The demo in a temporary directory no listing looks in (slow enough to
    // still be running while we look).
    let mut child = common::worldline()
        .args(["demo", "--headless", "--speed", "0.5", "--dir"])
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
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let t0 = std::time::Instant::now();
    while !session.join("context.jsonl").exists() && t0.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // `send --status` without a session lists it: path, agent, state.
    let (code, live, err) = wl(&["send", "--status"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        live.starts_with(&format!("{}\n", session.display())),
        "{live}"
    );
    assert!(live.contains("  agent main · "), "{live}");
    // `list` shows it; its id (a prefix too) resolves for tree and send.
    let (_, list, _) = wl(&["list"]);
    assert!(list.contains(&id), "{list}");
    let (code, tree, err) = wl(&["tree", &id[..8]]);
    assert_eq!(code, Some(0), "{err}");
    assert!(tree.contains(&session.display().to_string()), "{tree}");
    let (code, status, err) = wl(&["send", &id[..8], "--status"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(status.contains("n_checkpoints"), "{status}");
    let pid = i32::try_from(child.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(child.wait().unwrap().success());
    // Gone with it.
    let (_, after, _) = wl(&["send", "--status"]);
    assert!(after.starts_with("no live sessions"), "{after}");
    let (_, list, _) = wl(&["list"]);
    assert!(!list.contains(&id), "{list}");
}
