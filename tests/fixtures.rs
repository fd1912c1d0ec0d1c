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
        for (i, line) in main.lines.iter().enumerate().skip(1) {
            let fork = line.fork.as_ref().unwrap();
            let sender = fork.sender.as_ref().expect("sender found");
            // The sender lives in the abandoned (parent) world line, and the
            // graph has a DMail edge from it to the injection.
            assert_eq!(sender.call.line, line.parent.unwrap(), "{scenario}");
            let rec = s.record(sender.call).unwrap();
            let args = rec
                .tool_calls()
                .iter()
                .find(|c| c.id() == Some(sender.tool_call_id.as_str()))
                .unwrap();
            assert_eq!(
                args.dmail().unwrap().message,
                *fork.message.as_ref().unwrap()
            );
            // The D-Mail edge: from the sender's segment to this world
            // line's, which starts with the injection.
            let from = main.lines[sender.call.line].node;
            assert!(line.shared < main.files[i].records.len(), "{scenario}");
            assert!(s
                .graph
                .edges_connecting(from, line.node)
                .any(|e| *e.weight()
                    == worldline::worldline::Edge::DMail {
                        call: sender.call.record
                    }));
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
    assert_eq!(call.tool_calls().first().map(|c| c.name()), Some("Agent"));
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
    let wire = worldline::sources::WireLog::read(&session_dir(&dir).join("wire.jsonl")).unwrap();
    assert!(!wire.checkpoint_times().is_empty());
    // Every tool call has the exact time of its wire ToolCall event, and times
    // never go backwards along the order records were written.
    let mut last = 0.0;
    let mut timed = 0;
    for (i, line) in main.family.lines.iter().enumerate() {
        for r in line.shared..main.family.files[i].records.len() {
            let at = main.family.owner(i, r).unwrap();
            assert_eq!(at.line, i);
            if let Some(t) = s.time(at) {
                assert!(t >= last, "time went backwards");
                last = t;
                timed += 1;
            }
        }
    }
    assert!(timed > 10, "only {timed} records have times");
}

/// `tree --format json` reads a session without times (it skips the wire):
/// its JSON must be what the timed read gives, on every session layout.
#[test]
fn json_is_the_same_read_with_or_without_times() {
    use worldline::sources::Reading;
    let untimed = Reading { times: false };
    let mut timed_somewhere = false;
    for dir in common::every_session() {
        let timed = Session::load(&dir).unwrap();
        let bare = Session::load_with(&dir, untimed).unwrap();
        assert_eq!(
            session_json(&timed),
            session_json(&bare),
            "{}",
            dir.display()
        );
        let f = &bare.agents[0].family;
        for (i, line) in f.lines.iter().enumerate() {
            for r in line.shared..f.files[i].records.len() {
                let at = f.owner(i, r).unwrap();
                assert_eq!(
                    bare.time(at),
                    None,
                    "{}: a time without the wire",
                    dir.display()
                );
                timed_somewhere |= timed.time(at).is_some();
            }
        }
    }
    assert!(timed_somewhere, "no fixture had times to leave out");
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
        if name == "broken-state-json" {
            // The one warning says the title file is unreadable, and where.
            assert_eq!(s.warnings.len(), 1, "{name}: {:?}", s.warnings);
            assert_eq!(s.warnings[0].file, "state.json", "{name}");
        } else {
            assert!(s.warnings.is_empty(), "{name}: {:?}", s.warnings);
        }
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

/// `worldline tree --format json <target>` with `KIMI_SHARE_DIR=share`.
fn tree_json(share: &Path, target: &str) -> Value {
    let mut c = common::worldline();
    c.env("KIMI_SHARE_DIR", share)
        .args(["tree", "--format", "json", target]);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The one work-dir folder of a scenario.
fn work_folder(scenario: &Path) -> PathBuf {
    std::fs::read_dir(scenario.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap()
}

/// Every way a user names a session: its path, a file in it, its id, and
/// for flat sessions the work-dir folder holding it.
fn targets(scenario: &Path, expected: &Value) -> Vec<String> {
    let folder = work_folder(scenario);
    let main_file = expected["main"].as_array().unwrap().last().unwrap()["file"]
        .as_str()
        .unwrap()
        .to_string();
    if expected["layout"] == "flat" {
        let sid = main_file.strip_suffix(".jsonl").unwrap().to_string();
        let oldest = expected["main"][0]["file"].as_str().unwrap();
        vec![
            folder.join(&main_file).display().to_string(),
            folder.join(oldest).display().to_string(),
            folder.display().to_string(),
            sid.clone(),
            sid[..8].to_string(),
        ]
    } else {
        let dir = common::session_dir(scenario);
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        vec![
            dir.display().to_string(),
            dir.join(&main_file).display().to_string(),
            id.clone(),
            id[..8].to_string(),
        ]
    }
}

fn check_lineage(got: &Value, want: Option<&Value>, what: &str) {
    match want {
        None => assert!(
            got["forked_from"].is_null(),
            "{what}: {}",
            got["forked_from"]
        ),
        Some(w) => {
            assert_eq!(got["forked_from"]["session"], w["session"], "{what}");
            assert_eq!(got["forked_from"]["records"], w["records"], "{what}");
        }
    }
}

#[test]
fn every_release_layout_matches_expected_through_the_binary() {
    let all = common::scenarios("kimi-cli-history");
    assert!(all.len() >= 5, "fixtures missing");
    for scenario in all {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let expected = read_json(&scenario.join("expected.json"));
        if expected.get("sessions").is_some() {
            continue; // several sessions: `forks_link_to_their_source`
        }
        for target in targets(&scenario, &expected) {
            let what = format!("{name} via {target}");
            let got = tree_json(&scenario, &target);
            check_lines(
                got["world_lines"].as_array().unwrap(),
                expected["main"].as_array().unwrap(),
                &what,
            );
            let subs = got["subagents"].as_array().unwrap();
            let want_subs = expected["subagents"].as_u64().unwrap_or(0);
            assert_eq!(subs.len() as u64, want_subs, "{what}");
            if let Some(want) = expected.get("subagent_world_lines") {
                check_lines(
                    subs[0]["world_lines"].as_array().unwrap(),
                    want.as_array().unwrap(),
                    &what,
                );
                // The subagent hangs off the parent's Task/Agent call.
                assert!(subs[0]["parent_tool_call_id"].is_string(), "{what}");
            }
            assert!(got["warnings"].as_array().unwrap().is_empty(), "{what}");
            check_lineage(&got, None, &what);
            // Every D-Mail that forked was accepted, and is linked to it.
            for a in got["dmail_attempts"].as_array().unwrap().iter().chain(
                subs.iter()
                    .flat_map(|s| s["dmail_attempts"].as_array().unwrap()),
            ) {
                assert_eq!(a["accepted"], true, "{what}: {a}");
                assert!(a["caused"].is_string(), "{what}: {a}");
            }
        }
    }
}

#[test]
fn forks_link_to_their_source() {
    let scenarios: Vec<PathBuf> = common::scenarios("kimi-cli-history")
        .into_iter()
        .filter(|s| {
            read_json(&s.join("expected.json"))
                .get("sessions")
                .is_some()
        })
        .collect();
    assert!(!scenarios.is_empty(), "no fork fixture");
    for scenario in scenarios {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let expected = read_json(&scenario.join("expected.json"));
        let sessions = expected["sessions"].as_object().unwrap();
        for (id, want) in sessions {
            let what = format!("{name} {id}");
            let got = tree_json(&scenario, id);
            assert_eq!(got["session_id"], id.as_str(), "{what}");
            assert_eq!(got["title"], want["title"], "{what}");
            check_lines(
                got["world_lines"].as_array().unwrap(),
                want["main"].as_array().unwrap(),
                &what,
            );
            check_lineage(&got, want.get("forked_from"), &what);
            if let Some(src) = want.get("forked_from") {
                let title = want["title"].as_str().unwrap();
                let kind = if title.starts_with("Undo: ") {
                    "undo"
                } else {
                    "fork"
                };
                assert_eq!(got["forked_from"]["kind"], kind, "{what}");
                // The source lists this fork, with the same prefix.
                let source = tree_json(&scenario, src["session"].as_str().unwrap());
                let back: Vec<&Value> = source["forks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|f| f["session"] == id.as_str())
                    .collect();
                assert_eq!(back.len(), 1, "{what}: {}", source["forks"]);
                assert_eq!(back[0]["records"], src["records"], "{what}");
                assert_eq!(back[0]["kind"], kind, "{what}");
            }
        }
        // Sessions nothing was forked from list no forks.
        let sources: Vec<&str> = sessions
            .values()
            .filter_map(|w| w["forked_from"]["session"].as_str())
            .collect();
        for id in sessions.keys() {
            if !sources.contains(&id.as_str()) {
                let got = tree_json(&scenario, id);
                assert_eq!(got["forks"], serde_json::json!([]), "{name} {id}");
            }
        }
    }
}

/// Copies a fixture session, resolves it, and rewrites it the way kimi-cli
/// would have: used to check what the title alone decides.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_tree(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
            let mut perm = std::fs::metadata(dst.join(e.file_name()))
                .unwrap()
                .permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(dst.join(e.file_name()), perm).unwrap();
        }
    }
}

#[test]
fn a_byte_identical_fork_is_told_from_its_source_by_title_and_an_untitled_copy_is_no_fork() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli-history/v1_40_0_fork_undo");
    let share = tempfile::tempdir().unwrap();
    copy_tree(&scenario.join("sessions"), &share.path().join("sessions"));
    let folder = work_folder(share.path());
    let fork = folder.join("1daf86b9-2123-4299-843b-fa06669261a9");
    // Same bytes, titled like the source: a second session named "one",
    // not a fork, and the real fork still finds one source.
    let twin = folder.join("00000000-0000-4000-8000-000000000000");
    copy_tree(&folder.join("0706220a-4234-46bf-958b-2c56b11dcb00"), &twin);
    let got = tree_json(share.path(), &twin.display().to_string());
    assert!(got["forked_from"].is_null());
    let got = tree_json(share.path(), &fork.display().to_string());
    assert_eq!(got["forked_from"]["records"], 23);
    // An `/undo` of turn 0: an empty session, linked by its title.
    let empty = folder.join("11111111-0000-4000-8000-000000000000");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("context.jsonl"), "").unwrap();
    std::fs::write(empty.join("state.json"), r#"{"custom_title": "Undo: one"}"#).unwrap();
    let got = tree_json(share.path(), &empty.display().to_string());
    assert_eq!(got["forked_from"]["records"], 0);
    assert_eq!(got["forked_from"]["kind"], "undo");
    // A fork whose source is gone is shown unlinked.
    std::fs::remove_dir_all(folder.join("0706220a-4234-46bf-958b-2c56b11dcb00")).unwrap();
    std::fs::remove_dir_all(&twin).unwrap();
    let got = tree_json(share.path(), &fork.display().to_string());
    assert!(got["forked_from"].is_null());
}

#[test]
fn a_session_left_with_only_its_rotation_reads_as_its_current_world_line() {
    // 0.65–1.3x: `/clear` rotates context.jsonl away and moves on to a new
    // session; the old directory keeps context_1.jsonl and wire.jsonl.
    let src = common::session_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli-history/v0_65_dmail"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(src.join("context_1.jsonl"), dir.join("context_1.jsonl")).unwrap();
    std::fs::copy(src.join("wire.jsonl"), dir.join("wire.jsonl")).unwrap();
    let got = tree_json(tmp.path(), &dir.display().to_string());
    let lines = got["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["file"], "context_1.jsonl");
    assert_eq!(lines[0]["current"], true);
}

#[test]
fn a_fork_leaves_its_source_at_the_last_copied_record_even_after_the_source_rotated() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-cli-history/v1_40_0_fork_undo");
    let share = tempfile::tempdir().unwrap();
    copy_tree(&scenario.join("sessions"), &share.path().join("sessions"));
    let folder = work_folder(share.path());
    let src = folder.join("0706220a-4234-46bf-958b-2c56b11dcb00");
    let fork = folder.join("1daf86b9-2123-4299-843b-fa06669261a9");
    let s = Session::load(&src).unwrap();
    let link = s.forks.iter().find(|f| f.dir == fork).unwrap().clone();
    let at = s.fork_point(&link).unwrap();
    assert_eq!((at.line, at.record), (0, 22));
    let f = Session::load(&fork).unwrap();
    let back = f.forked_from.clone().unwrap();
    assert_eq!(
        f.fork_point(&back).map(|r| (r.line, r.record)),
        Some((0, 22))
    );

    // The source goes on after the fork: a D-Mail back to an early
    // checkpoint rotates its context away. The fork still leaves the world
    // line it copied, now context_1.jsonl.
    let text = std::fs::read_to_string(src.join("context.jsonl")).unwrap();
    std::fs::rename(src.join("context.jsonl"), src.join("context_1.jsonl")).unwrap();
    let mut kept: Vec<&str> = text.lines().take(5).collect();
    let dmail = common::injection("back to the start");
    kept.push(&dmail);
    std::fs::write(src.join("context.jsonl"), kept.join("\n") + "\n").unwrap();
    let s = Session::load(&src).unwrap();
    assert_eq!(s.main().lines.len(), 2);
    let link = s.forks.iter().find(|f| f.dir == fork).unwrap().clone();
    assert_eq!(link.records, 23);
    let at = s.fork_point(&link).unwrap();
    assert_eq!((at.line, at.record), (0, 22));
    assert_eq!(s.main().lines[at.line].file, "context_1.jsonl");
    assert_eq!(link.source_file, "context_1.jsonl");
    // The JSON says so too, on both sides.
    let got = tree_json(share.path(), &src.display().to_string());
    let fk = got["forks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["session"] == "1daf86b9-2123-4299-843b-fa06669261a9")
        .unwrap()
        .clone();
    assert_eq!(fk["file"], "context_1.jsonl");
    let got = tree_json(share.path(), &fork.display().to_string());
    assert_eq!(got["forked_from"]["file"], "context_1.jsonl");
    let f = Session::load(&fork).unwrap();
    assert_eq!(f.forked_from.unwrap().records, 23);
}

#[test]
fn old_compactions_and_old_dmail_wording_in_a_flat_session() {
    use common::{assistant, cp, user, write};
    // kimi-cli 0.35: `/compact` goes back to before checkpoint 0 without a
    // new checkpoint, and the summary is an assistant message (content
    // parts). 0.5x's accepted D-Mail says "ERROR: … was not sent".
    let tmp = tempfile::tempdir().unwrap();
    let sid = "0a0a0a0a-1111-4222-8333-444444444444";
    let parts = |text: &str| serde_json::json!([{"type": "text", "text": text}]);
    let old = vec![
        cp(0),
        user("hello"),
        assistant("hi"),
        cp(1),
        user("more"),
        serde_json::json!({"role": "assistant", "content": "Sending.",
            "tool_calls": [{"type": "function", "id": "c1", "function": {"name": "SendDMail",
            "arguments": "{\"message\": \"m\", \"checkpoint_id\": 0}"}}]})
        .to_string(),
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": parts(
            "<system>ERROR: If you see this message, the D-Mail was not sent successfully. This may be because some other tool that needs approval was rejected.</system>")})
        .to_string(),
    ];
    let compacted = vec![
        serde_json::json!({"role": "assistant", "content": parts(
            "<system>Previous context has been compacted. Here is the compaction output:</system>")})
        .to_string(),
        user("next"),
    ];
    write(tmp.path(), &format!("{sid}_1.jsonl"), &old);
    write(tmp.path(), &format!("{sid}.jsonl"), &compacted);
    let got = tree_json(
        tmp.path(),
        &tmp.path()
            .join(format!("{sid}_1.jsonl"))
            .display()
            .to_string(),
    );
    let lines = got["world_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["fork"]["kind"], "compaction");
    let attempts = got["dmail_attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["accepted"], true);
    assert_eq!(attempts[0]["error"], Value::Null);
}
