//! An edit or write tool call read as a unified diff (old text → new text,
//! by the `similar` crate) instead of its JSON arguments: for the detail
//! pane, the compare screen, the HTML report and the Markdown transcript.
//! Long diffs fold: the first lines show and the rest is counted. Every
//! line is sanitised (`text.rs`), so a diff is safe on any terminal.

use similar::{ChangeTag, TextDiff};

use crate::text::sanitize;
use crate::worldline::tools::{self, Change};

/// What a diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `@@ … @@`: where a hunk starts (or which edit of several it is).
    Hunk,
    Context,
    Add,
    Del,
    /// `… 40 more lines`: where a long diff was folded.
    Fold,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: Kind,
    /// The line without its `+`/`-`/` ` sign, sanitised.
    pub text: String,
}

impl Line {
    /// The line as a unified diff writes it.
    pub fn unified(&self) -> String {
        match self.kind {
            Kind::Add => format!("+{}", self.text),
            Kind::Del => format!("-{}", self.text),
            Kind::Context => format!(" {}", self.text),
            Kind::Hunk | Kind::Fold => self.text.clone(),
        }
    }
}

/// The diff of one file a call changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// The file, sanitised.
    pub path: String,
    /// A whole file written: every line is new, what was there is unknown.
    pub whole: bool,
    pub lines: Vec<Line>,
    pub added: usize,
    pub removed: usize,
}

impl Diff {
    /// `+3 −1`.
    pub fn stat(&self) -> String {
        format!("+{} −{}", self.added, self.removed)
    }

    /// The diff as unified diff text (headers included).
    pub fn unified(&self) -> String {
        let mut s = format!("--- a/{}\n+++ b/{}\n", self.path, self.path);
        for l in &self.lines {
            s.push_str(&l.unified());
            s.push('\n');
        }
        s
    }
}

/// Lines of context around a change.
const CONTEXT: usize = 3;

/// The diffs of an edit or write call, one per file (edits of one file
/// merged in order), each folded after `max_lines`; empty when the call
/// is no edit or write, or its arguments don't say what changed.
pub fn of_call(tool: &str, arguments: &str, max_lines: usize) -> Vec<Diff> {
    let mut out: Vec<Diff> = Vec::new();
    let changes = tools::changes(tool, arguments);
    let several = changes.len() > 1;
    for (k, c) in changes.iter().enumerate() {
        let mut d = of_change(c);
        if several {
            d.lines.insert(
                0,
                Line {
                    kind: Kind::Hunk,
                    text: format!("@@ edit {} of {} @@", k + 1, changes.len()),
                },
            );
        }
        match out.iter_mut().find(|o| o.path == d.path && !c.patch) {
            Some(o) => {
                o.lines.extend(d.lines);
                o.added += d.added;
                o.removed += d.removed;
            }
            None => out.push(d),
        }
    }
    for d in &mut out {
        fold(d, max_lines);
    }
    out
}

/// One change as a diff (unfolded).
pub fn of_change(c: &Change) -> Diff {
    let path = sanitize(&c.path, false);
    if c.patch {
        return of_patch(path, &c.new);
    }
    let mut d = Diff {
        path,
        whole: c.whole,
        lines: Vec::new(),
        added: 0,
        removed: 0,
    };
    let diff = TextDiff::from_lines(c.old.as_str(), c.new.as_str());
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        d.lines.push(Line {
            kind: Kind::Hunk,
            text: format!("@@ -{},{} +{},{} @@", o + 1, oe - o, n + 1, ne - n),
        });
        for op in &group {
            for ch in diff.iter_changes(op) {
                let kind = match ch.tag() {
                    ChangeTag::Equal => Kind::Context,
                    ChangeTag::Delete => {
                        d.removed += 1;
                        Kind::Del
                    }
                    ChangeTag::Insert => {
                        d.added += 1;
                        Kind::Add
                    }
                };
                let v = ch.value();
                let v = v.strip_suffix('\n').unwrap_or(v);
                d.lines.push(Line {
                    kind,
                    text: sanitize(v.strip_suffix('\r').unwrap_or(v), false),
                });
            }
        }
    }
    d
}

/// An `apply_patch` text as diff lines.
fn of_patch(path: String, patch: &str) -> Diff {
    let mut d = Diff {
        path,
        whole: false,
        lines: Vec::new(),
        added: 0,
        removed: 0,
    };
    for raw in patch.lines() {
        if raw.starts_with("*** Begin Patch") || raw.starts_with("*** End Patch") {
            continue;
        }
        let (kind, text) = if raw.starts_with("***") || raw.starts_with("@@") {
            (Kind::Hunk, raw)
        } else if let Some(t) = raw.strip_prefix('+') {
            d.added += 1;
            (Kind::Add, t)
        } else if let Some(t) = raw.strip_prefix('-') {
            d.removed += 1;
            (Kind::Del, t)
        } else {
            (Kind::Context, raw.strip_prefix(' ').unwrap_or(raw))
        };
        d.lines.push(Line {
            kind,
            text: sanitize(text, false),
        });
    }
    d
}

/// Keeps the first `max` lines and counts the rest in a fold line.
fn fold(d: &mut Diff, max: usize) {
    if d.lines.len() > max {
        let rest = d.lines.len() - max;
        d.lines.truncate(max);
        d.lines.push(Line {
            kind: Kind::Fold,
            text: format!(
                "… {rest} more diff line{}",
                if rest == 1 { "" } else { "s" }
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_reads_as_a_unified_diff() {
        let args = r#"{"path": "a.py", "edit": {"old": "def f():\n    return 1\n", "new": "def f():\n    return 2\n"}}"#;
        let d = of_call("StrReplaceFile", args, 50);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].unified(),
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
        );
        assert_eq!(d[0].stat(), "+1 −1");
    }

    #[test]
    fn writes_are_all_new_lines_and_long_diffs_fold() {
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let args = serde_json::json!({"path": "big.txt", "content": content}).to_string();
        let d = &of_call("WriteFile", &args, 10)[0];
        assert!(d.whole);
        assert_eq!(d.added, 100);
        assert_eq!(d.lines.len(), 11);
        assert_eq!(d.lines[10].text, "… 91 more diff lines");
        assert_eq!(d.lines[1].unified(), "+line 0");
    }

    #[test]
    fn several_edits_of_one_file_are_one_diff_and_patches_keep_their_lines() {
        let args = r#"{"file_path": "c.rs", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "x\u001b[2J", "new_string": "y"}]}"#;
        let d = of_call("MultiEdit", args, 50);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].lines[0].text, "@@ edit 1 of 2 @@");
        // Terminal controls in the model's text never reach a screen.
        assert!(d[0].lines.iter().all(|l| !l.text.contains('\u{1b}')));
        let patch =
            "*** Begin Patch\n*** Update File: s.rs\n@@ fn main\n-old\n+new\n ctx\n*** End Patch";
        let p = &of_call("apply_patch", patch, 50)[0];
        assert_eq!(p.path, "s.rs");
        assert_eq!((p.added, p.removed), (1, 1));
        assert_eq!(p.lines[0].kind, Kind::Hunk);
        assert!(of_call("Shell", r#"{"command": "ls"}"#, 50).is_empty());
    }
}
