//! Codex threads through the binary, as a user runs it: every fixture's
//! `tree --format json` against its `expected.json` (every field), lookup
//! by id, id prefix and path under `CODEX_HOME`, `list` and the no-argument
//! session, a compressed rollout, the text tree, and bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod common;

fn bin(home: &Path) -> Command {
    let mut c = common::worldline();
    c.env("CODEX_HOME", home);
    // Empty kimi homes, so only Codex threads are there.
    c.env("KIMI_SHARE_DIR", home.join("no-kimi-cli-here"));
    c.env("KIMI_CODE_HOME", home.join("no-kimi-code-here"));
    c
}

fn run(home: &Path, args: &[&str]) -> String {
    let mut c = bin(home);
    c.args(args);
    common::stdout_of(c)
}

fn tree_json(home: &Path, what: &str) -> Value {
    serde_json::from_str(&run(home, &["tree", what, "--format", "json"])).unwrap()
}

/// The expected.json shape of a world-line list read back from worldline.
fn lines_of(v: &Value) -> Vec<Value> {
    v["world_lines"]
        .as_array()
        .unwrap()
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
        .collect()
}

fn current_of(v: &Value) -> Value {
    let cur: Vec<&Value> = v["world_lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["current"] == true)
        .map(|l| &l["leaf"])
        .collect();
    assert_eq!(cur.len(), 1, "one current world line: {v}");
    cur[0].clone()
}

/// What worldline says of one session, in expected.json's shape.
fn as_expected(case: &Path, got: &Value) -> Value {
    let file = Path::new(got["session_dir"].as_str().unwrap());
    let rel = file.strip_prefix(case).unwrap_or(file);
    let subagents: Vec<Value> = got["subagents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            json!({
                "agent_id": s["agent_id"],
                "parent_tool_call_id": s["parent_tool_call_id"],
                "world_lines": lines_of(s),
            })
        })
        .collect();
    json!({
        "file": rel.to_string_lossy(),
        "title": got["title"],
        "world_lines": lines_of(got),
        "current": current_of(got),
        "compactions": got["compactions"],
        "subagents": subagents,
        "forked_from": got["forked_from"].as_object().map(|f| json!({
            "session": f["session"], "after": f["after"]})),
    })
}

/// expected.json's session, with subagents reduced to what worldline
/// reports of them.
fn wanted(want: &Value) -> Value {
    let mut w = want.clone();
    if let Some(subs) = w["subagents"].as_array_mut() {
        for s in subs {
            let keep = json!({
                "agent_id": s["agent_id"],
                "parent_tool_call_id": s["parent_tool_call_id"],
                "world_lines": s["world_lines"],
            });
            *s = keep;
        }
    }
    w
}

fn cases() -> Vec<PathBuf> {
    common::scenarios("codex")
}

#[test]
fn every_fixture_matches_expected_through_tree_json() {
    let cases = cases();
    assert!(cases.len() >= 2, "{cases:?}");
    for case in cases {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        assert_eq!(expected["tool"], "codex");
        let home = case.join("home/.codex");
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let what = format!("{} {id}", case.display());
            let got = tree_json(&home, id);
            assert_eq!(got["tool"], "codex", "{what}");
            assert_eq!(got["session_id"], id.as_str(), "{what}");
            assert_eq!(as_expected(&case, &got), wanted(want), "{what}");
            // The same session by the path of its file.
            let by_path = tree_json(
                &home,
                case.join(want["file"].as_str().unwrap()).to_str().unwrap(),
            );
            assert_eq!(by_path["session_id"], id.as_str(), "{what}");
        }
        // A fork is listed by the session it came from, after the same entry.
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let Some(from) = want["forked_from"].as_object() else {
                continue;
            };
            let src = tree_json(&home, from["session"].as_str().unwrap());
            let forks: Vec<Value> = src["forks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| json!({"session": f["session"], "after": f["after"]}))
                .collect();
            assert!(
                forks.contains(&json!({"session": id, "after": from["after"]})),
                "{} {id}: {forks:?}",
                case.display()
            );
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

#[test]
fn lookup_by_id_prefix_list_and_no_argument_under_codex_home() {
    let case = common::scenarios("codex")
        .into_iter()
        .find(|c| c.ends_with("fork"))
        .unwrap();
    let home = case.join("home/.codex");
    // An id prefix, unique among the threads.
    let got = tree_json(&home, "01a2411a-42a2");
    assert_eq!(got["session_id"], "01a2411a-42a2-7e53-bdc4-9e29068deb3e");
    // An ambiguous prefix says so.
    let mut c = bin(&home);
    c.args(["tree", "01a2411a", "--format", "json"]);
    let out = c.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("01a2411a-3e5e") && err.contains("01a2411a-42a2"),
        "{err}"
    );
    // `list --all --json`: both threads, tool codex, cwd and first prompt,
    // the fork marked as one.
    let rows: Value = serde_json::from_str(&run(&home, &["list", "--all", "--json"])).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in rows {
        assert_eq!(r["tool"], "codex");
        assert_eq!(r["work_dir"], "/home/user/cx_fork");
    }
    let fork = rows
        .iter()
        .find(|r| r["id"] == "01a2411a-42a2-7e53-bdc4-9e29068deb3e")
        .unwrap();
    assert_eq!(fork["title"], "forked: a different third turn");
    assert_eq!(fork["forked_from"], "01a2411a-3e5e-7112-bcd7-79f58b8a74e7");
    // No argument, run in the thread's work dir: the newest thread there.
    let tmp = tempfile::tempdir().unwrap();
    let h2 = tmp.path().join("codex");
    copy_dir(&home, &h2);
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    for f in walk(&h2) {
        let text = std::fs::read_to_string(&f).unwrap();
        std::fs::write(
            &f,
            text.replace("/home/user/cx_fork", work.to_str().unwrap()),
        )
        .unwrap();
    }
    let mut c = bin(&h2);
    c.current_dir(&work).args(["tree", "--format", "json"]);
    let v: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(v["tool"], "codex");
    let mut c = bin(&h2);
    c.current_dir(&work).args(["list", "--json"]);
    let here: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(here.as_array().unwrap().len(), 2, "{here}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

fn fixture(name: &str) -> PathBuf {
    common::scenarios("codex")
        .into_iter()
        .find(|c| c.ends_with(name))
        .unwrap()
}

/// World lines and the rest of a session, without where it was read from.
fn shape(v: &Value) -> Value {
    json!({"lines": lines_of(v), "title": v["title"], "id": v["session_id"],
           "compactions": v["compactions"], "forked_from": v["forked_from"]})
}

#[test]
fn compressed_and_archived_rollouts_read_the_same() {
    let case = fixture("r_revert_compact");
    let home = case.join("home/.codex");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
    let (id, _) = expected["sessions"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let plain = tree_json(&home, id);
    // Both files of the thread compressed, in archived_sessions/.
    let tmp = tempfile::tempdir().unwrap();
    let h2 = tmp.path().join("codex");
    let arch = h2.join("archived_sessions");
    std::fs::create_dir_all(&arch).unwrap();
    for f in walk(&home) {
        let bytes = std::fs::read(&f).unwrap();
        let z = ruzstd::encoding::compress_to_vec(
            bytes.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let name = format!("{}.zst", f.file_name().unwrap().to_string_lossy());
        std::fs::write(arch.join(name), z).unwrap();
    }
    let packed = tree_json(&h2, id);
    assert_eq!(shape(&packed), shape(&plain));
    assert!(packed["session_dir"]
        .as_str()
        .unwrap()
        .ends_with(".jsonl.zst"));
    // Bodies load from the compressed files: the text tree shows prompts.
    let text = run(&h2, &["tree", id, "--format", "html"]);
    assert!(
        text.contains("after revert: another second turn"),
        "html lacks the prompt"
    );
}

/// A thread written by hand: its session_meta and `lines` after it.
fn write_thread(home: &Path, id: &str, meta_extra: &str, lines: &[String]) -> PathBuf {
    let dir = home.join("sessions/2026/12/05");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-12-05T10-00-00-{id}.jsonl"));
    let mut text = format!(
        "{{\"timestamp\":\"2026-12-05T10:00:00.000Z\",\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"cwd\":\"/w\"{meta_extra}}}}}\n"
    );
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn item(ord: u64, payload: &str) -> String {
    format!("{{\"ordinal\":{ord},\"type\":\"response_item\",\"payload\":{payload}}}")
}

fn prompt(ord: u64, text: &str) -> String {
    item(
        ord,
        &format!("{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{text}\"}}]}}"),
    )
}

#[test]
fn bad_input_warns_and_shows_what_is_there() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    // A fork whose source is gone, an ordinal gap and a repeat, a second
    // session_meta, an unknown type, a line that isn't JSON.
    let id = "01a30000-0000-7000-8000-000000000001";
    let gone = "01a30000-0000-7000-8000-0000000000aa";
    write_thread(
        &home,
        id,
        &format!(",\"forked_from_id\":\"{gone}\",\"forked_from_ordinal_exclusive\":7"),
        &[
            prompt(8, "the fork's prompt"),
            prompt(8, "a repeat"),
            prompt(12, "after a gap"),
            "{\"ordinal\":13,\"type\":\"session_meta\",\"payload\":{\"id\":\"someone-else\"}}"
                .into(),
            "{\"ordinal\":14,\"type\":\"hologram\",\"payload\":{\"beam\":1}}".into(),
            "this is not json".into(),
            "{\"ordinal\":15,\"type\":\"event_msg\",\"payload\":{\"type\":\"brand_new_event\"}}"
                .into(),
        ],
    );
    let v = tree_json(&home, id);
    assert_eq!(v["title"], "the fork's prompt");
    assert_eq!(v["forked_from"]["session"], gone);
    assert_eq!(v["forked_from"]["after"], "6");
    let lines = lines_of(&v);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["records"], 7, "{v}");
    assert_eq!(lines[0]["leaf"], "15");
    let warnings: Vec<String> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect();
    let has = |s: &str| warnings.iter().any(|w| w.contains(s));
    assert!(has("whose rollout is not here"), "{warnings:?}");
    assert!(has("repeats"), "{warnings:?}");
    assert!(has("skips"), "{warnings:?}");
    assert!(has("another session_meta"), "{warnings:?}");
    assert!(has("not a JSON rollout line"), "{warnings:?}");
    // Every other output still renders.
    for fmt in ["text", "dot", "mermaid", "svg", "html"] {
        run(&home, &["tree", id, "--format", fmt]);
    }
}

#[test]
fn a_legacy_rollback_starts_a_world_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    let id = "01a30000-0000-7000-8000-000000000002";
    let ev =
        |o: u64, p: &str| format!("{{\"ordinal\":{o},\"type\":\"event_msg\",\"payload\":{p}}}");
    let mut lines = Vec::new();
    let mut o = 1;
    for t in ["one", "two", "three"] {
        lines.push(ev(o, r#"{"type":"task_started"}"#));
        lines.push(prompt(o + 1, t));
        lines.push(item(o + 2, r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}"#));
        lines.push(ev(o + 3, r#"{"type":"task_complete"}"#));
        o += 4;
    }
    lines.push(ev(o, r#"{"type":"thread_rolled_back","num_turns":2}"#));
    lines.push(ev(o + 1, r#"{"type":"task_started"}"#));
    lines.push(prompt(o + 2, "two, again"));
    write_thread(&home, id, "", &lines);
    let v = tree_json(&home, id);
    assert_eq!(
        lines_of(&v),
        vec![
            json!({"leaf": "12", "parent": null, "after": null, "kind": null, "records": 13}),
            json!({"leaf": "15", "parent": "12", "after": "4", "kind": "rollback", "records": 8}),
        ]
    );
    assert_eq!(current_of(&v), "15");
    assert_eq!(v["world_lines"][1]["fork"]["prompt"], "two, again");
}

#[test]
fn an_older_codex_fork_with_a_copied_transcript_links_to_its_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("codex/sessions/2025/09/01");
    std::fs::create_dir_all(&dir).unwrap();
    let src = "01990000-0000-7000-8000-000000000001";
    let fork = "01990000-0000-7000-8000-000000000002";
    // No ordinals (older Codex): records are named by line index.
    let line = |ts: &str, ty: &str, payload: &str| {
        format!("{{\"timestamp\":\"2025-09-01T10:00:{ts}.000Z\",\"type\":\"{ty}\",\"payload\":{payload}}}\n")
    };
    let msg = |role: &str, text: &str| {
        format!("{{\"type\":\"message\",\"role\":\"{role}\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{text}\"}}]}}")
    };
    let src_meta = format!("{{\"id\":\"{src}\",\"cwd\":\"/w\"}}");
    let body = [
        ("response_item", msg("user", "first")),
        ("response_item", msg("assistant", "one")),
        ("response_item", msg("user", "second")),
        ("response_item", msg("assistant", "two")),
        ("response_item", msg("user", "third")),
    ];
    let mut s = line("00", "session_meta", &src_meta);
    for (ty, p) in &body {
        s += &line("01", ty, p);
    }
    std::fs::write(
        dir.join(format!("rollout-2025-09-01T10-00-00-{src}.jsonl")),
        s,
    )
    .unwrap();
    // The fork: its own meta, then the source's first four lines copied
    // (written later: other timestamps), then its own turn.
    let mut f = line(
        "30",
        "session_meta",
        &format!("{{\"id\":\"{fork}\",\"cwd\":\"/w\"}}"),
    );
    f += &line("30", "session_meta", &src_meta);
    for (ty, p) in &body[..3] {
        f += &line("30", ty, p);
    }
    f += &line(
        "31",
        "response_item",
        &msg("user", "the fork goes elsewhere"),
    );
    std::fs::write(
        dir.join(format!("rollout-2025-09-01T10-00-30-{fork}.jsonl")),
        f,
    )
    .unwrap();
    let home = tmp.path().join("codex");
    let v = tree_json(&home, fork);
    assert_eq!(v["forked_from"]["session"], src);
    assert_eq!(v["forked_from"]["after"], "3", "{}", v["forked_from"]);
    assert_eq!(lines_of(&v)[0]["records"], 6);
    let s = tree_json(&home, src);
    let forks: Vec<(Value, Value)> = s["forks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["session"].clone(), f["after"].clone()))
        .collect();
    assert_eq!(forks, vec![(json!(fork), json!("3"))]);
    // No warning for the copied session_meta: it is the format.
    assert_eq!(v["warnings"], json!([]));
}
