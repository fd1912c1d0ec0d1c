//! The writer reproduces recorded kimi-cli sessions byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use worldline::kimi_writer::{
    payload, write_state_json, write_subagent_meta, Json, Message, Part, SessionWriter,
    SubagentMeta, ToolCall, ToolOutput, Usage, WireWriter, WIRE_PROTOCOL_VERSION,
};

fn fixture_session(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-cli")
        .join(name)
        .join("sessions");
    let hash = fs::read_dir(&root).unwrap().next().unwrap().unwrap().path();
    fs::read_dir(hash).unwrap().next().unwrap().unwrap().path()
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn system_prompt_of(session: &Path) -> String {
    let first = read(&session.join("context.jsonl"))
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let v: Value = serde_json::from_str(&first).unwrap();
    v["content"].as_str().unwrap().to_owned()
}

/// Wire events, each with its timestamp parsed from the text: serde_json's
/// float parsing may be one ulp off, Rust's `str::parse` is exact.
fn wire_events(session: &Path) -> Vec<(f64, Value)> {
    read(&session.join("wire.jsonl"))
        .lines()
        .skip(1)
        .map(|l| {
            let ts = l["{\"timestamp\": ".len()..]
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (ts, serde_json::from_str(l).unwrap())
        })
        .collect()
}

fn assert_same_lines(ours: &str, theirs: &str) {
    for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(a, b, "line {}", i + 1);
    }
    assert_eq!(ours.lines().count(), theirs.lines().count());
    assert_eq!(ours, theirs);
}

/// Replays fixtures/kimi-cli/dmail_basic through the writer.
#[test]
fn dmail_basic_byte_exact() {
    let fixture = fixture_session("dmail_basic");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("session");
    let mut w = SessionWriter::create(&dir, true).unwrap();

    let events = wire_events(&fixture);
    let read_output = events
        .iter()
        .map(|(_, e)| e)
        .find(|e| e["message"]["type"] == "ToolResult")
        .map(|e| {
            e["message"]["payload"]["return_value"]["output"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .unwrap();
    let read_result = ToolOutput::ok(
        "300 lines read from file starting from line 1. Total lines in file: 300. End of file reached.",
        read_output,
    );
    let dmail = "big.txt is 300 lines of lorem ipsum; only line 42 matters.";
    let read_call = ToolCall::new(
        "c1",
        "ReadFile",
        &Json::obj([("path", Json::str("big.txt"))]),
    );
    let dmail_call = ToolCall::new(
        "c2",
        "SendDMail",
        &Json::obj([
            ("message", Json::str(dmail)),
            ("checkpoint_id", Json::Int(1)),
        ]),
    );

    w.system_prompt(&system_prompt_of(&fixture)).unwrap();
    assert_eq!(w.checkpoint().unwrap(), 0);
    w.message(&Message::user("Find the important line in big.txt"))
        .unwrap();
    assert_eq!(w.checkpoint().unwrap(), 1);
    w.usage(937).unwrap();
    w.message(
        &Message::assistant("Let me read the big file.").with_tool_calls(vec![read_call.clone()]),
    )
    .unwrap();
    w.usage(958).unwrap();
    w.message(&Message::tool_result("c1", &read_result))
        .unwrap();
    w.checkpoint().unwrap();
    w.usage(974).unwrap();
    w.message(
        &Message::assistant("Too big. Sending a D-Mail.").with_tool_calls(vec![dmail_call.clone()]),
    )
    .unwrap();
    w.usage(996).unwrap();
    let accepted = ToolOutput::send_dmail(Ok(()));
    w.message(&Message::tool_result("c2", &accepted)).unwrap();

    let rotation = w.revert_to_checkpoint(1, dmail).unwrap();
    assert_eq!(rotation.index, 1);
    assert_eq!(rotation.rotated_to, dir.join("context_1.jsonl"));
    assert_eq!(w.n_checkpoints(), 2);
    assert_eq!(w.token_count(), 0, "no _usage before checkpoint 1");
    w.checkpoint().unwrap();
    w.usage(1011).unwrap();
    w.message(&Message::assistant(
        "Got the D-Mail; line 42 is what matters.",
    ))
    .unwrap();
    w.usage(1034).unwrap();

    for name in ["context_1.jsonl", "context.jsonl"] {
        assert_same_lines(&read(&dir.join(name)), &read(&fixture.join(name)));
    }

    write_state_json(&dir, "Find the important line in big.txt").unwrap();
    assert_eq!(
        read(&dir.join("state.json")),
        read(&fixture.join("state.json"))
    );

    // wire.jsonl: rebuild each event from its recorded values with our builders.
    let mut wire = WireWriter::create(dir.join("wire.jsonl"), WIRE_PROTOCOL_VERSION).unwrap();
    for (ts, e) in &events {
        let ts = *ts;
        let kind = e["message"]["type"].as_str().unwrap();
        let p = &e["message"]["payload"];
        let built = match kind {
            "TurnBegin" => payload::turn_begin(p["user_input"].as_str().unwrap()),
            "StepBegin" => payload::step_begin(p["n"].as_i64().unwrap()),
            "ContentPart" => payload::content_part(&Part::text(p["text"].as_str().unwrap())),
            "ToolCall" if p["id"] == "c1" => payload::tool_call(&read_call),
            "ToolCall" => payload::tool_call(&dmail_call),
            "ToolResult" if p["tool_call_id"] == "c1" => payload::tool_result("c1", &read_result),
            "ToolResult" => payload::tool_result("c2", &accepted),
            "StatusUpdate" => {
                let tu = &p["token_usage"];
                payload::status_update(Some(Usage {
                    context_tokens: p["context_tokens"].as_u64().unwrap(),
                    max_context_tokens: p["max_context_tokens"].as_u64().unwrap(),
                    output: tu["output"].as_u64().unwrap(),
                }))
            }
            "TurnEnd" => payload::empty(),
            other => panic!("unexpected {other}"),
        };
        wire.event_at(ts, kind, built).unwrap();
    }
    assert_same_lines(
        &read(&dir.join("wire.jsonl")),
        &read(&fixture.join("wire.jsonl")),
    );
}

#[test]
fn thinking_parts_and_checkpoint_zero_revert() {
    let fixture = fixture_session("thinking_tools");
    let tmp = tempfile::tempdir().unwrap();
    let mut w = SessionWriter::create(tmp.path(), true).unwrap();
    w.system_prompt(&system_prompt_of(&fixture)).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::user("write out.txt")).unwrap();
    w.checkpoint().unwrap();
    let todo = Json::obj([(
        "todos",
        Json::Array(vec![Json::obj([
            ("title", Json::str("write")),
            ("status", Json::str("in_progress")),
        ])]),
    )]);
    w.message(
        &Message::assistant(vec![Part::think("I should plan."), Part::text("Planning.")])
            .with_tool_calls(vec![ToolCall::new("t1", "SetTodoList", &todo)]),
    )
    .unwrap();
    w.message(&Message::tool_result(
        "t1",
        &ToolOutput::ok("Todo list updated", "Todo list updated"),
    ))
    .unwrap();
    w.checkpoint().unwrap();
    let args = Json::obj([
        ("path", Json::str("out.txt")),
        ("content", Json::str("hi\n")),
    ]);
    w.message(
        &Message::assistant("Writing.").with_tool_calls(vec![ToolCall::new(
            "w1",
            "WriteFile",
            &args,
        )]),
    )
    .unwrap();
    w.message(&Message::tool_result(
        "w1",
        &ToolOutput::ok("File successfully overwritten. Current size: 3 bytes.", ""),
    ))
    .unwrap();
    w.checkpoint().unwrap();
    let msg = "out.txt already written with 'hi'. Do not write it again.";
    let args = Json::obj([("message", Json::str(msg)), ("checkpoint_id", Json::Int(1))]);
    w.message(
        &Message::assistant("Rewind.").with_tool_calls(vec![ToolCall::new(
            "d1",
            "SendDMail",
            &args,
        )]),
    )
    .unwrap();
    w.message(&Message::tool_result("d1", &ToolOutput::send_dmail(Ok(()))))
        .unwrap();
    // A D-Mail body is stripped before injection.
    w.revert_to_checkpoint(1, &format!("  {msg}\n")).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant(vec![
        Part::think("the future me wrote it."),
        Part::text("Done, the file exists."),
    ]))
    .unwrap();
    for name in ["context_1.jsonl", "context.jsonl"] {
        assert_same_lines(&read(&tmp.path().join(name)), &read(&fixture.join(name)));
    }
}

#[test]
fn compaction_and_error_results_byte_exact() {
    let fixture = fixture_session("with_compact");
    let tmp = tempfile::tempdir().unwrap();
    let prompt = system_prompt_of(&fixture);
    let mut w = SessionWriter::create(tmp.path(), true).unwrap();
    w.system_prompt(&prompt).unwrap();
    for (user, answer) in [("one", "turn one."), ("two", "turn two.")] {
        w.checkpoint().unwrap();
        w.message(&Message::user(user)).unwrap();
        w.checkpoint().unwrap();
        w.message(&Message::assistant(answer)).unwrap();
    }
    let preserved = [
        Message::user(vec![Part::text("<system>CHECKPOINT 3</system>")]),
        Message::assistant("turn two."),
    ];
    let r = w
        .compact(
            &prompt,
            "COMPACTED SUMMARY of turns one and two.",
            &preserved,
            Some(40),
        )
        .unwrap();
    assert_eq!(r.index, 1);
    w.checkpoint().unwrap();
    w.message(&Message::user("three")).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant("after compaction.")).unwrap();
    for name in ["context_1.jsonl", "context.jsonl"] {
        assert_same_lines(&read(&tmp.path().join(name)), &read(&fixture.join(name)));
    }

    let err = ToolOutput::send_dmail(Err("There is no checkpoint with the given ID".into()));
    assert_eq!(
        worldline::kimi_writer::message_line(&Message::tool_result("c1", &err)),
        "{\"role\":\"tool\",\"content\":\"<system>ERROR: Failed to send D-Mail. Error: There is no checkpoint with the given ID</system>\",\"tool_call_id\":\"c1\"}\n"
    );
}

#[test]
fn clear_leaves_an_empty_context() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = SessionWriter::create(tmp.path(), true).unwrap();
    w.system_prompt("p").unwrap();
    w.checkpoint().unwrap();
    let r = w.clear().unwrap();
    assert_eq!(r.rotated_to, tmp.path().join("context_1.jsonl"));
    assert_eq!(read(&tmp.path().join("context.jsonl")), "");
    assert_eq!(w.n_checkpoints(), 0);
}

#[test]
fn subagent_meta_byte_exact() {
    let fixture = fixture_session("subagent").join("subagents/aede5373b");
    let tmp = tempfile::tempdir().unwrap();
    let meta = SubagentMeta {
        agent_id: "aede5373b".into(),
        subagent_type: "coder".into(),
        status: "idle".into(),
        description: "explore repo".into(),
        created_at: 1796068988.7082503,
        updated_at: 1796068989.106171,
    };
    write_subagent_meta(tmp.path(), &meta).unwrap();
    assert_eq!(
        read(&tmp.path().join("meta.json")),
        read(&fixture.join("meta.json"))
    );
}

#[test]
fn revert_drops_malformed_lines_and_skips_taken_rotation_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = SessionWriter::create(dir, false).unwrap();
    w.system_prompt("p").unwrap();
    w.checkpoint().unwrap();
    w.write_line("not json\n").unwrap();
    w.write_line("\n").unwrap();
    w.write_line("[1, 2]\n").unwrap();
    w.write_line("{\"role\":\"user\",\"content\":\"raw\ttab\"}\n")
        .unwrap();
    w.usage(12).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant("gone")).unwrap();
    // A stray higher rotation makes the next one context_8 (max N + 1).
    fs::write(dir.join("context_7.jsonl"), "").unwrap();
    w.revert_to_checkpoint(1, "hello").unwrap();
    assert!(dir.join("context_8.jsonl").exists());
    let text = read(&dir.join("context.jsonl"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "{\"role\": \"_system_prompt\", \"content\": \"p\"}"
    );
    assert_eq!(lines[1], "{\"role\": \"_checkpoint\", \"id\": 0}");
    assert_eq!(lines[2], "{\"role\":\"user\",\"content\":\"raw\ttab\"}");
    assert_eq!(lines[3], "{\"role\": \"_usage\", \"token_count\": 12}");
    assert_eq!(lines[4], "{\"role\": \"_checkpoint\", \"id\": 1}");
    assert!(lines[5].ends_with("D-Mail content:\\n\\nhello</system>\"}"));
    assert_eq!(lines.len(), 6);
    assert_eq!(w.token_count(), 12);
    assert!(w.revert_to_checkpoint(5, "x").is_err());
}

#[test]
fn dmail_injection_matches_fixture_line() {
    let fixture = fixture_session("dmail_basic");
    let text = read(&fixture.join("context.jsonl"));
    let line = text.lines().find(|l| l.contains("D-Mail content")).unwrap();
    let ours =
        worldline::kimi_writer::message_line(&worldline::kimi_writer::dmail_injection_message(
            "big.txt is 300 lines of lorem ipsum; only line 42 matters.",
        ));
    assert_eq!(ours, format!("{line}\n"));
}
