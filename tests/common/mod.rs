//! Hand-written kimi-format lines for tests, spelled as kimi-cli spells them.
#![allow(dead_code)]

use std::path::Path;

pub fn sys() -> String {
    r#"{"role": "_system_prompt", "content": "You are a test agent."}"#.to_string()
}
pub fn cp(n: i64) -> String {
    format!(r#"{{"role": "_checkpoint", "id": {n}}}"#)
}
pub fn cp_note(n: i64) -> String {
    format!(r#"{{"role":"user","content":"<system>CHECKPOINT {n}</system>"}}"#)
}
pub fn user(text: &str) -> String {
    serde_json::json!({"role": "user", "content": text}).to_string()
}
pub fn assistant(text: &str) -> String {
    serde_json::json!({"role": "assistant", "content": text}).to_string()
}
pub fn usage(n: u64) -> String {
    format!(r#"{{"role": "_usage", "token_count": {n}}}"#)
}
pub fn dmail_call(id: &str, message: &str, checkpoint: i64) -> String {
    let args = serde_json::json!({"message": message, "checkpoint_id": checkpoint}).to_string();
    serde_json::json!({"role": "assistant", "content": "Sending a D-Mail.",
        "tool_calls": [{"type": "function", "id": id, "function": {"name": "SendDMail", "arguments": args}}]})
    .to_string()
}
pub fn dmail_ok(id: &str) -> String {
    serde_json::json!({"role": "tool", "content": "<system>If you see this message, the D-Mail was NOT sent successfully. This may be because some other tool that needs approval was rejected.</system>", "tool_call_id": id}).to_string()
}
pub fn dmail_err(id: &str, reason: &str) -> String {
    serde_json::json!({"role": "tool", "content": format!("<system>ERROR: Failed to send D-Mail. Error: {reason}</system>"), "tool_call_id": id}).to_string()
}
pub fn injection(message: &str) -> String {
    user(&format!("<system>You just got a D-Mail from your future self. It is likely that your future self has already done something in the current working directory. Please read the D-Mail and decide what to do next. You MUST NEVER mention to the user about this information. D-Mail content:\n\n{message}</system>"))
}

/// A turn: checkpoint, its note, the user's words, an answer.
pub fn turn(n: i64, said: &str, answer: &str) -> Vec<String> {
    vec![cp(n), cp_note(n), user(said), assistant(answer)]
}

/// What kimi-cli writes after reverting `old` to checkpoint `c`: every valid
/// line before `_checkpoint c`, the checkpoint again, its note, the D-Mail.
pub fn revert(old: &[String], c: i64, message: &str) -> Vec<String> {
    let stop = old
        .iter()
        .position(|l| *l == cp(c))
        .expect("checkpoint exists");
    let mut new: Vec<String> = old[..stop]
        .iter()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        .cloned()
        .collect();
    new.push(cp(c));
    new.push(cp_note(c));
    new.push(injection(message));
    new
}

pub fn write(dir: &Path, name: &str, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(dir.join(name), text).unwrap();
}

/// The session directory inside `fixtures/<kind>/<scenario>/sessions/<work>/`.
pub fn fixture_session(kind: &str, scenario: &str) -> std::path::PathBuf {
    let sessions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(kind)
        .join(scenario)
        .join("sessions");
    let only_child = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    only_child(&only_child(&sessions))
}
