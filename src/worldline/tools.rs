//! What a tool call does to the machine, by tool name: the one table of
//! tool names → effect (wrote, edited, ran, only looked, ran a subagent) and
//! the argument keys that name its file or command, for every agent's tools
//! (kimi-cli `WriteFile`/`StrReplaceFile`/`Shell`, `Write`/`Edit`/
//! `MultiEdit`/`Bash`, `write`/`edit`/`bash`, `apply_patch`/
//! `exec_command`/`shell` …). Agent-neutral: a new source's tools are a row
//! here, not code elsewhere. Pure: arguments JSON text in.

use serde_json::Value;

use crate::model::Body;

/// What a tool does, as far as files and commands go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Writes a whole file.
    Write,
    /// Changes part of a file (or applies a patch to several).
    Edit,
    /// Runs a shell command.
    Run,
    /// Only reads or plans: no effect on disk.
    Look,
    /// Starts a subagent (its own calls have the effects).
    Subagent,
    /// A tool worldline doesn't know: it may have changed anything.
    Other,
}

/// Tool name → effect. Names are matched exactly.
const TABLE: &[(&str, Effect)] = &[
    // writes
    ("WriteFile", Effect::Write),
    ("Write", Effect::Write),
    ("write", Effect::Write),
    ("write_file", Effect::Write),
    ("create_file", Effect::Write),
    // edits
    ("StrReplaceFile", Effect::Edit),
    ("Edit", Effect::Edit),
    ("MultiEdit", Effect::Edit),
    ("NotebookEdit", Effect::Edit),
    ("edit", Effect::Edit),
    ("edit_file", Effect::Edit),
    ("apply_patch", Effect::Edit),
    ("ApplyPatch", Effect::Edit),
    // commands
    ("Shell", Effect::Run),
    ("Bash", Effect::Run),
    ("bash", Effect::Run),
    ("shell", Effect::Run),
    ("exec_command", Effect::Run),
    ("local_shell", Effect::Run),
    ("local_shell_call", Effect::Run),
    // subagents
    ("Agent", Effect::Subagent),
    ("Task", Effect::Subagent),
    // only look
    ("ReadFile", Effect::Look),
    ("Read", Effect::Look),
    ("read", Effect::Look),
    ("ReadMediaFile", Effect::Look),
    ("Glob", Effect::Look),
    ("Grep", Effect::Look),
    ("grep", Effect::Look),
    ("find", Effect::Look),
    ("ls", Effect::Look),
    ("LS", Effect::Look),
    ("SearchWeb", Effect::Look),
    ("WebSearch", Effect::Look),
    ("web_search", Effect::Look),
    ("FetchURL", Effect::Look),
    ("WebFetch", Effect::Look),
    ("SetTodoList", Effect::Look),
    ("TodoList", Effect::Look),
    ("TodoWrite", Effect::Look),
    ("update_plan", Effect::Look),
    ("Think", Effect::Look),
    ("SendDMail", Effect::Look),
    ("AskUserQuestion", Effect::Look),
    ("TaskList", Effect::Look),
    ("TaskOutput", Effect::Look),
    ("GetGoal", Effect::Look),
    ("CronList", Effect::Look),
    ("EnterPlanMode", Effect::Look),
    ("ExitPlanMode", Effect::Look),
    ("Skill", Effect::Look),
    ("WaitFor", Effect::Look),
    ("view_image", Effect::Look),
    ("write_stdin", Effect::Run),
];

/// Argument keys naming a tool's file, most common first.
const PATH_KEYS: &[&str] = &["path", "file_path", "filePath", "notebook_path", "file"];
/// Argument keys naming a tool's command.
const COMMAND_KEYS: &[&str] = &["command", "cmd"];

pub fn effect(tool: &str) -> Effect {
    TABLE
        .iter()
        .find(|(n, _)| *n == tool)
        .map_or(Effect::Other, |&(_, e)| e)
}

/// A file a call writes or edits, as the model named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    pub effect: Effect,
    pub path: String,
}

/// The files a write or edit call touches (several for a patch); empty for
/// other tools or arguments that name none.
pub fn touches(tool: &str, arguments: &str) -> Vec<Touch> {
    let effect = effect(tool);
    if !matches!(effect, Effect::Write | Effect::Edit) {
        return Vec::new();
    }
    if let Some(patch) = patch_text(arguments) {
        return patch_files(&patch);
    }
    argument(arguments, PATH_KEYS)
        .map(|path| vec![Touch { effect, path }])
        .unwrap_or_default()
}

/// The command a shell call runs, on its arguments' terms (an argv list is
/// joined with spaces).
pub fn command(tool: &str, arguments: &str) -> Option<String> {
    if effect(tool) != Effect::Run {
        return None;
    }
    if let Ok(v) = serde_json::from_str::<Value>(arguments) {
        return COMMAND_KEYS.iter().find_map(|k| match v.get(*k)? {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => Some(
                a.iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        });
    }
    argument(arguments, COMMAND_KEYS)
}

/// The path (for writes and edits) or command (for runs) a call names: the
/// one thing a summary line says about it.
pub fn target(tool: &str, arguments: &str) -> Option<String> {
    match effect(tool) {
        Effect::Run => command(tool, arguments),
        Effect::Write | Effect::Edit => {
            let t = touches(tool, arguments);
            (!t.is_empty()).then(|| {
                t.iter()
                    .map(|t| t.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        }
        _ => None,
    }
}

/// One change a write or edit call asks for, as old and new text: a write
/// replaces the whole file (`old` unknown, empty); a patch is given as the
/// patch itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub old: String,
    pub new: String,
    /// `new` is the whole file (a write): what was there before is unknown.
    pub whole: bool,
    /// `new` is already a unified patch (`apply_patch`).
    pub patch: bool,
}

/// The changes a write or edit call asks for, from its arguments; empty
/// when the arguments don't say (cut short, unknown shape).
pub fn changes(tool: &str, arguments: &str) -> Vec<Change> {
    let effect = effect(tool);
    if !matches!(effect, Effect::Write | Effect::Edit) {
        return Vec::new();
    }
    if let Some(patch) = patch_text(arguments) {
        let path = patch_files(&patch)
            .into_iter()
            .map(|t| t.path)
            .collect::<Vec<_>>()
            .join(", ");
        return vec![Change {
            path,
            old: String::new(),
            new: patch,
            whole: false,
            patch: true,
        }];
    }
    let Ok(v) = serde_json::from_str::<Value>(arguments) else {
        return Vec::new();
    };
    let path = PATH_KEYS
        .iter()
        .find_map(|k| v.get(*k)?.as_str())
        .unwrap_or("")
        .to_string();
    const OLD: &[&str] = &["old", "old_string", "oldText", "old_str", "old_text"];
    const NEW: &[&str] = &["new", "new_string", "newText", "new_str", "new_text"];
    let pair = |e: &Value| {
        Some(Change {
            path: path.clone(),
            old: s(e, OLD)?.to_string(),
            new: s(e, NEW).unwrap_or("").to_string(),
            whole: false,
            patch: false,
        })
    };
    if effect == Effect::Write {
        let content = s(&v, &["content", "contents", "text", "new_source"]);
        return content
            .map(|c| Change {
                path: path.clone(),
                old: String::new(),
                new: c.to_string(),
                whole: true,
                patch: false,
            })
            .into_iter()
            .collect();
    }
    // One edit in the arguments, or a list under `edit`/`edits`.
    let mut out: Vec<Change> = pair(&v).into_iter().collect();
    for key in ["edit", "edits"] {
        match v.get(key) {
            Some(Value::Array(list)) => out.extend(list.iter().filter_map(pair)),
            Some(e @ Value::Object(_)) => out.extend(pair(e)),
            _ => {}
        }
    }
    if out.is_empty() {
        // A notebook cell's new source: no old text.
        if let Some(n) = s(&v, &["new_source"]) {
            out.push(Change {
                path,
                old: String::new(),
                new: n.to_string(),
                whole: true,
                patch: false,
            });
        }
    }
    out
}

/// The first of `keys` that is a string in `v`.
fn s<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v str> {
    keys.iter().find_map(|k| v.get(*k)?.as_str())
}

/// Did a tool result say the call failed? kimi-cli starts the text with
/// `<system>ERROR`; other formats set `is_error`/`isError` on the record
/// or its result.
pub fn result_failed(body: &Body) -> bool {
    let text = body.text();
    let t = text.trim_start();
    if t.starts_with("<system>ERROR") || t.starts_with("ERROR:") {
        return true;
    }
    let flag = |v: &Value| {
        ["is_error", "isError"]
            .iter()
            .any(|k| v.get(*k).and_then(Value::as_bool) == Some(true))
    };
    let raw = &body.raw;
    flag(raw)
        || raw.get("result").is_some_and(flag)
        || raw
            .get("event")
            .and_then(|e| e.get("result"))
            .is_some_and(flag)
}

/// The same test on the first bytes of a result's line, for results too
/// large to read whole.
pub fn head_failed(head: &[u8]) -> bool {
    use memchr::memmem::find;
    find(head, b"<system>ERROR").is_some()
        || find(head, b"\"is_error\": true").is_some()
        || find(head, b"\"is_error\":true").is_some()
        || find(head, b"\"isError\":true").is_some()
}

/// A patch given as the call's arguments: the text itself, `{"input": …}`
/// or `{"patch": …}`, or an argv whose last item is one.
fn patch_text(arguments: &str) -> Option<String> {
    let is_patch = |s: &str| s.trim_start().starts_with("*** Begin Patch");
    if is_patch(arguments) {
        return Some(arguments.to_string());
    }
    let v: Value = serde_json::from_str(arguments).ok()?;
    let from = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) if is_patch(s) => Some(s.clone()),
            Value::Array(a) => a.iter().rev().find_map(|x| {
                let s = x.as_str()?;
                is_patch(s).then(|| s.to_string())
            }),
            _ => None,
        }
    };
    from(&v).or_else(|| {
        ["input", "patch", "command", "cmd"]
            .iter()
            .find_map(|k| from(v.get(*k)?))
    })
}

/// The files a `*** Begin Patch` text adds, updates, moves or deletes.
fn patch_files(patch: &str) -> Vec<Touch> {
    let mut out: Vec<Touch> = Vec::new();
    for line in patch.lines() {
        let (effect, path) = if let Some(p) = line.strip_prefix("*** Add File: ") {
            (Effect::Write, p)
        } else if let Some(p) = line
            .strip_prefix("*** Update File: ")
            .or_else(|| line.strip_prefix("*** Delete File: "))
            .or_else(|| line.strip_prefix("*** Move to: "))
        {
            (Effect::Edit, p)
        } else {
            continue;
        };
        let path = path.trim().to_string();
        if !out.iter().any(|t| t.path == path) {
            out.push(Touch { effect, path });
        }
    }
    out
}

/// The string value of the first of `keys` in the arguments; arguments cut
/// short (some recorders truncate them) still give their beginning, ending
/// in `…`.
fn argument(arguments: &str, keys: &[&str]) -> Option<String> {
    if let Ok(v) = serde_json::from_str::<Value>(arguments) {
        return keys
            .iter()
            .find_map(|k| v.get(*k)?.as_str())
            .map(str::to_owned);
    }
    keys.iter().find_map(|k| string_prefix_after(arguments, k))
}

/// The (possibly unterminated) string value of `"key":` in broken JSON.
fn string_prefix_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    // Cut short: say so.
    out.push('…');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agents_writes_edits_and_commands_name_their_target() {
        let cases = [
            ("WriteFile", r#"{"path": "out.txt", "content": "hi\n"}"#, "out.txt"),
            (
                "StrReplaceFile",
                r#"{"path": "a.py", "edit": {"old": "x", "new": "y"}}"#,
                "a.py",
            ),
            ("Write", r#"{"file_path": "/p/b.rs", "content": ""}"#, "/p/b.rs"),
            (
                "MultiEdit",
                r#"{"file_path": "c.rs", "edits": [{"old_string": "a", "new_string": "b"}]}"#,
                "c.rs",
            ),
            ("edit", r#"{"path": "d.ts", "oldText": "a", "newText": "b"}"#, "d.ts"),
            ("Shell", r#"{"command": "ls -la"}"#, "ls -la"),
            ("exec_command", r#"{"cmd": "echo hi"}"#, "echo hi"),
            ("shell", r#"{"command": ["bash", "-lc", "make"]}"#, "bash -lc make"),
            (
                "apply_patch",
                "*** Begin Patch\n*** Update File: src/x.rs\n@@\n-a\n+b\n*** Add File: y.md\n+hi\n*** End Patch",
                "src/x.rs, y.md",
            ),
            (
                "apply_patch",
                r#"{"input": "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch"}"#,
                "gone.txt",
            ),
            // Cut short: the beginning, marked.
            ("Shell", r#"{"command": "make al"#, "make al…"),
        ];
        for (tool, args, want) in cases {
            assert_eq!(target(tool, args).as_deref(), Some(want), "{tool} {args}");
        }
        assert_eq!(target("ReadFile", r#"{"path": "x"}"#), None);
        assert_eq!(effect("SendDMail"), Effect::Look);
        assert_eq!(effect("mcp_deploy"), Effect::Other);
        let t = touches("apply_patch", cases[8].1);
        assert_eq!(t[1].effect, Effect::Write);
    }

    #[test]
    fn edits_give_old_and_new_text() {
        let c = changes(
            "StrReplaceFile",
            r#"{"path": "a.py", "edit": [{"old": "x = 1", "new": "x = 2"}, {"old": "y", "new": "z"}]}"#,
        );
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].old.as_str(), c[0].new.as_str()), ("x = 1", "x = 2"));
        let w = changes("WriteFile", r#"{"path": "o", "content": "hi\n"}"#);
        assert!(w[0].whole && w[0].new == "hi\n");
        let e = changes(
            "Edit",
            r#"{"file_path": "f", "old_string": "a", "new_string": "b"}"#,
        );
        assert_eq!(e[0].path, "f");
        assert!(changes("Shell", r#"{"command": "x"}"#).is_empty());
    }
}
