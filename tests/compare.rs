//! `worldline compare` through the binary, as a user runs it: on every
//! fixture with two world lines (kimi-cli D-Mails, compactions, clears,
//! Kimi Code undos and forks) the default pair parts where `tree --format
//! json` says the current line left its parent; what each line wrote and
//! ran; names; text and Markdown; a line named that isn't there.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;

fn bin() -> Command {
    let mut c = common::worldline();
    // No session of the machine's own is ever looked at.
    c.env("KIMI_SHARE_DIR", "/nonexistent/worldline-test");
    c.env("KIMI_CODE_HOME", "/nonexistent/worldline-test");
    c
}

fn run(args: &[&str], session: &Path) -> String {
    let mut c = bin();
    c.arg("compare").arg(session).args(args);
    common::stdout_of(c)
}

fn json_of(args: &[&str], session: &Path) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&run(&all, session)).unwrap()
}

fn tree_json(session: &Path) -> Value {
    let mut c = bin();
    c.args(["tree", "--format", "json"]).arg(session);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// Every session directory of every fixture worldline reads.
fn every_session() -> Vec<PathBuf> {
    let mut v = common::every_session();
    for scenario in common::scenarios("kimi-code") {
        let Ok(works) = std::fs::read_dir(scenario.join("home/sessions")) else {
            continue;
        };
        for w in works.flatten() {
            for s in std::fs::read_dir(w.path()).unwrap().flatten() {
                if s.path().is_dir() {
                    v.push(s.path());
                }
            }
        }
    }
    // Claude Code, Pi and Codex session files (and Kimi Code's, once more).
    v.extend(common::append_only_sessions());
    v.sort();
    v.dedup();
    v
}

#[test]
fn the_default_pair_parts_where_the_current_line_left_its_parent() {
    let mut compared = 0;
    for session in every_session() {
        let tree = tree_json(&session);
        let lines = tree["world_lines"].as_array().unwrap();
        if lines.len() < 2 {
            continue;
        }
        let c = json_of(&[], &session);
        let cur = lines
            .iter()
            .rposition(|l| l["current"] == true)
            .unwrap_or(lines.len() - 1);
        let line = &lines[cur];
        let name = |i: usize| worldline::worldline::names::line_name(i);
        assert_eq!(c["lines"][1]["name"], name(cur), "{}", session.display());
        // The shared part is what the tree says the current line shares.
        assert_eq!(
            c["fork"]["records"],
            line["shared_records"],
            "{}: {c:#}",
            session.display()
        );
        let fork = &line["fork"];
        if fork["kind"] == "dmail" {
            assert_eq!(
                c["fork"]["checkpoint"],
                fork["checkpoint"],
                "{}",
                session.display()
            );
            assert!(c["lines"][1]["reason"].as_str().unwrap().contains("D-Mail"));
        }
        if let Some(wire_line) = fork["line"].as_u64() {
            assert_eq!(c["fork"]["file_line"], wire_line, "{}", session.display());
        }
        // Formats that name their entries part after the entry the tree says.
        if let Some(after) = fork["after"].as_str() {
            assert_eq!(c["fork"]["entry"], after, "{}", session.display());
        }
        for l in c["lines"].as_array().unwrap() {
            let (calls, ok, errors) = (
                l["tool_calls"].as_u64().unwrap(),
                l["ok"].as_u64().unwrap(),
                l["errors"].as_u64().unwrap(),
            );
            assert!(ok + errors <= calls);
            assert_eq!(
                l["steps"].as_u64().unwrap() as usize,
                l["timeline"].as_array().unwrap().len()
            );
        }
        // Text and Markdown read the same session.
        assert!(run(&[], &session).contains("steps after the fork"));
        assert!(run(&["--format", "markdown"], &session).contains("|---|---|---|"));
        compared += 1;
    }
    // kimi-cli D-Mails, compactions, clears; Kimi Code undos and forks.
    assert!(
        compared >= 15,
        "only {compared} sessions had two world lines"
    );
}

#[test]
fn a_dmail_line_and_the_line_that_wrote_the_file() {
    let s = common::session_dir(&fixture("kimi-cli/thinking_tools"));
    let c = json_of(&["α", "β"], &s);
    assert_eq!(c["fork"]["checkpoint"], 1);
    assert_eq!(c["fork"]["steps"], 2);
    assert_eq!(
        c["lines"][0]["files_written"],
        serde_json::json!(["out.txt"])
    );
    assert_eq!(c["lines"][1]["files_written"], serde_json::json!([]));
    assert_eq!(c["lines"][0]["tool_calls"], 3);
    assert_eq!(c["lines"][1]["state"], "current");
    assert_eq!(
        c["lines"][1]["last_text"],
        "the future me wrote it. Done, the file exists."
    );
    let text = run(&[], &s);
    assert!(
        text.contains("shared: 2 steps (6 records), up to ⚑1"),
        "{text}"
    );
    assert!(text.contains("  - wrote out.txt"), "{text}");
    assert!(text.contains("⚑2 asst WriteFile out.txt ✓"), "{text}");
    let md = run(&["--format", "markdown"], &s);
    assert!(md.contains("- wrote `out.txt`"), "{md}");
    // The same pair by their file names, and reversed.
    let rev = json_of(&["context.jsonl", "context_1.jsonl"], &s);
    assert_eq!(
        rev["lines"][1]["files_written"],
        serde_json::json!(["out.txt"])
    );
    // One name: it and its parent.
    assert_eq!(json_of(&["β"], &s)["lines"][0]["name"], "α");
}

#[test]
fn kimi_code_branches_by_name() {
    let home = fixture("kimi-code/r_two_undos_compact_fork/home");
    let s = std::fs::read_dir(home.join("sessions/wd_project_76860d8b5438"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("480a004a"))
        .unwrap();
    let c = json_of(&["b1", "b2"], &s);
    assert_eq!(c["fork"]["file_line"], 87);
    assert_eq!(c["lines"][0]["branch"], "b1");
    assert_eq!(c["lines"][1]["branch"], "b2");
    assert!(c["lines"][1]["reason"].as_str().unwrap().contains("undo"));
    let main_b1 = json_of(&["main", "b1"], &s);
    assert_eq!(main_b1["fork"]["file_line"], 47);
    assert_eq!(
        main_b1["lines"][0]["timeline"][0]["text"],
        "Turn 3: to be undone."
    );
}

#[test]
fn a_line_that_is_not_there_exits_2_naming_the_lines() {
    let s = common::session_dir(&fixture("kimi-cli/dmail_twice"));
    let out = bin()
        .arg("compare")
        .arg(&s)
        .args(["α", "ω"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no world line \"ω\"") && err.contains("α, β, γ"),
        "{err}"
    );
    let one = common::session_dir(&fixture("kimi-cli/subagent"));
    let out = bin().arg("compare").arg(&one).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one world line"));
}

/// A kimi-cli session written here: α writes a.txt, edits b.txt and runs
/// a failing test; a D-Mail back to ⚑1 makes β, which writes a.txt again
/// and runs the tests.
fn both_wrote(dir: &Path) -> PathBuf {
    let s = dir.join("sess");
    std::fs::create_dir_all(&s).unwrap();
    let prefix = [
        r#"{"role": "_system_prompt", "content": "You are an agent."}"#,
        r#"{"role": "_checkpoint", "id": 0}"#,
        r#"{"role":"user","content":"<system>CHECKPOINT 0</system>"}"#,
        r#"{"role":"user","content":"fix the tests"}"#,
        r#"{"role": "_checkpoint", "id": 1}"#,
        r#"{"role":"user","content":"<system>CHECKPOINT 1</system>"}"#,
    ];
    let old = [
        r#"{"role":"assistant","content":"Writing.","tool_calls":[{"type":"function","id":"w1","function":{"name":"WriteFile","arguments":"{\"path\": \"a.txt\", \"content\": \"one\\n\"}"}},{"type":"function","id":"e1","function":{"name":"StrReplaceFile","arguments":"{\"path\": \"b.txt\", \"edit\": {\"old\": \"x\", \"new\": \"y\"}}"}}]}"#,
        r#"{"role":"tool","content":"<system>File successfully overwritten.</system>","tool_call_id":"w1"}"#,
        r#"{"role":"tool","content":"<system>File successfully edited.</system>","tool_call_id":"e1"}"#,
        r#"{"role": "_checkpoint", "id": 2}"#,
        r#"{"role":"user","content":"<system>CHECKPOINT 2</system>"}"#,
        r#"{"role":"assistant","content":"Testing.","tool_calls":[{"type":"function","id":"s1","function":{"name":"Shell","arguments":"{\"command\": \"cargo test\"}"}}]}"#,
        r#"{"role":"tool","content":"<system>ERROR: Command failed with exit code: 101.</system>","tool_call_id":"s1"}"#,
        r#"{"role":"assistant","content":"Going back.","tool_calls":[{"type":"function","id":"d1","function":{"name":"SendDMail","arguments":"{\"message\": \"a.txt is written; the test fails on b.txt.\", \"checkpoint_id\": 1}"}}]}"#,
        r#"{"role":"tool","content":"<system>If you see this message, the D-Mail was NOT sent successfully.</system>","tool_call_id":"d1"}"#,
    ];
    let new = [
        r#"{"role":"user","content":"<system>You just got a D-Mail from your future self. D-Mail content:\n\na.txt is written; the test fails on b.txt.</system>"}"#,
        r#"{"role": "_checkpoint", "id": 2}"#,
        r#"{"role":"user","content":"<system>CHECKPOINT 2</system>"}"#,
        r#"{"role":"assistant","content":"Again.","tool_calls":[{"type":"function","id":"w2","function":{"name":"WriteFile","arguments":"{\"path\": \"a.txt\", \"content\": \"two\\n\"}"}},{"type":"function","id":"s2","function":{"name":"Shell","arguments":"{\"command\": \"cargo test -q\"}"}}]}"#,
        r#"{"role":"tool","content":"<system>File successfully overwritten.</system>","tool_call_id":"w2"}"#,
        r#"{"role":"tool","content":"ok","tool_call_id":"s2"}"#,
        r#"{"role":"assistant","content":"All green."}"#,
    ];
    let write = |name: &str, rest: &[&str]| {
        let mut text: String = prefix
            .iter()
            .chain(rest)
            .map(|l| format!("{l}\n"))
            .collect();
        text.push_str("");
        std::fs::write(s.join(name), text).unwrap();
    };
    write("context_1.jsonl", &old);
    write("context.jsonl", &new);
    s
}

#[test]
fn files_both_lines_wrote_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let s = both_wrote(tmp.path());
    let c = json_of(&[], &s);
    assert_eq!(c["fork"]["checkpoint"], 1);
    assert_eq!(c["files_both"], serde_json::json!(["a.txt"]));
    assert_eq!(
        c["lines"][0]["files_written"],
        serde_json::json!(["a.txt", "b.txt"])
    );
    assert_eq!(c["lines"][0]["commands"], serde_json::json!(["cargo test"]));
    assert_eq!(c["lines"][0]["command_runs"][0]["ok"], false);
    assert_eq!(
        (
            c["lines"][0]["tool_calls"].as_u64(),
            c["lines"][0]["errors"].as_u64()
        ),
        (Some(4), Some(1))
    );
    assert_eq!(
        c["lines"][1]["commands"],
        serde_json::json!(["cargo test -q"])
    );
    assert_eq!(c["lines"][1]["last_text"], "All green.");
    let text = run(&[], &s);
    assert!(text.contains("files both touched: a.txt"), "{text}");
    assert!(text.contains("  ‼ wrote a.txt"), "{text}");
    assert!(text.contains("  $ cargo test ✗"), "{text}");
    let md = run(&["--format", "markdown"], &s);
    assert!(md.contains("**Files both touched:** `a.txt`"), "{md}");
}

fn markdown(session: &Path, line: Option<&str>) -> String {
    let mut c = bin();
    c.args(["tree", "--format", "markdown"]).arg(session);
    if let Some(l) = line {
        c.args(["--line", l]);
    }
    common::stdout_of(c)
}

#[test]
fn a_world_line_as_a_markdown_document() {
    let s = common::session_dir(&fixture("kimi-cli/thinking_tools"));
    let a = markdown(&s, Some("α"));
    assert!(a.starts_with("# write out.txt\n"), "{a}");
    assert!(a.contains("**User:**\n\n> write out.txt\n"), "{a}");
    // The write reads as a diff, its result folded.
    assert!(a.contains("→ **WriteFile** `out.txt`\n\n```diff\n--- a/out.txt\n+++ b/out.txt\n@@ -1,0 +1,1 @@\n+hi\n```"), "{a}");
    assert!(
        a.contains("<details><summary>← WriteFile ✓</summary>"),
        "{a}"
    );
    assert!(!a.contains("World line β"));
    let all = markdown(&s, None);
    assert!(
        all.contains("## World line β — context.jsonl (current)"),
        "{all}"
    );
    assert!(
        all.contains("> ✉ **D-Mail from the future**\n>\n> out.txt already written"),
        "{all}"
    );
    assert!(all.contains("Its first 6 records are α's"), "{all}");
    // Kimi Code: b2 read root to leaf holds what was kept, not what was undone.
    let home = fixture("kimi-code/r_two_undos_compact_fork/home");
    let kc = std::fs::read_dir(home.join("sessions/wd_project_76860d8b5438"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("480a004a"))
        .unwrap();
    let b2 = markdown(&kc, Some("b2"));
    for kept in [
        "Turn 1",
        "Turn 2",
        "Turn 4",
        "Turn 6",
        "→ **Bash** `echo scripted-tool`",
    ] {
        assert!(b2.contains(kept), "{kept}: {b2}");
    }
    for undone in ["Turn 3", "Turn 5"] {
        assert!(!b2.contains(undone), "{undone}: {b2}");
    }
    // Every fixture session reads as a document.
    for session in every_session() {
        assert!(
            markdown(&session, None).starts_with("# "),
            "{}",
            session.display()
        );
    }
    // A line not there, or --line without markdown: usage errors.
    let out = bin()
        .args(["tree", "--format", "markdown", "--line", "ω"])
        .arg(&s)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["tree", "--line", "α"])
        .arg(&s)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_html_report_shows_a_write_as_a_diff() {
    let s = common::session_dir(&fixture("kimi-cli/thinking_tools"));
    let mut c = bin();
    c.args(["tree", "--format", "html"]).arg(&s);
    let html = common::stdout_of(c);
    assert!(
        html.contains("out.txt +1 −0 (whole file written)"),
        "no diff head"
    );
    assert!(html.contains("<span style=\"color:#2f9e44\">+hi</span>"));
    assert!(
        !html.contains("&quot;content&quot;"),
        "the write's JSON arguments"
    );
}
