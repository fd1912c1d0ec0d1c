//! Hand-made sessions for the cases real recordings don't cover.

mod common;

use common::*;
use worldline::export::json::session_json;
use worldline::worldline::{ForkKind, Session};

fn lines_json(s: &Session) -> Vec<serde_json::Value> {
    session_json(s)["world_lines"].as_array().unwrap().clone()
}

#[test]
fn malformed_lines_in_the_older_file_do_not_break_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = vec![sys()];
    old.extend(turn(0, "start", "ok"));
    old.insert(3, "{this is not json".to_string());
    old.extend(turn(1, "more", "fine"));
    old.push(dmail_call("c1", "skip the broken bit", 1));
    old.push(dmail_ok("c1"));
    let new = revert(&old, 1, "skip the broken bit");
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &new);
    let s = Session::load(dir.path()).unwrap();
    let l = &s.main().lines[1];
    let fork = l.fork.as_ref().unwrap();
    assert_eq!(fork.kind, ForkKind::Dmail);
    assert_eq!(fork.checkpoint, Some(1));
    assert_eq!(fork.message.as_deref(), Some("skip the broken bit"));
    assert_eq!(
        l.shared, 7,
        "sys + turn 0 (4) + cp1 + note, without the bad line"
    );
    assert_eq!(s.warnings.len(), 1);
    assert_eq!(s.warnings[0].file, "context_1.jsonl");
    assert_eq!(s.warnings[0].line, 4);
}

#[test]
fn revert_to_checkpoint_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", "start over", 0));
    old.push(dmail_ok("c1"));
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &revert(&old, 0, "start over"));
    let s = Session::load(dir.path()).unwrap();
    let j = lines_json(&s);
    assert_eq!(j[1]["fork"]["kind"], "dmail");
    assert_eq!(j[1]["fork"]["checkpoint"], 0);
    assert_eq!(j[1]["fork"]["origin"], "context_1.jsonl");
    assert_eq!(j[1]["shared_records"], 3);
}

#[test]
fn three_reverts_form_a_tree_not_a_chain() {
    let dir = tempfile::tempdir().unwrap();
    // context_1: checkpoints 0..=3.
    let mut w1 = vec![sys()];
    for n in 0..4 {
        w1.extend(turn(n, &format!("step {n}"), "done"));
    }
    w1.push(dmail_call("a", "back to 2", 2));
    w1.push(dmail_ok("a"));
    // context_2: back to 2, then works on.
    let mut w2 = revert(&w1, 2, "back to 2");
    w2.extend(turn(3, "second try", "hm"));
    w2.push(dmail_call("b", "back to 1", 1));
    w2.push(dmail_ok("b"));
    // context_3: back to 1, a checkpoint context_1 wrote: a sibling of context_2.
    let mut w3 = revert(&w2, 1, "back to 1");
    w3.extend(turn(2, "third try", "ok"));
    w3.push(dmail_call("c", "back to 2 again", 2));
    w3.push(dmail_ok("c"));
    // context.jsonl: back to 2, which context_3 wrote itself.
    let mut w4 = revert(&w3, 2, "back to 2 again");
    w4.push(assistant("finally"));
    write(dir.path(), "context_1.jsonl", &w1);
    write(dir.path(), "context_2.jsonl", &w2);
    write(dir.path(), "context_3.jsonl", &w3);
    write(dir.path(), "context.jsonl", &w4);
    let s = Session::load(dir.path()).unwrap();
    let j = lines_json(&s);
    let origins: Vec<_> = j.iter().map(|l| l["fork"]["origin"].clone()).collect();
    assert_eq!(
        origins,
        vec![
            serde_json::Value::Null,
            "context_1.jsonl".into(),
            "context_1.jsonl".into(),
            "context_3.jsonl".into()
        ]
    );
    let parents: Vec<_> = j.iter().map(|l| l["parent"].clone()).collect();
    assert_eq!(parents[2], "context_2.jsonl");
    let cps: Vec<_> = j.iter().map(|l| l["fork"]["checkpoint"].clone()).collect();
    assert_eq!(
        cps[1..],
        [
            serde_json::json!(2),
            serde_json::json!(1),
            serde_json::json!(2)
        ]
    );
    // Graph queries agree: the LCA of context_2's and context_3's last records is
    // context_1's CHECKPOINT 1 note, and three fork points exist.
    let m = s.main();
    use worldline::worldline::graph;
    let a = m.last_record(1).unwrap();
    let b = m.last_record(2).unwrap();
    let lca = graph::lowest_common_ancestor(m, a, b).unwrap();
    assert_eq!(lca.line, 0);
    assert_eq!(Some(lca), m.owner(2, m.lines[2].shared - 1));
    assert_eq!(graph::fork_points(m).len(), 3);
    let path = graph::path_from_root(m, b);
    assert_eq!(path.len(), m.files[2].records.len());
    let owners: Vec<_> = (0..path.len()).map(|r| m.owner(2, r).unwrap()).collect();
    assert_eq!(path, owners);
    assert_eq!(graph::predecessor(m, b), Some(path[path.len() - 2]));
    // One graph node per world line, a Fork edge into each that shares.
    let lines = s.agents.iter().flat_map(|a| &a.family.lines);
    assert_eq!(s.graph.node_count(), lines.clone().count());
    let forks = s
        .graph
        .edge_weights()
        .filter(|e| matches!(e, worldline::worldline::Edge::Fork { .. }));
    assert_eq!(forks.count(), lines.filter(|l| l.shared > 0).count());
}

#[test]
fn a_clear_then_a_dmail() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "hello", "hi"));
    let mut w2 = vec![sys()];
    w2.extend(turn(0, "fresh start", "ok"));
    w2.extend(turn(1, "go on", "went"));
    w2.push(dmail_call("d", "after clear", 1));
    w2.push(dmail_ok("d"));
    let w3 = revert(&w2, 1, "after clear");
    write(dir.path(), "context_1.jsonl", &w1);
    write(dir.path(), "context_2.jsonl", &w2);
    write(dir.path(), "context.jsonl", &w3);
    let s = Session::load(dir.path()).unwrap();
    let j = lines_json(&s);
    assert_eq!(j[1]["fork"]["kind"], "clear");
    assert_eq!(j[2]["fork"]["kind"], "dmail");
    assert_eq!(j[2]["fork"]["origin"], "context_2.jsonl");
    assert_eq!(j[2]["fork"]["message"], "after clear");
}

#[test]
fn an_empty_placeholder_is_not_a_world_line_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "a", "b"));
    write(dir.path(), "context.jsonl", &w1);
    write(dir.path(), "context_1.jsonl", &[]);
    let s = Session::load(dir.path()).unwrap();
    assert_eq!(s.main().lines.len(), 1);
    assert_eq!(s.main().lines[0].file, "context.jsonl");
    assert!(s.warnings.is_empty());
    // After a /clear, an empty context.jsonl is the current (empty) world line.
    std::fs::write(dir.path().join("context_1.jsonl"), w1.join("\n") + "\n").unwrap();
    std::fs::write(dir.path().join("context.jsonl"), "").unwrap();
    let s = Session::load(dir.path()).unwrap();
    let j = lines_json(&s);
    assert_eq!(j.len(), 2);
    assert_eq!(j[1]["records"], 0);
    assert_eq!(j[1]["fork"]["kind"], "clear");
}

#[test]
fn crlf_line_ends_read_like_lf() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "a", "b"));
    w1.push(dmail_call("x", "crlf", 0));
    w1.push(dmail_ok("x"));
    let w2 = revert(&w1, 0, "crlf");
    std::fs::write(dir.path().join("context_1.jsonl"), w1.join("\r\n") + "\r\n").unwrap();
    std::fs::write(dir.path().join("context.jsonl"), w2.join("\r\n")).unwrap();
    let s = Session::load(dir.path()).unwrap();
    let j = lines_json(&s);
    assert_eq!(j[0]["records"], 7);
    assert_eq!(j[1]["fork"]["kind"], "dmail");
    assert_eq!(j[1]["fork"]["message"], "crlf");
    let body = s
        .body(worldline::worldline::RecordRef {
            agent: 0,
            line: 1,
            record: 3,
        })
        .unwrap();
    assert!(body.text().ends_with("crlf</system>"));
}

#[test]
fn a_20_mb_line_is_indexed_and_its_body_loads() {
    let dir = tempfile::tempdir().unwrap();
    let image = "A".repeat(20 * 1024 * 1024);
    let big = serde_json::json!({"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{image}")}}]})
    .to_string();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "a", "b"));
    w1.push(big);
    w1.push(assistant("a big picture"));
    write(dir.path(), "context.jsonl", &w1);
    let s = Session::load(dir.path()).unwrap();
    let f = &s.main().files[0];
    assert_eq!(f.records.len(), 7);
    assert!(f.records[5].len() > 20_000_000);
    let body = s
        .body(worldline::worldline::RecordRef {
            agent: 0,
            line: 0,
            record: 5,
        })
        .unwrap();
    match &body.parts[1] {
        worldline::model::Part::Media { kind, bytes, .. } => {
            assert_eq!(kind, "image");
            assert!(*bytes > 20_000_000);
        }
        other => panic!("expected media, got {other:?}"),
    }
}

#[test]
fn refused_and_unanswered_dmails_are_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "a", "b"));
    w1.push(dmail_call("bad", "nope", 7));
    w1.push(dmail_err("bad", "There is no checkpoint with the given ID"));
    w1.push(dmail_call("later", "pending", 0));
    write(dir.path(), "context.jsonl", &w1);
    let s = Session::load(dir.path()).unwrap();
    let j = session_json(&s);
    assert_eq!(j["world_lines"].as_array().unwrap().len(), 1);
    let a = j["dmail_attempts"].as_array().unwrap();
    assert_eq!(a[0]["accepted"], false);
    assert_eq!(a[0]["error"], "There is no checkpoint with the given ID");
    assert_eq!(a[1]["accepted"], serde_json::Value::Null);
}

#[test]
fn a_dmail_from_outside_has_no_sender() {
    let dir = tempfile::tempdir().unwrap();
    let mut w1 = vec![sys()];
    w1.extend(turn(0, "a", "b"));
    w1.extend(turn(1, "c", "d"));
    write(dir.path(), "context_1.jsonl", &w1);
    write(
        dir.path(),
        "context.jsonl",
        &revert(&w1, 1, "from worldline send"),
    );
    let s = Session::load(dir.path()).unwrap();
    let fork = s.main().lines[1].fork.clone().unwrap();
    assert_eq!(fork.kind, ForkKind::Dmail);
    assert!(fork.sender.is_none());
}
