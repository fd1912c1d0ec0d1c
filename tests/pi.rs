//! Pi sessions through the binary, as a user runs it: every fixture's
//! `tree --format json` (looked up by id under `PI_CODING_AGENT_DIR`)
//! against its `expected.json`; lookup by path, id, prefix and the work
//! dir; `list`; bad input warned about by file and line.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod common;

/// The binary with only this Pi home: every other agent's home is empty.
fn bin(agent_dir: &Path) -> Command {
    let mut c = common::worldline();
    let nothing = agent_dir.join("no-other-agent-here");
    c.env("PI_CODING_AGENT_DIR", agent_dir)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env("KIMI_SHARE_DIR", &nothing)
        .env("KIMI_CODE_HOME", &nothing)
        .env("CLAUDE_CONFIG_DIR", &nothing)
        .env("CODEX_HOME", &nothing)
        .env("HOME", &nothing);
    c
}

fn tree_json(agent_dir: &Path, arg: &str) -> Value {
    let mut c = bin(agent_dir);
    c.args(["tree", arg, "--format", "json"]);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

/// The fields of expected.json, read back from worldline's output.
fn structure(got: &Value) -> Value {
    let lines = got["world_lines"].as_array().unwrap();
    let world_lines: Vec<Value> = lines
        .iter()
        .map(|l| {
            json!({
                "leaf": l["leaf"],
                "parent": l["parent"],
                "after": l["fork"]["after"],
                "kind": l["fork"]["kind"],
                "records": l["records"],
            })
        })
        .collect();
    let current: Vec<&Value> = lines
        .iter()
        .filter(|l| l["current"] == true)
        .map(|l| &l["leaf"])
        .collect();
    assert_eq!(current.len(), 1, "one current world line: {got}");
    let forked_from = match got["forked_from"].as_object() {
        Some(f) => json!({"session": f["session"], "after": f["after"]}),
        None => Value::Null,
    };
    json!({
        "title": got["title"],
        "world_lines": world_lines,
        "current": current[0],
        "compactions": got["compactions"],
        "subagents": got["subagents"],
        "forked_from": forked_from,
    })
}

fn expected_structure(want: &Value) -> Value {
    let mut w = want.clone();
    w.as_object_mut().unwrap().remove("file");
    w
}

fn agent_dir(case: &Path) -> PathBuf {
    case.join("home/.pi/agent")
}

#[test]
fn every_fixture_matches_expected_through_tree_json() {
    let cases = common::scenarios("pi");
    assert!(cases.len() >= 4);
    for case in cases {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        assert_eq!(expected["tool"], "pi");
        let home = agent_dir(&case);
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let got = tree_json(&home, id);
            let what = format!("{} {id}", case.display());
            assert_eq!(got["tool"], "pi", "{what}");
            assert_eq!(got["session_id"], id.as_str(), "{what}");
            let file = want["file"].as_str().unwrap();
            assert_eq!(
                Path::new(got["session_dir"].as_str().unwrap()),
                case.join(file),
                "{what}"
            );
            assert_eq!(structure(&got), expected_structure(want), "{what}");
            assert_eq!(got["warnings"], json!([]), "{what}");
            // Lineage both ways: a source names each fork at the same entry.
            for (other, w) in expected["sessions"].as_object().unwrap() {
                if w["forked_from"]["session"] == id.as_str() {
                    let forks: Vec<Value> = got["forks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|f| json!({"session": f["session"], "after": f["after"]}))
                        .collect();
                    assert!(
                        forks.contains(
                            &json!({"session": other, "after": w["forked_from"]["after"]})
                        ),
                        "{what}: {forks:?}"
                    );
                }
            }
        }
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

/// The fork case's files under a fresh agent dir, the source moved to the
/// folder of a work dir we run in: `parentSession` no longer names where
/// the source is, and it is found by its file name.
#[test]
fn lookup_by_path_id_prefix_and_work_dir_and_list() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("agent");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/fork");
    copy_dir(&agent_dir(&case), &home);
    let work = tmp.path().join("proj");
    std::fs::create_dir_all(&work).unwrap();
    let bucket = home
        .join("sessions")
        .join(worldline::sources::pi::home::cwd_key(
            work.to_str().unwrap(),
        ));
    std::fs::create_dir_all(&bucket).unwrap();
    let old = home.join("sessions/--home-user-fork--");
    let files: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&old)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let source_id = "01a24115-ac9f-70c2-ae2d-6a8a9e859d76";
    let fork_id = "01a24115-ad8b-70c2-ae2d-6a8d2424bb6e";

    // By path.
    let got = tree_json(&home, files[1].to_str().unwrap());
    assert_eq!(got["session_id"], fork_id);
    assert_eq!(got["forked_from"]["after"], "e12a15c3");
    // By id prefix; an ambiguous prefix names the candidates.
    assert_eq!(tree_json(&home, "01a24115-ad8b")["session_id"], fork_id);
    let mut c = bin(&home);
    c.args(["tree", "01a24115-a", "--format", "json"]);
    let out = c.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(source_id) && err.contains(fork_id), "{err}");

    // Moved: the source now lives in this work dir's folder.
    let moved = bucket.join(files[0].file_name().unwrap());
    std::fs::rename(&files[0], &moved).unwrap();
    let got = tree_json(&home, fork_id);
    assert_eq!(got["forked_from"]["session"], source_id);
    assert_eq!(got["forked_from"]["after"], "e12a15c3");
    // No argument in the work dir: its newest session of any agent.
    let mut c = bin(&home);
    c.current_dir(&work).args(["tree", "--format", "json"]);
    let got: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(got["session_id"], source_id);
    assert_eq!(got["tool"], "pi");

    // `list` here: the tool and Pi's title; `--all` sees both.
    let mut c = bin(&home);
    c.current_dir(&work).args(["list", "--json"]);
    let rows: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["tool"], "pi");
    assert_eq!(rows[0]["id"], source_id);
    assert_eq!(rows[0]["title"], "TOOLS=1 first turn");
    let mut c = bin(&home);
    c.current_dir(&work).args(["list", "--all", "--json"]);
    let rows: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let fork = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == fork_id)
        .expect("the fork is listed");
    assert_eq!(fork["forked_from"], source_id);
    assert_eq!(fork["world_lines"], 2);
    let mut c = bin(&home);
    c.current_dir(&work).args(["list"]);
    let table = common::stdout_of(c);
    assert!(table.contains("pi"), "{table}");
}

/// A session named with `session_info` is listed by that name; clearing
/// it falls back to the first prompt.
#[test]
fn title_is_the_latest_session_name_else_the_first_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("agent");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/linear");
    copy_dir(&agent_dir(&case), &home);
    let id = "01a24115-b31c-7216-9388-415d77da59cc";
    assert_eq!(tree_json(&home, id)["title"], "linear demo");
    let file = std::fs::read_dir(home.join("sessions/--home-user-linear--"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\":\"session_info\",\"id\":\"0000aaaa\",\"parentId\":\"162e00d7\",\"timestamp\":\"2026-12-04T12:44:32.000Z\",\"name\":\"\"}\n");
    std::fs::write(&file, text).unwrap();
    let got = tree_json(&home, id);
    assert_eq!(got["title"], "READ the README.md please");
    assert_eq!(got["world_lines"][0]["leaf"], "0000aaaa");
}

/// Broken files: warnings naming file and line, never a panic.
#[test]
fn bad_input_is_warned_about_by_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("agent");
    let dir = home.join("sessions/--x--");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("2026-01-01T00-00-00-000Z_0000-bad.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"0000-bad\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"gone\",\"message\":{\"role\":\"user\",\"content\":\"orphan\"}}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"d\",\"message\":{\"role\":\"user\",\"content\":\"cycle\"}}\n",
            "{\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"d\",\"message\":{\"role\":\"user\",\"content\":\"dup\"}}\n",
            "garbage\n",
        ),
    )
    .unwrap();
    let got = tree_json(&home, file.to_str().unwrap());
    let warnings = got["warnings"].as_array().unwrap();
    let lines: Vec<u64> = warnings
        .iter()
        .map(|w| w["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [3, 4, 6, 7], "{warnings:?}");
    assert!(warnings
        .iter()
        .all(|w| w["file"].as_str().unwrap().ends_with("0000-bad.jsonl")));
    // Three roots: a, the orphan b, and c (whose parent came later).
    assert_eq!(got["world_lines"].as_array().unwrap().len(), 3);
    // The text tree says the same on stderr or in its output, and exits 0.
    let mut c = bin(&home);
    c.args(["tree", file.to_str().unwrap()]);
    common::stdout_of(c);
}

/// Labels as Pi's `/tree` shows them: the last one per target, a cleared
/// one gone; on their target in JSON, the text tree and the TUI's rows;
/// the label entries themselves sit in the chain (a tail here).
#[test]
fn labels_show_on_their_targets() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("agent");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/tree_nav");
    copy_dir(&agent_dir(&case), &home);
    let file = std::fs::read_dir(home.join("sessions/--home-user-tree_nav--"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut text = std::fs::read_to_string(&file).unwrap();
    let label = |id: &str, parent: &str, target: &str, name: Option<&str>| {
        let name = name.map_or(String::new(), |n| format!(",\"label\":\"{n}\""));
        format!("{{\"type\":\"label\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-12-04T12:44:38.000Z\",\"targetId\":\"{target}\"{name}}}\n")
    };
    text.push_str(&label("1abe1001", "5c59adc0", "d475db40", Some("base")));
    text.push_str(&label("1abe1002", "1abe1001", "5c59adc0", Some("old")));
    text.push_str(&label("1abe1003", "1abe1002", "5c59adc0", None));
    text.push_str(&label("1abe1004", "1abe1003", "b99a99a4", Some("start")));
    std::fs::write(&file, text).unwrap();
    let id = "01a24115-cbb2-776f-ad41-353f3dd6da07";
    let got = tree_json(&home, id);
    assert_eq!(
        got["labels"],
        json!([{"entry": "d475db40", "label": "base"}, {"entry": "b99a99a4", "label": "start"}])
    );
    let lines = got["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["leaf"], "1abe1004");
    assert_eq!(lines[1]["current"], true);
    assert_eq!(lines[1]["records"], 15);
    let mut c = bin(&home);
    c.args(["tree", id]);
    let tree = common::stdout_of(c);
    assert!(tree.contains("[base] on d475db40"), "{tree}");
    // On the map (TUI and SVG): each name on the world line that holds its
    // entry, where the entry is.
    let s = worldline::worldline::Session::load(&file).unwrap();
    let map = worldline::worldline::map::Map::of_session(&s);
    let mut names: Vec<&str> = map.labels.iter().map(|l| l.text.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["base", "start"]);
    for l in &map.labels {
        let t = &map.tracks[l.line];
        assert!(t.own.contains(&l.x), "{l:?} on {:?}", t.own);
    }
    let start = map.labels.iter().find(|l| l.text == "start").unwrap();
    let row: String = worldline::ui::map::layout_track(&map, &map.tracks[start.line], 100)
        .iter()
        .map(|c| c.glyph)
        .collect();
    assert!(row.contains("[start]"), "{row}");
    let mut c = bin(&home);
    c.args(["tree", id, "--format", "svg"]);
    let svg = common::stdout_of(c);
    assert!(
        svg.contains("[base]") && svg.contains("[start]"),
        "labels in the SVG"
    );
}

/// A recorded session written again as Pi writes it (the buffered prefix
/// at once on the first message, then entry by entry, in uneven pieces,
/// some ending mid-line) while `watch --json` follows: the last
/// `world_line` event of each world line equals `tree --format json`.
#[test]
fn watch_follows_a_session_written_live() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("agent");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/compact");
    copy_dir(&agent_dir(&case), &home);
    let file = std::fs::read_dir(home.join("sessions/--home-user-compact--"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let full = std::fs::read(&file).unwrap();
    let cut = |n: usize| {
        full.iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(n - 1)
            .unwrap()
            .0
            + 1
    };
    // Header, model, thinking level, system prompt, first prompt.
    std::fs::write(&file, &full[..cut(5)]).unwrap();
    let mut child = bin(&home)
        .arg("watch")
        .arg(&file)
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
    let mut seen = Vec::new();
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
    wait_until(&|v| v["event"] == "world_line", &mut seen);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    let mut at = cut(5);
    let mut step = 3;
    while at < full.len() {
        let end = (at + step * 131).min(full.len());
        f.write_all(&full[at..end]).unwrap();
        f.flush().unwrap();
        at = end;
        step = step % 11 + 2;
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    wait_until(
        &|v| v["event"] == "world_line" && v["leaf"] == "801e8c82",
        &mut seen,
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    while let Ok(v) = rx.try_recv() {
        seen.push(v);
    }
    let tree = tree_json(&home, file.to_str().unwrap());
    // World lines by where they leave (the root line: nowhere).
    let mut last: std::collections::HashMap<String, Value> = Default::default();
    for e in seen.iter().filter(|e| e["event"] == "world_line") {
        let mut w = e.clone();
        let m = w.as_object_mut().unwrap();
        m.remove("event");
        m.remove("agent");
        last.insert(e["fork"]["after"].to_string(), w);
    }
    let lines = tree["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    for l in lines {
        assert_eq!(
            last.get(&l["fork"]["after"].to_string()),
            Some(l),
            "{seen:?}"
        );
    }
    assert_eq!(tree["warnings"], json!([]));
}

/// `replay` writes a Pi session again entry by entry at its own pace: the
/// copy ends byte for byte the original, with the same world lines.
#[test]
fn replay_writes_a_pi_session_again() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/compact");
    let home = agent_dir(&case);
    let src = std::fs::read_dir(home.join("sessions/--home-user-compact--"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("replay");
    let mut c = bin(&home);
    c.args(["replay", "--headless", "--speed", "1000", "--dir"])
        .arg(&dst)
        .arg(&src);
    let printed = common::stdout_of(c);
    let copy = PathBuf::from(printed.lines().next().expect("the path to open"));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&src).unwrap());
    let a = tree_json(&home, src.to_str().unwrap());
    let b = tree_json(&home, copy.to_str().unwrap());
    assert_eq!(a["world_lines"], b["world_lines"]);
    assert_eq!(a["compactions"], b["compactions"]);
}
