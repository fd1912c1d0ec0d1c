//! The binary as a user runs it: finding sessions, output formats, exit codes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_worldline"));
    c.env_remove("KIMI_SHARE_DIR");
    c
}

mod common;

fn fixture(name: &str) -> PathBuf {
    common::fixture_session("kimi-cli", name)
}

/// A share dir holding copies of the given fixtures, under their real folders.
fn share_with(names: &[&str]) -> tempfile::TempDir {
    let share = tempfile::tempdir().unwrap();
    for n in names {
        let src = fixture(n);
        let work = src.parent().unwrap().file_name().unwrap();
        let dst = share
            .path()
            .join("sessions")
            .join(work)
            .join(src.file_name().unwrap());
        copy_dir(&src, &dst);
    }
    share
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn tree_json_is_the_contract() {
    let out = bin()
        .args(["tree", "--format", "json"])
        .arg(fixture("dmail_twice"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session_id"], "4790595f-e52c-4341-a141-f521d0d58738");
    let lines = v["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["fork"]["kind"], "dmail");
    assert_eq!(lines[2]["fork"]["checkpoint"], 2);
    assert_eq!(lines[2]["fork"]["origin"], "context_2.jsonl");
    assert_eq!(lines[2]["current"], true);
    for key in ["session_dir", "subagents", "dmail_attempts", "warnings"] {
        assert!(v.get(key).is_some(), "{key}");
    }
}

#[test]
fn a_context_file_argument_means_its_directory() {
    let f = fixture("dmail_basic").join("context_1.jsonl");
    let out = bin()
        .args(["tree", "--format", "json"])
        .arg(f)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["world_lines"].as_array().unwrap().len(), 2);
}

#[test]
fn text_dot_and_mermaid_show_the_dmail() {
    let dir = fixture("dmail_basic");
    let text = bin().arg("tree").arg(&dir).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("D-Mail → checkpoint 1"), "{text}");
    assert!(text.contains("only line 42 matters"), "{text}");
    let dot = bin()
        .args(["tree", "--format", "dot"])
        .arg(&dir)
        .output()
        .unwrap();
    let dot = String::from_utf8(dot.stdout).unwrap();
    assert!(
        dot.starts_with("digraph") && dot.contains("a0l0 -> a0l1"),
        "{dot}"
    );
    let mm = bin()
        .args(["tree", "--format", "mermaid"])
        .arg(&dir)
        .output()
        .unwrap();
    let mm = String::from_utf8(mm.stdout).unwrap();
    assert!(
        mm.starts_with("graph LR") && mm.contains("a0l0 -->|"),
        "{mm}"
    );
}

#[test]
fn errors_name_the_path_and_exit_2() {
    let out = bin()
        .args(["tree", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/definitely/not/here"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line, no backtrace: {err}");

    let empty = tempfile::tempdir().unwrap();
    let out = bin().arg("tree").arg(empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("no context file"));
}

#[test]
fn ids_prefixes_and_the_newest_session() {
    let share = share_with(&["dmail_basic", "dmail_twice", "with_clear"]);
    let run = |args: &[&str], cwd: &Path| {
        bin()
            .env("KIMI_SHARE_DIR", share.path())
            .current_dir(cwd)
            .args(args)
            .output()
            .unwrap()
    };
    let here = tempfile::tempdir().unwrap();
    // A unique prefix finds the session.
    let out = run(&["tree", "--format", "json", "4790"], here.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["world_lines"].as_array().unwrap().len(), 3);
    // An unknown id exits 2 and says what it looked for.
    let out = run(&["tree", "zzzz"], here.path());
    assert_eq!(out.status.code(), Some(2));
    // No argument: the newest session overall (none belongs to this cwd).
    let newest = share.path().join("sessions");
    let target = std::fs::read_dir(&newest)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let target = std::fs::read_dir(target)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(target.join("context.jsonl"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let out = run(&["tree", "--format", "json"], here.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["session_id"],
        target.file_name().unwrap().to_str().unwrap()
    );
    // list --all --json has every session with its world-line count.
    let out = run(&["list", "--all", "--json"], here.path());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["id"], target.file_name().unwrap().to_str().unwrap());
    let twice = rows
        .iter()
        .find(|r| r["id"] == "4790595f-e52c-4341-a141-f521d0d58738")
        .unwrap();
    assert_eq!(twice["world_lines"], 3);
    assert_eq!(twice["title"], "Do the thing");
}

#[test]
fn the_cwd_sessions_come_first() {
    let share = share_with(&["dmail_basic", "with_clear"]);
    // Register a work dir whose md5 is the folder of with_clear's session.
    let wd = tempfile::tempdir().unwrap();
    let hash = worldline::session::work_dir_hash(&wd.path().to_string_lossy());
    let src = fixture("with_clear");
    copy_dir(
        &src,
        &share.path().join("sessions").join(&hash).join("mine"),
    );
    let out = bin()
        .env("KIMI_SHARE_DIR", share.path())
        .current_dir(wd.path())
        .args(["list", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["id"], "mine");
    let out = bin()
        .env("KIMI_SHARE_DIR", share.path())
        .current_dir(wd.path())
        .args(["tree", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session_id"], "mine");
}
