//! Long lines are read in pieces (bounded memory); the index must come out
//! as if each line had been read whole.

use proptest::prelude::*;
use serde_json::{Map, Value};
use worldline::model::{Marker, Role};
use worldline::read::{index_file, load_body, FileIndex, Indexer};

/// JSON text with random white space (never a newline) between tokens and
/// strings that keep some characters raw that JSON usually escapes.
fn write(v: &Value, ws: &mut impl Iterator<Item = u8>, out: &mut Vec<u8>) {
    match v {
        Value::String(s) => {
            out.push(b'"');
            for (i, c) in s.chars().enumerate() {
                match c {
                    '"' => out.extend_from_slice(b"\\\""),
                    '\\' => out.extend_from_slice(b"\\\\"),
                    '\n' => out.extend_from_slice(b"\\n"),
                    '\r' | '\t' if i % 2 == 0 => out.push(c as u8),
                    c if (c as u32) < 0x20 || (i % 3 == 0 && !c.is_ascii()) => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            out.extend_from_slice(format!("\\u{u:04X}").as_bytes());
                        }
                    }
                    c => out.extend_from_slice(c.to_string().as_bytes()),
                }
            }
            out.push(b'"');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, ws, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(&Value::String(k.clone()), ws, out);
                out.push(b':');
                space(ws, out);
                write(item, ws, out);
            }
            out.push(b'}');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
    space(ws, out);
}

fn space(ws: &mut impl Iterator<Item = u8>, out: &mut Vec<u8>) {
    match ws.next().unwrap_or(0) % 6 {
        0 => out.push(b' '),
        1 => out.push(b'\t'),
        2 => out.push(b'\r'),
        _ => {}
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z \"\\\\\r\t\u{7}\u{e9}\u{1F600}]{0,30}",
        ("[A-Za-z0-9+/ \"\\\\\r\u{e9}]{1,12}", 0usize..400).prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,12}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        value(),
        (0i64..9).prop_map(|n| Value::from(format!("<system>CHECKPOINT {n}</system>"))),
        text().prop_map(|t| serde_json::json!([{"type": "text", "text": format!("agent_id: a{}\n{t}", t.len())}])),
        text().prop_map(|t| serde_json::json!([{"type": "image_url", "image_url": {"url": t}}])),
    ]
}

fn record() -> impl Strategy<Value = Value> {
    let role = prop_oneof![
        Just(Value::from("user")),
        Just(Value::from("assistant")),
        Just(Value::from("tool")),
        Just(Value::from("_checkpoint")),
        Just(Value::from("_usage")),
        Just(Value::from("system")),
        Just(Value::from(5)),
    ];
    let call = ("[a-z0-9]{1,8}", "SendDMail|Shell|ReadFile", text()).prop_map(|(id, name, a)| {
        serde_json::json!({"type": "function", "id": id, "function": {"name": name,
            "arguments": format!("{{\"message\": \"{}\", \"checkpoint_id\": 1}}", a.len())}})
    });
    (
        role,
        prop::option::of(0i64..100),
        prop::option::of(0u64..100_000),
        prop::option::of("[a-z0-9]{1,8}"),
        prop::option::of(prop::collection::vec(call, 0..3)),
        prop::option::of(content()),
        prop::collection::vec(("[a-z]{1,5}", value()), 0..3),
    )
        .prop_flat_map(|(role, id, tokens, call_id, calls, content, extra)| {
            let mut kv: Vec<(String, Value)> = vec![("role".into(), role)];
            kv.extend(id.map(|i| ("id".into(), i.into())));
            kv.extend(tokens.map(|t| ("token_count".into(), t.into())));
            kv.extend(call_id.map(|c| ("tool_call_id".into(), c.into())));
            kv.extend(calls.map(|c| ("tool_calls".into(), Value::Array(c))));
            kv.extend(content.map(|c| ("content".into(), c)));
            kv.extend(extra);
            Just(kv).prop_shuffle()
        })
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

/// A line, sometimes broken on purpose.
fn line() -> impl Strategy<Value = Vec<u8>> {
    (
        record(),
        prop::collection::vec(any::<u8>(), 64),
        0u8..10,
        any::<prop::sample::Index>(),
    )
        .prop_map(|(v, ws, harm, at)| {
            let mut out = Vec::new();
            write(&v, &mut ws.into_iter().cycle(), &mut out);
            let at = at.index(out.len() + 1);
            match harm {
                0 => out.truncate(at),
                1 => out.insert(at, b'x'),
                2 => drop(out.splice(at..at, *b"\\q")),
                3 => drop(out.splice(at..at, *b"\"\\u12")),
                4 => out.extend_from_slice(b"}"),
                _ => {}
            };
            out.retain(|&b| b != b'\n');
            out
        })
}

fn index(data: &[u8], chunk: usize, stream: Option<(usize, usize)>) -> FileIndex {
    let mut ix = Indexer::new("context.jsonl", "/nowhere");
    if let Some((threshold, keep)) = stream {
        ix = ix.with_stream_threshold(threshold, keep);
    }
    for piece in data.chunks(chunk.max(1)) {
        ix.push(piece);
    }
    ix.finish();
    ix.into_index()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn pieces_index_like_whole_lines(
        lines in prop::collection::vec(line(), 1..6),
        crlf in any::<bool>(),
        last_newline in any::<bool>(),
        chunk in 1usize..300,
        threshold in 0usize..64,
    ) {
        let mut data = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            data.extend_from_slice(l);
            if i + 1 < lines.len() || last_newline {
                data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
        }
        let whole = index(&data, data.len(), None);
        let pieces = index(&data, chunk, Some((threshold, 1 << 20)));
        prop_assert_eq!(&whole.records, &pieces.records);
        prop_assert_eq!(whole.bytes, pieces.bytes);
        prop_assert_eq!(whole.warnings.len(), pieces.warnings.len());
        for (w, p) in whole.warnings.iter().zip(&pieces.warnings) {
            prop_assert_eq!(w.line, p.line);
            // Lines the validator rejects are described in other words than
            // serde's (which need the whole line); everything else matches.
            let malformed = "skipped malformed line: not a well-formed JSON object";
            if !p.message.starts_with(malformed) {
                prop_assert_eq!(&w.message, &p.message);
            } else {
                prop_assert!(w.message.starts_with("skipped malformed line: "), "{}", w.message);
            }
        }

        // Fields kept only 1 KiB long: a record whose cut value hid
        // something says so in a warning; every other record is unchanged.
        let short = index(&data, chunk, Some((threshold, 1024)));
        let (notes, warnings): (Vec<_>, Vec<_>) =
            short.warnings.iter().partition(|w| w.message.contains("too long"));
        prop_assert_eq!(warnings.len(), pieces.warnings.len());
        prop_assert_eq!(short.records.len(), pieces.records.len());
        for (s, p) in short.records.iter().zip(&pieces.records) {
            if !notes.iter().any(|n| n.line == u64::from(s.line())) {
                prop_assert_eq!(s, p);
            }
        }
    }
}

/// A 30 MB image line between small ones, read by the file indexer with its
/// real threshold; the record's fields come from the pieces and its body
/// still loads from disk.
#[test]
fn a_30_mb_image_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.jsonl");
    let image = "iVBORw0KGgo".repeat(30_000_000 / 11);
    let mut data = Vec::new();
    data.extend_from_slice(b"{\"role\": \"_checkpoint\", \"id\": 0}\n");
    data.extend_from_slice(
        b"{\"role\":\"user\",\"content\":\"<system>CHECKPOINT 0</system>\"}\r\n",
    );
    let big = format!(
        "{{\"role\": \"tool\", \"content\": [{{\"type\": \"text\", \"text\": \"agent_id: a1\"}}, {{\"type\": \"image_url\", \"image_url\": {{\"url\": \"data:image/png;base64,{image}\"}}}}], \"tool_call_id\": \"call_9\"}}"
    );
    let big_at = data.len() as u64;
    data.extend_from_slice(big.as_bytes());
    data.extend_from_slice(b"\r\n");
    data.extend_from_slice(b"{\"role\":\"assistant\",\"content\":\"done\"}");
    std::fs::write(&path, &data).unwrap();

    let ix = index_file(&path, "context.jsonl").unwrap();
    assert!(ix.warnings.is_empty(), "{:?}", ix.warnings);
    assert_eq!(ix.records.len(), 4);
    let r = &ix.records[2];
    assert_eq!(
        (r.offset(), r.len() as usize, r.line()),
        (big_at, big.len(), 3)
    );
    assert_eq!(*r.role(), Role::Tool);
    assert_eq!(r.tool_call_id(), Some("call_9"));
    assert_eq!(
        r.marker().as_deref(),
        Some(&Marker::AgentResult("a1".into()))
    );
    assert_eq!(r.hash(), worldline::read::canonical_hash(big.as_bytes()));
    assert_eq!(ix.records[3].line(), 4);
    assert_eq!(ix.bytes, data.len() as u64);

    let body = load_body(&path, r).unwrap();
    assert_eq!(body.tool_call_id.as_deref(), Some("call_9"));
    assert_eq!(body.parts.len(), 2);
}

#[test]
fn a_streamed_line_keeps_tool_calls_with_megabytes_of_arguments() {
    let big = "x".repeat(6 << 20);
    let write_args = serde_json::json!({"path": "big.txt", "content": big}).to_string();
    let dmail_args = r#"{"message": "undo the big write", "checkpoint_id": 2}"#;
    let line = serde_json::json!({"role": "assistant", "content": "writing",
        "tool_calls": [
            {"type": "function", "id": "w1", "function": {"name": "WriteFile", "arguments": write_args}},
            {"type": "function", "id": "d1", "function": {"name": "SendDMail", "arguments": dmail_args}}]})
    .to_string();
    let mut data = line.into_bytes();
    data.push(b'\n');
    let ix = index(&data, 1 << 20, None);
    let r = &ix.records[0];
    assert!(ix.warnings.is_empty(), "{:?}", ix.warnings);
    assert_eq!(r.tool_calls().len(), 2);
    assert_eq!(r.tool_calls().get(0).map(|c| c.name()), Some("WriteFile"));
    let dmail = r.tool_calls().get(1).and_then(|c| c.dmail());
    let dmail = dmail.expect("SendDMail arguments read");
    assert_eq!(dmail.checkpoint_id, 2);
}
