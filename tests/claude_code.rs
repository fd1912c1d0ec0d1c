//! Claude Code sessions through the binary, as a user runs it: every
//! fixture's `tree --format json` against its `expected.json` (world
//! lines' leaf, parent, fork point and kind, records; current; compactions;
//! subagents; lineage), lookup by path, id and prefix under
//! `CLAUDE_CONFIG_DIR`, `list`'s rows, `worldline` with no argument, and the
//! text tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod common;

fn fixtures() -> Vec<PathBuf> {
    common::scenarios("claude-code")
}

/// The binary with only this Claude Code home (and empty kimi homes).
fn bin(config: &Path, cwd: &Path) -> Command {
    let mut c = common::worldline();
    c.env("CLAUDE_CONFIG_DIR", config);
    c.env("KIMI_SHARE_DIR", config.join("no-kimi-cli-here"));
    c.env("KIMI_CODE_HOME", config.join("no-kimi-code-here"));
    c.current_dir(cwd);
    c
}

fn tree_json(config: &Path, arg: &str) -> Value {
    let mut c = bin(config, config);
    c.args(["tree", arg, "--format", "json"]);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

/// World lines as expected.json spells them, read back from worldline's.
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

fn expected_lines(v: &Value) -> Vec<Value> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|l| {
            json!({
                "leaf": l["leaf"], "parent": l["parent"], "after": l["after"],
                "kind": l["kind"], "records": l["records"],
            })
        })
        .collect()
}

#[test]
fn every_fixture_matches_expected_json() {
    let all = fixtures();
    assert_eq!(all.len(), 6, "the six recorded cases");
    for case in all {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        assert_eq!(expected["tool"], "claude-code");
        let config = case.join("home/.claude");
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let file = case.join("home").join(want["file"].as_str().unwrap());
            let ctx = format!("{} {id}", case.display());
            // By path and by id: the same answer.
            let got = tree_json(&config, file.to_str().unwrap());
            assert_eq!(got, tree_json(&config, id), "{ctx}: by path vs by id");
            assert_eq!(got["tool"], "claude-code", "{ctx}");
            assert_eq!(got["session_id"], id.as_str(), "{ctx}");
            assert_eq!(got["title"], want["title"], "{ctx}");
            assert_eq!(
                lines_of(&got),
                expected_lines(&want["world_lines"]),
                "{ctx}: world lines"
            );
            let current: Vec<&Value> = got["world_lines"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|l| l["current"] == true)
                .map(|l| &l["leaf"])
                .collect();
            assert_eq!(current, [&want["current"]], "{ctx}: current");
            assert_eq!(
                got["compactions"], want["compactions"],
                "{ctx}: compactions"
            );
            let subs: Vec<Value> = got["subagents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    json!({"agent_id": s["agent_id"],
                           "parent_tool_call_id": s["parent_tool_call_id"],
                           "world_lines": lines_of(s)})
                })
                .collect();
            let want_subs: Vec<Value> = want["subagents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    json!({"agent_id": s["agent_id"],
                           "parent_tool_call_id": s["parent_tool_call_id"],
                           "world_lines": expected_lines(&s["world_lines"])})
                })
                .collect();
            assert_eq!(subs, want_subs, "{ctx}: subagents");
            let ff = &got["forked_from"];
            let want_ff = &want["forked_from"];
            if want_ff.is_null() {
                assert!(ff.is_null(), "{ctx}: forked_from {ff}");
            } else {
                assert_eq!(ff["session"], want_ff["session"], "{ctx}");
                assert_eq!(ff["after"], want_ff["after"], "{ctx}");
            }
            assert!(
                got["warnings"].as_array().unwrap().is_empty(),
                "{ctx}: {}",
                got["warnings"]
            );
            // Lineage both ways: the source lists the fork at the same entry.
            if let Some(src) = want_ff["session"].as_str() {
                let s = tree_json(&config, src);
                let forks = s["forks"].as_array().unwrap();
                assert!(
                    forks
                        .iter()
                        .any(|f| f["session"] == id.as_str() && f["after"] == want_ff["after"]),
                    "{ctx}: {src} lists the fork: {forks:?}"
                );
            }
        }
    }
}

/// A copy of a fixture's Claude Code home in a temp dir, with the project
/// folder renamed to the key of `cwd` (so lookups by work dir find it).
fn home_for(case: &str, cwd: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/claude-code")
        .join(case)
        .join("home/.claude/projects");
    let project = std::fs::read_dir(&src)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let key: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dst = tmp.path().join("config/projects").join(key);
    copy_dir(&project, &dst);
    (tmp, dst)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn lookup_list_and_no_argument_under_claude_config_dir() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().canonicalize().unwrap();
    let (tmp, project) = home_for("fork_session", &cwd);
    let config = tmp.path().join("config");
    let source = "737cba29-c90a-4fa1-b3aa-b9d774e21c38";
    let fork = "6d48c9fa-283b-4b1c-8f56-3c471d2d1433";
    // By unique prefix, from anywhere.
    let v = tree_json(&config, "737cba");
    assert_eq!(v["session_id"], source);
    let mut c2 = bin(&config, &cwd);
    c2.args(["tree", "6d48c9fa-283b", "--format", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&common::stdout_of(c2)).unwrap()["session_id"],
        fork
    );
    // `list` here: both, tool claude-code, titles, world lines, the fork
    // under its source.
    let mut c = bin(&config, &cwd);
    c.args(["list", "--json"]);
    let rows: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in rows {
        assert_eq!(r["tool"], "claude-code");
        assert_eq!(r["title"], "T1 source start TOOLS=1");
    }
    let src_row = rows.iter().find(|r| r["id"] == source).unwrap();
    assert_eq!(src_row["world_lines"], 2);
    let fork_row = rows.iter().find(|r| r["id"] == fork).unwrap();
    assert_eq!(fork_row["forked_from"], source);
    // Elsewhere, `list` shows nothing; `list --all` shows both.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut c = bin(&config, elsewhere.path());
    c.args(["list", "--all", "--json"]);
    let all: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2);
    // No argument: the newest session of this directory.
    let newest = project.join(format!("{fork}.jsonl"));
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .append(true)
        .open(&newest)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let mut c = bin(&config, &cwd);
    c.args(["tree", "--format", "json"]);
    let v: Value = serde_json::from_str(&common::stdout_of(c)).unwrap();
    assert_eq!(v["session_id"], fork);
    // A subagent's transcript opens its session.
    let (tmp2, project2) = home_for("subagent", &cwd);
    let sub = project2
        .join("32050d3c-0f85-4b64-9d66-2ea5854a5e27/subagents/agent-a25969971faaf126d.jsonl");
    let v = tree_json(&tmp2.path().join("config"), sub.to_str().unwrap());
    assert_eq!(v["session_id"], "32050d3c-0f85-4b64-9d66-2ea5854a5e27");
}

#[test]
fn text_tree_names_each_world_line_with_its_reason() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-code/resume_at");
    let config = case.join("home/.claude");
    let mut c = bin(&config, &config);
    c.args(["tree", "8b0161b3"]);
    let out = common::stdout_of(c);
    assert!(out.contains("claude-code"), "{out}");
    assert!(out.contains("rewind"), "{out}");
    assert!(out.contains("T4 branch from after T1"), "{out}");
}

#[test]
fn every_record_body_loads_and_reads_as_a_message() {
    use worldline::model::{Part, Role};
    use worldline::worldline::{RecordRef, Session};
    let mut calls = 0;
    let mut thinking_or_text = 0;
    for case in fixtures() {
        let projects = case.join("home/.claude/projects");
        for project in std::fs::read_dir(&projects).unwrap() {
            for f in std::fs::read_dir(project.unwrap().path()).unwrap() {
                let path = f.unwrap().path();
                if path.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let s = Session::load(&path).unwrap();
                for (agent, a) in s.agents.iter().enumerate() {
                    for (line, file) in a.family.files.iter().enumerate() {
                        for record in 0..file.records.len() {
                            let r = RecordRef {
                                agent,
                                line,
                                record,
                            };
                            let b = s
                                .body(r)
                                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                            let meta = s.record(r).unwrap();
                            assert_eq!(&b.role, meta.role(), "{}", path.display());
                            // The index's calls are the body's calls.
                            assert_eq!(b.tool_calls.len(), meta.tool_calls().len());
                            calls += b.tool_calls.len();
                            if b.role == Role::Assistant
                                && b.parts
                                    .iter()
                                    .any(|p| matches!(p, Part::Text(_) | Part::Think(_)))
                            {
                                thinking_or_text += 1;
                            }
                            if b.role == Role::Tool {
                                assert!(b.tool_call_id.is_some());
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        calls > 20 && thinking_or_text > 20,
        "{calls} {thinking_or_text}"
    );
}
