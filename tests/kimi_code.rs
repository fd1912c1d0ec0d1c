//! Kimi Code sessions through the binary, as a user runs it: every fixture's
//! `tree --format json` against its `expected.json` (computed from Kimi
//! Code's own tree code), lookup by work dir and id, `list`'s tool column,
//! and the text tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod common;

fn bin(home: &Path) -> Command {
    let mut c = common::worldline();
    c.env("KIMI_CODE_HOME", home);
    // An empty kimi-cli share dir, so only Kimi Code sessions are there.
    c.env("KIMI_SHARE_DIR", home.join("no-kimi-cli-here"));
    c
}

fn tree_json(home: &Path, id: &str) -> Value {
    let mut c = bin(home);
    c.args(["tree", id, "--format", "json"]);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

/// The fields of expected.json that `tree --format json` carries, read
/// back from worldline's output.
fn agent_structure(a: &Value) -> Value {
    let lines = a["world_lines"].as_array().unwrap();
    let branches: Vec<Value> = lines
        .iter()
        .map(|l| {
            let fork = &l["fork"];
            json!({
                "name": l["branch"],
                "parent": l["parent"],
                "fork_line": fork["line"],
                "reason": fork["kind"],
                "turns": fork["turns"],
                "inferred": fork["inferred"].as_bool().unwrap_or(false),
            })
        })
        .collect();
    let active: Vec<&Value> = lines
        .iter()
        .filter(|l| l["current"] == true)
        .map(|l| &l["branch"])
        .collect();
    assert_eq!(active.len(), 1, "one current branch: {a}");
    json!({
        "branches": branches,
        "active": active[0],
        "compactions": a["compactions"],
        "folded_undos": a["folded_undos"],
    })
}

fn expected_structure(want: &Value) -> Value {
    let branches: Vec<Value> = want["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            json!({
                "name": b["name"], "parent": b["parent"], "fork_line": b["fork_line"],
                "reason": b["reason"], "turns": b["turns"], "inferred": b["inferred"],
            })
        })
        .collect();
    json!({
        "branches": branches,
        "active": want["active"],
        "compactions": want["compactions"],
        "folded_undos": want["folded_undos"],
    })
}

#[test]
fn every_fixture_matches_expected_through_tree_json() {
    let cases = common::scenarios("kimi-code");
    assert!(cases.len() >= 8);
    for case in cases {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        let home = case.join("home");
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let got = tree_json(&home, id);
            let what = format!("{} {id}", case.display());
            assert_eq!(got["tool"], "kimi-code", "{what}");
            assert_eq!(got["session_id"], id.as_str(), "{what}");
            assert_eq!(got["title"], want["title"], "{what}");
            let forked = got["forked_from"]
                .as_object()
                .map(|f| json!({"session": f["session"], "line": f["line"]}));
            assert_eq!(forked.unwrap_or(Value::Null), want["forked_from"], "{what}");
            let agents = want["agents"].as_object().unwrap();
            assert_eq!(
                agent_structure(&got),
                expected_structure(&agents["main"]),
                "{what} main"
            );
            let subs = got["subagents"].as_array().unwrap();
            assert_eq!(subs.len(), agents.len() - 1, "{what}");
            for sub in subs {
                let sid = sub["agent_id"].as_str().unwrap();
                let want_sub = &agents[sid];
                assert_eq!(
                    agent_structure(sub),
                    expected_structure(want_sub),
                    "{what} {sid}"
                );
                assert_eq!(
                    sub["parent_tool_call_id"], want_sub["parent_tool_call_id"],
                    "{what} {sid}"
                );
                assert_eq!(sub["parent_line"], want_sub["parent_line"], "{what} {sid}");
            }
        }
    }
}

#[test]
fn the_fork_source_names_its_fork_and_both_show_it() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code/f_fork/home");
    let src = tree_json(&home, "session_4e021896");
    assert_eq!(
        src["forks"],
        // 9 records: the b1 conversation at line 80 (main's up to 47, then b1's).
        json!([{"session": "session_1a3e18d6-5ebd-4b84-926f-58eebc6be33d", "records": 9, "kind": "fork", "file": "agents/main/wire.jsonl", "line": 80}])
    );
    let mut c = bin(&home);
    c.args(["tree", "session_1a3e18d6"]);
    let text = common::stdout_of(c);
    assert!(
        text.contains("forked from session_4e021896-67ef-4507-b8b1-5fa40033df94 after line 80"),
        "{text}"
    );
    assert!(text.contains("undo of 1 turn after line 47"), "{text}");
}

/// A home whose index points at the recording work dir: `worldline` run
/// there finds the session, and a fresh bucket under Kimi Code's own key is
/// found too.
#[test]
fn lookup_by_work_dir_index_and_key_and_list_names_the_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code/d_compact_undo/home"),
        &home,
    );
    let work = tmp.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    // The index says the session belongs to the work dir we run in.
    let index = std::fs::read_to_string(home.join("session_index.jsonl"))
        .unwrap()
        .replace("/home/user/project", work.to_str().unwrap());
    std::fs::write(home.join("session_index.jsonl"), index).unwrap();
    // A second session in the bucket Kimi Code itself would use for `work`.
    let bucket = home
        .join("sessions")
        .join(worldline::sources::kimi_code::work_dir_key(
            work.to_str().unwrap(),
        ));
    let vis = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-code/vis_sample_compaction/home/sessions/wd_test_000000000000/session_fixture");
    copy_dir(&vis, &bucket.join("session_fixture"));

    let mut c = bin(&home);
    c.current_dir(&work).args(["list", "--json"]);
    let rows: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let mut ids: Vec<(&str, &str, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                r["world_lines"].as_u64().unwrap(),
            )
        })
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            (
                "session_6154a4f5-2d74-4bd1-9d43-55d80bc9bd7b",
                "kimi-code",
                2
            ),
            ("session_fixture", "kimi-code", 1),
        ]
    );
    let mut c = bin(&home);
    c.current_dir(&work).args(["list"]);
    let table = common::stdout_of(c);
    assert!(table.lines().next().unwrap().contains("TOOL"), "{table}");
    assert!(table.contains("kimi-code"), "{table}");

    // `tree` with no argument: the newest session of this work dir.
    let newest = home.join(
        "sessions/wd_project_65ebbb9ea3d1/session_6154a4f5-2d74-4bd1-9d43-55d80bc9bd7b/state.json",
    );
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&newest)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let mut c = bin(&home);
    c.current_dir(&work).args(["tree"]);
    let text = common::stdout_of(c);
    assert!(text.contains("d: compact then undo"), "{text}");
    assert!(text.contains("⊜ compacted at line 65"), "{text}");
    assert!(text.contains("undo of 1 turn after line 68"), "{text}");

    // A wire path works as a target too.
    let wire = home.join("sessions/wd_project_65ebbb9ea3d1/session_6154a4f5-2d74-4bd1-9d43-55d80bc9bd7b/agents/main/wire.jsonl");
    let mut c = bin(&home);
    c.args(["tree", "--format", "json"]).arg(&wire);
    let got: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(got["compactions"], json!([{"branch": "main", "line": 65}]));
}

#[test]
fn dot_and_mermaid_draw_the_branches() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code/o_undo/home");
    for fmt in ["dot", "mermaid"] {
        let mut c = bin(&home);
        c.args(["tree", "session_38161943", "--format", fmt]);
        let out = common::stdout_of(c);
        for b in ["branch main", "branch b1", "branch b2", "branch b3"] {
            assert!(out.contains(b), "{fmt}: {out}");
        }
        assert!(
            out.contains("undo of 2 turns after line 54 (inferred)"),
            "{fmt}: {out}"
        );
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to: PathBuf = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// A recorded wire written again piece by piece (half lines, a broken line
/// that a repair then truncates away) while `watch --json` follows: its
/// events end equal to `tree --format json` of the final files.
#[test]
fn watch_follows_a_wire_written_live_through_a_repair() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-code/r_two_undos_compact_fork/home"),
        &home,
    );
    let dir =
        home.join("sessions/wd_project_76860d8b5438/session_480a004a-1a94-4159-a609-f6ca09d99596");
    let wire = dir.join("agents/main/wire.jsonl");
    let full = std::fs::read(&wire).unwrap();
    let cut = |n: usize| {
        full.iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(n - 1)
            .unwrap()
            .0
            + 1
    };
    std::fs::write(&wire, &full[..cut(20)]).unwrap();

    let mut child = bin(&home)
        .arg("watch")
        .arg(&dir)
        .arg("--json")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&l).unwrap()).is_err() {
                return;
            }
        }
    });
    let wait_until = |want: &dyn Fn(&Value) -> bool, seen: &mut Vec<Value>| {
        let end = std::time::Instant::now() + common::PATIENCE;
        while std::time::Instant::now() < end {
            if let Ok(v) = rx.recv_timeout(std::time::Duration::from_millis(50)) {
                let hit = want(&v);
                seen.push(v);
                if hit {
                    return;
                }
            }
        }
        panic!("watch never said what was expected; saw {seen:?}");
    };
    let mut seen = Vec::new();
    wait_until(&|v| v["event"] == "world_line", &mut seen);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&wire)
        .unwrap();
    // Up to line 70 in uneven pieces, some ending mid-line.
    let mut at = cut(20);
    let mut step = 7;
    while at < cut(70) {
        let end = (at + step * 97).min(cut(70));
        f.write_all(&full[at..end]).unwrap();
        f.flush().unwrap();
        at = end;
        step = step % 13 + 5;
        std::thread::sleep(std::time::Duration::from_millis(15));
    }
    wait_until(
        &|v| v["event"] == "world_line" && v["branch"] == "b1",
        &mut seen,
    );
    // A broken line, reported, then repaired away (the valid prefix kept).
    f.write_all(b"{\"type\":\"context.append_mess\n").unwrap();
    f.flush().unwrap();
    wait_until(&|v| v["event"] == "warning", &mut seen);
    drop(f);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wire)
        .unwrap()
        .set_len(cut(70) as u64)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&wire)
        .unwrap();
    f.write_all(&full[cut(70)..]).unwrap();
    f.flush().unwrap();
    wait_until(
        &|v| v["event"] == "world_line" && v["branch"] == "b2",
        &mut seen,
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    while let Ok(v) = rx.try_recv() {
        seen.push(v);
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    while let Ok(v) = rx.try_recv() {
        seen.push(v);
    }

    let tree = tree_json(&home, "session_480a004a");
    let mut last: std::collections::HashMap<String, Value> = Default::default();
    let mut recs: std::collections::HashMap<String, usize> = Default::default();
    for e in &seen {
        if e["event"] == "world_line" && e["agent"] == "main" {
            let mut w = e.clone();
            let m = w.as_object_mut().unwrap();
            m.remove("event");
            m.remove("agent");
            last.insert(e["branch"].as_str().unwrap().to_string(), w);
        }
        if e["event"] == "record" {
            let b = e["branch"].as_str().unwrap().to_string();
            let n = recs.entry(b).or_default();
            *n = (*n).max(e["index"].as_u64().unwrap() as usize + 1);
        }
    }
    for l in tree["world_lines"].as_array().unwrap() {
        let b = l["branch"].as_str().unwrap();
        let mut w = last.get(b).cloned().unwrap_or_else(|| panic!("no {b}"));
        let n = w["records"].as_u64().unwrap() as usize;
        w["records"] = json!(n.max(recs.get(b).copied().unwrap_or(0)));
        assert_eq!(&w, l, "{b}");
    }
    assert_eq!(last.len(), 3);
    assert_eq!(tree["warnings"], json!([]));
}

/// One work dir with a kimi-cli session and a Kimi Code one: `list` shows
/// both with their tool, `tree` with no argument opens the newer, and each
/// id finds its own.
#[test]
fn a_work_dir_with_sessions_of_both_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    let wd = work.to_str().unwrap();
    // kimi-cli: sessions/md5(work)/<id>/
    let share = tmp.path().join("share");
    let cli_src = common::fixture_session("kimi-cli", "dmail_basic");
    let cli_id = cli_src.file_name().unwrap().to_str().unwrap().to_string();
    copy_dir(
        &cli_src,
        &share
            .join("sessions")
            .join(worldline::sources::kimi_cli::share::work_dir_hash(wd))
            .join(&cli_id),
    );
    // Kimi Code: its own bucket for the same work dir.
    let home = tmp.path().join("code");
    let code_src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-code/a_undo1/home/sessions/wd_project_96bc0f8fee16/session_8439c013-be7e-48ba-a4f0-5119fdbf8549");
    let code_dir = home
        .join("sessions")
        .join(worldline::sources::kimi_code::work_dir_key(wd))
        .join("session_8439c013-be7e-48ba-a4f0-5119fdbf8549");
    copy_dir(&code_src, &code_dir);
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(code_dir.join("state.json"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let run_here = |args: &[&str]| {
        let mut c = common::worldline();
        c.env("KIMI_SHARE_DIR", &share)
            .env("KIMI_CODE_HOME", &home)
            .current_dir(&work)
            .args(args);
        common::stdout_of(c)
    };
    let rows: Value = serde_json::from_str(&run_here(&["list", "--json"])).unwrap();
    let tools: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tools,
        [
            ("session_8439c013-be7e-48ba-a4f0-5119fdbf8549", "kimi-code"),
            (cli_id.as_str(), "kimi-cli"),
        ]
    );
    let newest: Value = serde_json::from_str(&run_here(&["tree", "--format", "json"])).unwrap();
    assert_eq!(newest["tool"], "kimi-code");
    let cli: Value =
        serde_json::from_str(&run_here(&["tree", &cli_id[..8], "--format", "json"])).unwrap();
    assert_eq!(cli["tool"], "kimi-cli");
    assert_eq!(cli["world_lines"][0]["file"], "context_1.jsonl");
    let code: Value =
        serde_json::from_str(&run_here(&["tree", "session_84", "--format", "json"])).unwrap();
    assert_eq!(code["world_lines"][1]["branch"], "b1");
}

/// `replay` plays a Kimi Code session too: its wires grow again record by
/// record, and the copy ends as the original.
#[test]
fn replay_plays_a_kimi_code_session_headless() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-code/r_two_undos_compact_fork/home");
    let out_dir = tempfile::tempdir().unwrap();
    let dst = out_dir.path().join("copy");
    let out = bin(&home)
        .args([
            "replay",
            "--headless",
            "--speed",
            "1000000",
            "session_480a004a",
            "--dir",
        ])
        .arg(&dst)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = |dir: &Path| {
        let out = bin(&home)
            .args(["tree", "--format", "json"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
        for k in ["session_dir", "session_id", "forks", "forked_from"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    let original = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .flat_map(|b| std::fs::read_dir(b.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("session_480a004a")
        })
        .unwrap();
    let copy = tree(&dst);
    assert_eq!(copy, tree(&original));
    assert!(copy["world_lines"].as_array().unwrap().len() >= 2, "{copy}");
}
