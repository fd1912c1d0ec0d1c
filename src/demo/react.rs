//! How the scripted agent takes up a D-Mail a user sends: no model reads it,
//! so its words are turned into steps anyone can see follow from it — a todo
//! list of its sentences, a read of each file it names, a run of each
//! command it quotes — before the story goes on. Pure: message in, steps out.

use crate::kimi_writer::{Json, ToolOutput};
use crate::text::sanitize_line;

use super::script::{self, StepSpec, ToolSpec};

/// At most this many of each, so a long D-Mail stays a short detour.
const MAX_TODOS: usize = 5;
const MAX_FILES: usize = 3;
const MAX_COMMANDS: usize = 2;
const TODO_COLS: usize = 90;

/// What the story has done to the (pretend) project so far: side effects
/// that no revert undoes, so a test run tells the truth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Disk {
    pub parse_fixed: bool,
    pub cli_fixed: bool,
}

/// The steps that take up `message`; the last one has a tool call, so the
/// turn goes on into the script afterwards.
pub fn reaction(message: &str, disk: Disk) -> Vec<StepSpec> {
    let todos = sentences(message);
    let quoted = first_line(&todos);
    let mut steps = vec![StepSpec {
        think: Some(format!(
            "A D-Mail from my future self: \"{}\". It was written after the fact, so what it mentions may already be done on disk: a revert rewinds this conversation, not the files. I'll turn it into a plan before going on.",
            message.trim()
        )),
        text: format!("Taking up the D-Mail first: {quoted}"),
        tools: vec![todo_list(&todos, 0)],
    }];
    for path in paths(message) {
        let tool = match script::project_file(&path) {
            Some(content) => script::read_file(&path, content),
            None => ToolSpec::Call {
                name: "ReadFile",
                args: Json::obj([("path", Json::str(path.as_str()))]),
                result: ToolOutput {
                    is_error: true,
                    message: format!("`{path}` does not exist."),
                    ..ToolOutput::default()
                },
            },
        };
        steps.push(StepSpec {
            think: None,
            text: format!("The D-Mail names `{path}`; reading it."),
            tools: vec![tool],
        });
    }
    for cmd in commands(message) {
        let (output, code) = command_output(&cmd, disk);
        steps.push(StepSpec {
            think: None,
            text: format!("Running `{cmd}`, as the D-Mail says."),
            tools: vec![script::shell(&cmd, output, code)],
        });
    }
    steps.push(StepSpec {
        think: Some(format!(
            "That covers the D-Mail ({} item{}). Back to the task, with it in mind.",
            todos.len(),
            if todos.len() == 1 { "" } else { "s" }
        )),
        text: "Done with what the D-Mail asked; carrying on with the task.".into(),
        tools: vec![todo_list(&todos, todos.len())],
    });
    steps
}

/// The lessons a user's D-Mail teaches (see `script::lessons`).
pub fn lessons_in(message: &str) -> Vec<script::DMailId> {
    let lower = message.to_lowercase();
    script::lessons()
        .iter()
        .filter(|(_, words)| words.iter().any(|w| has_word(&lower, w)))
        .map(|(id, _)| *id)
        .collect()
}

/// `word` in `text`, not as the tail of a longer name (`test_cli.py` does
/// not mention `cli.py`).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        !text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn first_line(todos: &[String]) -> String {
    todos.first().cloned().unwrap_or_default()
}

/// `SetTodoList` with the first `done` items done, the next in progress.
fn todo_list(todos: &[String], done: usize) -> ToolSpec {
    let items = todos
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let status = match i.cmp(&done) {
                std::cmp::Ordering::Less => "done",
                std::cmp::Ordering::Equal => "in_progress",
                std::cmp::Ordering::Greater => "pending",
            };
            Json::obj([
                ("title", Json::str(t.as_str())),
                ("status", Json::str(status)),
            ])
        })
        .collect();
    ToolSpec::Call {
        name: "SetTodoList",
        args: Json::obj([("todos", Json::Array(items))]),
        result: ToolOutput::ok("Todo list updated", ""),
    }
}

/// The message's sentences, one line each (never empty: a blank D-Mail is
/// refused before it gets here, but one item is always there to show).
fn sentences(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = match c {
            '\n' => true,
            '.' | '!' | '?' | ';' => chars.peek().is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        if c != '\n' {
            cur.push(c);
        }
        if ends {
            push_sentence(&mut out, &cur);
            cur.clear();
        }
    }
    push_sentence(&mut out, &cur);
    if out.is_empty() {
        out.push("(an empty D-Mail)".into());
    }
    out.truncate(MAX_TODOS);
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let t = s.trim().trim_end_matches(['.', ';']).trim();
    if !t.is_empty() {
        out.push(sanitize_line(t, TODO_COLS));
    }
}

/// Words of the message that look like files of a project.
fn paths(message: &str) -> Vec<String> {
    const EXT: &[&str] = &[
        ".py", ".md", ".csv", ".toml", ".txt", ".json", ".cfg", ".ini", ".yaml", ".yml", ".rs",
        ".js", ".ts",
    ];
    let mut out: Vec<String> = Vec::new();
    for word in message.split_whitespace() {
        let w = word.trim_matches(|c: char| !(c.is_alphanumeric() || "._/-".contains(c)));
        let w = w.trim_end_matches('.');
        let looks = EXT.iter().any(|e| w.ends_with(e) && w.len() > e.len())
            && w.chars().all(|c| c.is_alphanumeric() || "._/-".contains(c));
        if looks && !out.iter().any(|p| p == w) {
            out.push(sanitize_line(w, 80));
        }
        if out.len() == MAX_FILES {
            break;
        }
    }
    out
}

/// Spans in backticks that start like a command someone would run.
fn commands(message: &str) -> Vec<String> {
    const PROGRAMS: &[&str] = &[
        "python", "python3", "pytest", "git", "ls", "cat", "grep", "make", "pip", "tally",
    ];
    let mut out: Vec<String> = Vec::new();
    for (i, span) in message.split('`').enumerate() {
        let span = span.trim();
        let first = span.split_whitespace().next().unwrap_or("");
        if i % 2 == 1 && PROGRAMS.contains(&first) && !out.iter().any(|c| c == span) {
            out.push(sanitize_line(span, 80));
        }
        if out.len() == MAX_COMMANDS {
            break;
        }
    }
    if out.is_empty() && message.to_lowercase().contains("run the tests") {
        out.push("python -m pytest -q".into());
    }
    out
}

/// A plausible output for a command of this little project.
fn command_output(cmd: &str, disk: Disk) -> (&'static str, i32) {
    let first = cmd.split_whitespace().next().unwrap_or("");
    if cmd.contains("pytest") {
        script::pytest_output(disk.parse_fixed, disk.cli_fixed)
    } else if first == "git" {
        (
            " M tally/cli.py\n M tally/parse.py\n",
            i32::from(!cmd.contains("status") && !cmd.contains("diff")),
        )
    } else if first == "ls" {
        ("README.md\ndata\ntally\ntests\n", 0)
    } else {
        ("", 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(steps: &[StepSpec]) -> Vec<&'static str> {
        steps
            .iter()
            .flat_map(|s| &s.tools)
            .map(|t| match t {
                ToolSpec::Call { name, .. } => *name,
                _ => "other",
            })
            .collect()
    }

    #[test]
    fn a_dmail_becomes_a_todo_list_reads_and_runs() {
        let msg = "The bug is in tally/cli.py too. Run `python -m pytest -q` after both fixes; and check docs/usage.md.";
        let steps = reaction(msg, Disk::default());
        assert_eq!(
            names(&steps),
            [
                "SetTodoList",
                "ReadFile",
                "ReadFile",
                "Shell",
                "SetTodoList"
            ]
        );
        assert!(steps[0].think.as_deref().unwrap().contains(msg));
        assert_eq!(
            steps[0].text,
            "Taking up the D-Mail first: The bug is in tally/cli.py too"
        );
        let ToolSpec::Call { args, .. } = &steps[0].tools[0] else {
            panic!()
        };
        let json = args.to_compact();
        assert!(
            json.contains("Run `python -m pytest -q` after both fixes"),
            "{json}"
        );
        assert!(json.contains("check docs/usage.md"), "{json}");
        // A file the project has is read; one it hasn't is an error.
        let ToolSpec::Call { result, .. } = &steps[1].tools[0] else {
            panic!()
        };
        assert!(!result.is_error && result.output.contains("read_rows(args.file"));
        let ToolSpec::Call { result, .. } = &steps[2].tools[0] else {
            panic!()
        };
        assert!(result.is_error && result.message.contains("docs/usage.md"));
        // Before any fix the tests fail on the header.
        let ToolSpec::Call { result, .. } = &steps[3].tools[0] else {
            panic!()
        };
        assert!(result.is_error && result.output.contains("test_sum_skips_header"));
    }

    #[test]
    fn test_runs_tell_the_truth_about_the_disk() {
        let disk = Disk {
            parse_fixed: true,
            cli_fixed: true,
        };
        let steps = reaction("please run the tests", disk);
        assert_eq!(names(&steps), ["SetTodoList", "Shell", "SetTodoList"]);
        let ToolSpec::Call { result, .. } = &steps[1].tools[0] else {
            panic!()
        };
        assert!(!result.is_error && result.output.contains("7 passed"));
    }

    #[test]
    fn control_characters_never_reach_the_todo_list() {
        let steps = reaction("stop\u{1b}[2J now", Disk::default());
        let ToolSpec::Call { args, .. } = &steps[0].tools[0] else {
            panic!()
        };
        assert!(!args.to_compact().contains('\u{1b}'));
    }

    #[test]
    fn lessons_come_from_the_words() {
        assert_eq!(lessons_in("cli.py passes header= too"), [script::USER_CLI]);
        assert_eq!(
            lessons_in("Fix both, and add --skip-blank"),
            [script::USER_CLI, script::USER_BLANK]
        );
        assert!(lessons_in("the tests were fine all along").is_empty());
        assert!(lessons_in("read tests/test_cli.py first").is_empty());
    }
}
