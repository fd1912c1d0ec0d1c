//! Following a Claude Code session live: every fixture's files (the
//! session, its subagents' transcripts and metas, a `--fork-session` file)
//! are written again in chunks that cut lines in half, the way an agent
//! appends, while `worldline watch --json` follows; what watch reports in
//! the end equals `tree --format json` of the finished files.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, base, out);
        } else {
            out.push(p.strip_prefix(base).unwrap().to_path_buf());
        }
    }
    out.sort();
}

/// World lines of `tree --format json` (main and subagents) by agent and
/// name.
fn tree_state(v: &Value) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    let mut add = |agent: &str, lines: &Value| {
        for l in lines.as_array().unwrap() {
            let name = l["name"].as_str().unwrap().to_string();
            out.insert((agent.to_string(), name), l.clone());
        }
    };
    add("main", &v["world_lines"]);
    for s in v["subagents"].as_array().unwrap() {
        add(s["agent_id"].as_str().unwrap(), &s["world_lines"]);
    }
    out
}

/// The world lines watch has reported last, by agent and name.
fn watch_state(events: &[Value]) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for e in events {
        let agent = e["agent"].as_str().unwrap_or_default().to_string();
        match e["event"].as_str() {
            Some("world_line") => {
                let mut l = e.clone();
                let m = l.as_object_mut().unwrap();
                m.remove("event");
                m.remove("agent");
                out.insert((agent, e["name"].as_str().unwrap().to_string()), l);
            }
            Some("world_line_removed") => {
                out.remove(&(agent, e["file"].as_str().unwrap().to_string()));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn watch_ends_equal_to_tree_for_every_fixture() {
    for case in common::scenarios("claude-code") {
        follow_case(&case);
    }
}

fn follow_case(case: &Path) {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
    let src_home = case.join("home");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let mut all = Vec::new();
    files(&src_home, &src_home, &mut all);
    // The session watched: the one others are forked from, else the only.
    let sessions = expected["sessions"].as_object().unwrap();
    let (id, want) = sessions
        .iter()
        .find(|(_, s)| s["forked_from"].is_null())
        .unwrap();
    let main_rel = PathBuf::from(want["file"].as_str().unwrap());
    let main = home.join(&main_rel);
    std::fs::create_dir_all(main.parent().unwrap()).unwrap();
    let bytes: Vec<(PathBuf, Vec<u8>)> = all
        .iter()
        .map(|r| (home.join(r), std::fs::read(src_home.join(r)).unwrap()))
        .collect();
    // The session's first line exists before watch starts.
    let first = &bytes.iter().find(|(p, _)| *p == main).unwrap().1;
    let nl = first.iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&main, &first[..nl]).unwrap();
    let mut done: BTreeMap<PathBuf, usize> = BTreeMap::new();
    done.insert(main.clone(), nl);

    let mut child = common::worldline()
        .args(["watch", "--json"])
        .arg(&main)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            let v: Value = serde_json::from_str(&l).expect("each line is JSON");
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    // Chunks of 5000 bytes, round robin over the files, lines cut anywhere.
    const CHUNK: usize = 5000;
    loop {
        let mut wrote = false;
        for (p, b) in &bytes {
            let at = done.get(p).copied().unwrap_or(0);
            if at >= b.len() {
                continue;
            }
            let end = (at + CHUNK).min(b.len());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(p)
                .unwrap()
                .write_all(&b[at..end])
                .unwrap();
            done.insert(p.clone(), end);
            wrote = true;
        }
        if !wrote {
            break;
        }
        std::thread::sleep(Duration::from_millis(15));
    }
    let mut c = common::worldline();
    c.args(["tree", "--format", "json"]).arg(&main);
    let tree: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(tree["session_id"], id.as_str());
    let want_state = tree_state(&tree);
    let mut events = Vec::new();
    let deadline = Instant::now() + common::PATIENCE;
    let got = loop {
        while let Ok(v) = rx.try_recv() {
            events.push(v);
        }
        let got = watch_state(&events);
        if got == want_state || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        got,
        want_state,
        "{}: watch's last word vs tree",
        case.display()
    );
    // Mid-write a file can be torn (a meta.json half there, a result
    // naming an agent whose transcript comes next): warnings then are
    // fair; the finished files have none.
    assert_eq!(
        tree["warnings"],
        serde_json::json!([]),
        "{}",
        case.display()
    );
}
