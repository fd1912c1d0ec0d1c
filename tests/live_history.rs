//! Every release's layout followed live: the follower, fed each session's
//! files the way kimi-cli writes them (rotation by placeholder and rename,
//! flat files and `context_sub_N` subagents beside the main family), ends
//! showing exactly what a fresh load shows; and a `/fork` made while the
//! source is watched appears as a `fork` event.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Seen, PATIENCE};
use serde_json::Value;
use worldline::export::json::session_json;
use worldline::live::{self, LiveOptions};
use worldline::worldline::Session;

fn history(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-cli-history")
        .join(name)
}

/// The one work-dir folder of a scenario, and the first entry of a folder.
fn work_folder(scenario: &str) -> PathBuf {
    first_entry(&history(scenario).join("sessions"))
}

fn first_entry(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// The JSON lines a child prints, as they come.
fn json_lines(child: &mut std::process::Child) -> mpsc::Receiver<Value> {
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            if tx.send(serde_json::from_str(&l).unwrap()).is_err() {
                return;
            }
        }
    });
    lines
}

/// The files of `folder` whose names start with `stem`, grouped into the
/// family `<stem>.jsonl` + `<stem>_N.jsonl`, oldest first.
fn family(folder: &Path, stem: &str) -> Vec<PathBuf> {
    let mut rotated: Vec<(u64, PathBuf)> = Vec::new();
    let mut current = None;
    for e in std::fs::read_dir(folder).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(rest) = name
            .strip_prefix(stem)
            .and_then(|r| r.strip_suffix(".jsonl"))
        else {
            continue;
        };
        if rest.is_empty() {
            current = Some(p);
        } else if let Some(n) = rest.strip_prefix('_').and_then(|n| n.parse().ok()) {
            rotated.push((n, p));
        }
    }
    rotated.sort();
    let mut out: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    out.extend(current);
    out
}

/// Writes a family as kimi-cli would have: each world line starts as the
/// current file, and a rotation reserves `<stem>_N.jsonl` empty, renames
/// the current file onto it, then writes the new current file.
fn replay_family(files: &[PathBuf], dst: &Path, stem: &str, pause: Duration) {
    let current = dst.join(format!("{stem}.jsonl"));
    for (i, src) in files.iter().enumerate() {
        if i > 0 {
            let rotated = dst.join(format!("{stem}_{i}.jsonl"));
            std::fs::write(&rotated, "").unwrap();
            std::thread::sleep(pause);
            std::fs::rename(&current, &rotated).unwrap();
        }
        let text = std::fs::read(src).unwrap();
        let mid = text.len() / 2;
        std::fs::write(&current, &text[..mid]).unwrap();
        std::thread::sleep(pause);
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&current)
            .unwrap()
            .write_all(&text[mid..])
            .unwrap();
        std::thread::sleep(pause);
    }
}

/// One scenario: (source folder, session path inside it, main stem, the
/// stems of its subagent families).
fn follow_and_compare(scenario: &str, poll: bool) {
    let src_folder = work_folder(scenario);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp
        .path()
        .join("sessions")
        .join(src_folder.file_name().unwrap());
    std::fs::create_dir_all(&work).unwrap();
    let flat = std::fs::read_dir(&src_folder)
        .unwrap()
        .all(|e| e.unwrap().path().is_file());
    let (src_dir, dst_dir, main_stem, target) = if flat {
        let main = std::fs::read_dir(&src_folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| !n.contains('_'))
            .unwrap();
        let sid = main.strip_suffix(".jsonl").unwrap().to_string();
        (src_folder.clone(), work.clone(), sid, work.join(&main))
    } else {
        let dir = first_entry(&src_folder);
        let dst = work.join(dir.file_name().unwrap());
        std::fs::create_dir_all(&dst).unwrap();
        (dir, dst.clone(), "context".to_string(), dst)
    };
    let pause = Duration::from_millis(if poll { 40 } else { 5 });
    // The first world line exists before following starts.
    let main = family(&src_dir, &main_stem);
    std::fs::write(
        dst_dir.join(format!("{main_stem}.jsonl")),
        std::fs::read(&main[0]).unwrap(),
    )
    .unwrap();
    let (rx, _h) = live::spawn(
        target.clone(),
        LiveOptions {
            poll,
            poll_interval: Duration::from_millis(20),
        },
    )
    .unwrap();
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, "initial", |_| true);
    // The rest of the main family (its first file rewritten in place).
    replay_family(&main, &dst_dir, &main_stem, pause);
    for n in 1.. {
        let stem = format!("{main_stem}_sub_{n}");
        let sub = family(&src_dir, &stem);
        if sub.is_empty() {
            break;
        }
        replay_family(&sub, &dst_dir, &stem, pause);
    }
    if src_dir.join("wire.jsonl").is_file() {
        std::fs::copy(src_dir.join("wire.jsonl"), dst_dir.join("wire.jsonl")).unwrap();
    }
    let want = session_json(&Session::load(&target).unwrap());
    let what = format!("{scenario} (poll: {poll})");
    let last = seen.until_snapshot(&rx, &what, |s| {
        let mut got = session_json(s);
        // Only the directory differs between a fixture and its copy.
        got["session_dir"] = want["session_dir"].clone();
        got == want
    });
    // What a fresh load of the original shows, too.
    let orig = session_json(
        &Session::load(&if flat {
            src_folder.join(target.file_name().unwrap())
        } else {
            src_dir.clone()
        })
        .unwrap(),
    );
    let got = session_json(&last);
    assert_eq!(got["world_lines"], orig["world_lines"], "{what}");
    assert_eq!(
        got["subagents"].as_array().unwrap().len(),
        orig["subagents"].as_array().unwrap().len(),
        "{what}"
    );
    for (g, o) in got["subagents"]
        .as_array()
        .unwrap()
        .iter()
        .zip(orig["subagents"].as_array().unwrap())
    {
        assert_eq!(g["world_lines"], o["world_lines"], "{what}");
    }
    assert!(seen.errors().is_empty(), "{what}: {:?}", seen.errors());
}

#[test]
fn flat_sessions_of_0_55_follow_live() {
    for poll in [false, true] {
        follow_and_compare("v0_55_dmail", poll);
        follow_and_compare("v0_55_subagent_dmail", poll);
    }
}

#[test]
fn context_sub_subagents_and_headerless_wires_follow_live() {
    for poll in [false, true] {
        follow_and_compare("v0_65_dmail", poll);
        follow_and_compare("v1_0_subagent_dmail", poll);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn fork_appears_while_watching(poll: bool) {
    let folder = work_folder("v1_40_0_fork_undo");
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp
        .path()
        .join("sessions")
        .join(folder.file_name().unwrap());
    let source = "0706220a-4234-46bf-958b-2c56b11dcb00";
    let fork = "1daf86b9-2123-4299-843b-fa06669261a9";
    copy_dir(&folder.join(source), &work.join(source));
    let mut cmd = common::worldline();
    cmd.env("KIMI_SHARE_DIR", tmp.path())
        .args(["watch", "--json", source]);
    if poll {
        cmd.arg("--poll");
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let lines = json_lines(&mut child);
    let wait_for = |what: &str, pred: &dyn Fn(&Value) -> bool| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => assert_ne!(v["event"], "fork", "{what}: early {v}"),
                Err(_) => panic!("timed out waiting for {what}"),
            }
        }
    };
    wait_for("the initial state", &|v| v["event"] == "world_line");
    // kimi-cli's fork_session: the directory, the copied context and wire,
    // then state.json with the title.
    let dst = work.join(fork);
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["context.jsonl", "wire.jsonl"] {
        std::fs::copy(folder.join(fork).join(f), dst.join(f)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    std::fs::copy(folder.join(fork).join("state.json"), dst.join("state.json")).unwrap();
    let ev = wait_for("the fork event", &|v| v["event"] == "fork");
    assert_eq!(ev["session"], fork);
    assert_eq!(ev["records"], 23);
    assert_eq!(ev["kind"], "fork");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_fork_made_while_the_source_is_watched_appears_live() {
    fork_appears_while_watching(false);
    fork_appears_while_watching(true);
}

#[test]
fn replay_copies_context_sub_and_flat_sessions() {
    let src = first_entry(&work_folder("v1_0_subagent_dmail"));
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("copy");
    common::replay_headless(&src, &dst);
    let shape = |p: &Path| {
        let mut v = session_json(&Session::load(p).unwrap());
        for k in ["session_dir", "session_id"] {
            v[k] = Value::Null;
        }
        v
    };
    assert_eq!(shape(&dst), shape(&src));

    // A flat session replays into a folder and opens by its main file.
    let flat = work_folder("v0_55_dmail").join("51938064-a483-4384-a1fd-6a12399385a7.jsonl");
    let folder = tmp.path().join("flat");
    common::replay_headless(&flat, &folder);
    assert_eq!(shape(&folder.join(flat.file_name().unwrap())), shape(&flat));
}

#[test]
fn watch_streams_a_flat_session_with_its_numbered_subagent() {
    let folder = work_folder("v0_55_subagent_dmail");
    let mut child = common::worldline()
        .args(["watch", "--json"])
        .arg(folder.join("fb737bcc-f403-41a3-b5cc-447f8d2fd329.jsonl"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = json_lines(&mut child);
    let mut world_lines = Vec::new();
    let mut subagent = None;
    let deadline = Instant::now() + PATIENCE;
    while world_lines.len() < 3 || subagent.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = lines.recv_timeout(left).expect("the initial state");
        match v["event"].as_str() {
            Some("world_line") => world_lines.push((
                v["agent"].as_str().unwrap().to_string(),
                v["file"].as_str().unwrap().to_string(),
                v["fork"]["kind"].as_str().map(str::to_string),
            )),
            Some("subagent") => subagent = Some(v),
            _ => {}
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let sid = "fb737bcc-f403-41a3-b5cc-447f8d2fd329";
    assert_eq!(
        world_lines,
        [
            ("main".to_string(), format!("{sid}.jsonl"), None),
            ("sub_1".to_string(), format!("{sid}_sub_1_1.jsonl"), None),
            (
                "sub_1".to_string(),
                format!("{sid}_sub_1.jsonl"),
                Some("dmail".to_string())
            ),
        ]
    );
    let subagent = subagent.unwrap();
    assert_eq!(subagent["agent_id"], "sub_1");
    assert_eq!(subagent["parent_tool_call_id"], "t1");
}
