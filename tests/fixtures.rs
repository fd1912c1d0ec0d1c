//! Every recorded kimi-cli session rebuilds into the world lines its
//! `expected.json` gives; every legacy session reads cleanly.

use std::path::{Path, PathBuf};

use serde_json::Value;
use worldline::export::json::session_json;
use worldline::worldline::Session;

mod common;

fn session_dir(scenario: &Path) -> PathBuf {
    let name = scenario.file_name().unwrap().to_string_lossy();
    common::fixture_session("kimi-cli", &name)
}

fn check_lines(got: &[Value], want: &[Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: world line count");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g["file"], w["file"], "{what}");
        assert_eq!(g["parent"], w["parent"], "{what} {}", w["file"]);
        match w.get("kind") {
            None => assert!(
                g["fork"].is_null(),
                "{what} {}: no fork expected",
                w["file"]
            ),
            Some(kind) => {
                let fork = &g["fork"];
                assert_eq!(&fork["kind"], kind, "{what} {}", w["file"]);
                for key in ["checkpoint", "message", "origin"] {
                    if let Some(v) = w.get(key) {
                        assert_eq!(&fork[key], v, "{what} {} {key}", w["file"]);
                    }
                }
            }
        }
    }
}

#[test]
fn every_kimi_cli_fixture_matches_expected() {
    let all = common::scenarios("kimi-cli");
    assert!(all.len() >= 7, "fixtures missing");
    for scenario in all {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(scenario.join("expected.json")).unwrap())
                .unwrap();
        let s = Session::load(&session_dir(&scenario)).unwrap();
        let got = session_json(&s);
        check_lines(
            got["world_lines"].as_array().unwrap(),
            expected["main"].as_array().unwrap(),
            &name,
        );
        let want_subs = expected
            .get("subagents")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        assert_eq!(
            got["subagents"].as_array().unwrap().len() as u64,
            want_subs,
            "{name}"
        );
        assert!(
            got["warnings"].as_array().unwrap().is_empty(),
            "{name}: {}",
            got["warnings"]
        );
        // Exactly one current world line, the newest.
        let lines = got["world_lines"].as_array().unwrap();
        assert_eq!(lines.last().unwrap()["current"], true, "{name}");
        assert_eq!(
            lines.iter().filter(|l| l["current"] == true).count(),
            1,
            "{name}"
        );
    }
}

#[test]
fn dmail_forks_link_to_their_sending_call() {
    for scenario in [
        "dmail_basic",
        "dmail_twice",
        "thinking_tools",
        "dmail_errors",
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-cli")
            .join(scenario);
        let s = Session::load(&session_dir(&dir)).unwrap();
        let main = s.main();
        for line in main.lines.iter().skip(1) {
            let fork = line.fork.as_ref().unwrap();
            let sender = fork.sender.as_ref().expect("sender found");
            // The sender lives in the abandoned (parent) world line, and the
            // graph has a DMail edge from it to the injection.
            assert_eq!(sender.call.line, line.parent.unwrap(), "{scenario}");
            let rec = s.record(sender.call).unwrap();
            let args = rec
                .tool_calls
                .iter()
                .find(|c| c.id == sender.tool_call_id)
                .unwrap();
            assert_eq!(
                args.dmail.as_ref().unwrap().message,
                *fork.message.as_ref().unwrap()
            );
            let injection = line.nodes[line.shared];
            let from = main.lines[sender.call.line].nodes[sender.call.record];
            assert!(s
                .graph
                .edges_connecting(from, injection)
                .any(|e| *e.weight() == worldline::worldline::Edge::DMail));
        }
    }
}

#[test]
fn failed_dmails_are_attempts_not_forks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli/dmail_errors");
    let s = Session::load(&session_dir(&dir)).unwrap();
    let a = &s.main().attempts;
    assert_eq!(a.len(), 3);
    assert_eq!(
        a[0].error.as_deref(),
        Some("There is no checkpoint with the given ID")
    );
    assert_eq!(a[0].caused, None);
    assert_eq!(a[1].accepted, Some(true));
    assert_eq!(a[1].caused, Some(1));
    assert_eq!(
        a[2].error.as_deref(),
        Some("Only one D-Mail can be sent at a time")
    );
    assert_eq!(a[2].caused, None);
}

#[test]
fn subagent_attaches_to_its_agent_call() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli/subagent");
    let s = Session::load(&session_dir(&dir)).unwrap();
    assert_eq!(s.agents.len(), 2);
    let sub = &s.agents[1];
    let meta = sub.meta.as_ref().unwrap();
    assert_eq!(meta.agent_id, "aede5373b");
    assert_eq!(meta.subagent_type.as_deref(), Some("coder"));
    assert_eq!(meta.description.as_deref(), Some("explore repo"));
    assert_eq!(sub.parent_tool_call_id.as_deref(), Some("a1"));
    let call = s.record(sub.parent_call.unwrap()).unwrap();
    assert_eq!(call.tool_calls[0].name, "Agent");
    assert_eq!(sub.family.lines.len(), 1);
    assert_eq!(
        sub.family.lines[0].file,
        "subagents/aede5373b/context.jsonl"
    );
}

#[test]
fn wire_times_join_records() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli/dmail_twice");
    let s = Session::load(&session_dir(&dir)).unwrap();
    let main = &s.agents[0];
    assert!(!main.turns.is_empty());
    assert!(main.turns[0].duration().unwrap() >= 0.0);
    // Every tool call has the exact time of its wire ToolCall event, and times
    // never go backwards along the order records were written.
    let mut last = 0.0;
    let mut timed = 0;
    for (i, line) in main.family.lines.iter().enumerate() {
        for &n in &line.nodes[line.shared..] {
            assert_eq!(s.graph[n].owner.line, i);
            if let Some(t) = s.graph[n].time {
                assert!(t >= last, "time went backwards");
                last = t;
                timed += 1;
            }
        }
    }
    assert!(timed > 10, "only {timed} records have times");
}

#[test]
fn every_legacy_session_reads_with_sensible_counts() {
    for scenario in common::scenarios("kimi-code-legacy") {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let s = Session::load(&scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        let main = s.main();
        assert_eq!(main.lines.len(), 1, "{name}");
        let file = &main.files[0];
        let lines = std::fs::read_to_string(&file.path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        assert_eq!(file.records.len(), lines, "{name}: every line is a record");
        assert!(file.checkpoints() >= 1, "{name}");
        assert!(s.warnings.is_empty(), "{name}");
        // Bodies load, including images, audio and Chinese text.
        for r in 0..file.records.len() {
            let at = worldline::worldline::RecordRef {
                agent: 0,
                line: 0,
                record: r,
            };
            s.body(at)
                .unwrap_or_else(|e| panic!("{name} record {r}: {e}"));
        }
    }
}
