//! What happened in a session, in the words every picture uses: world lines
//! by their Greek names with their checkpoint ranges, forks with the
//! checkpoint they went back to, D-Mails from the sender's checkpoint,
//! refused D-Mails and subagents with their descriptions. Pure: built from a
//! `Session`, never from files; dot, mermaid, SVG and HTML only choose a
//! syntax for it.

use crate::worldline::names::{colour_slot, line_name};
use crate::worldline::{Agent, Family, ForkKind, RecordRef, Session};

/// World-line colours in the TUI's order (cyan, magenta, yellow, green,
/// light blue, light red), as mid-tones that read on white and on black.
pub const LINE_COLOURS: [&str; 6] = [
    "#0f9fb3", "#c04fc0", "#c29a00", "#2f9e44", "#3f7fe0", "#e0564f",
];
/// D-Mails: the TUI's light yellow, darkened enough for a white page.
pub const DMAIL_COLOUR: &str = "#d08700";
/// Refusals and errors.
pub const ERROR_COLOUR: &str = "#d0342c";

pub fn line_colour(i: usize) -> &'static str {
    LINE_COLOURS[colour_slot(i, LINE_COLOURS.len())]
}

#[derive(Debug, Clone, PartialEq)]
pub struct Story {
    pub title: Option<String>,
    pub session_id: String,
    /// `agents[0]` is the main agent.
    pub agents: Vec<AgentStory>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentStory {
    pub index: usize,
    /// `None` for the main agent.
    pub subagent: Option<SubagentStory>,
    pub lines: Vec<LineStory>,
    pub refused: Vec<Refused>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SubagentStory {
    pub agent_id: String,
    pub kind: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    /// The main agent's world line and checkpoint where its Agent call is.
    pub parent: Option<Place>,
    pub parent_tool_call_id: Option<String>,
}

/// A point of a world line: the line and the checkpoint it was at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub line: usize,
    /// The last checkpoint at or before the record; `None` before ⚑0.
    pub checkpoint: Option<i64>,
    /// Index of the record in the line's file.
    pub record: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineStory {
    pub index: usize,
    /// α, β, γ … as the TUI names it.
    pub name: String,
    pub colour: &'static str,
    pub file: String,
    pub records: usize,
    pub shared: usize,
    /// Lowest and highest checkpoint id in the file.
    pub checkpoints: Option<(i64, i64)>,
    /// Highest checkpoint id among the shared records.
    pub shared_to: Option<i64>,
    pub tokens: Option<u64>,
    pub current: bool,
    /// Unix seconds of the first and last own record with a wire time.
    pub start: Option<f64>,
    pub end: Option<f64>,
    pub fork: Option<ForkStory>,
    /// Compactions inside this line that started no new world line (Kimi
    /// Code's), with the wire line of each.
    pub compactions: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForkStory {
    pub kind: ForkKind,
    /// The world line the fork point belongs to.
    pub origin: Option<usize>,
    /// For a D-Mail: the checkpoint it went back to.
    pub checkpoint: Option<i64>,
    pub message: Option<String>,
    /// Where the SendDMail call was; `None` for a D-Mail from outside.
    pub sender: Option<Place>,
    pub tool_call_id: Option<String>,
    /// For a Kimi Code undo: `undo of 1 turn after line 47`.
    pub undo: Option<String>,
    /// Turns a D-Mail (or undo) went back, where a source counts turns.
    pub turns: Option<u32>,
}

/// A SendDMail call that did not fork (refused, or still without result).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub at: Place,
    pub target: i64,
    pub message: String,
    /// DenwaRenji's reason, or why there is none.
    pub reason: String,
    pub tool_call_id: String,
}

impl ForkStory {
    /// Where a D-Mail went back to: `⚑2`, or `2 turns back`.
    pub fn back(&self) -> String {
        crate::worldline::family::back_name(self.checkpoint, self.turns)
    }

    /// `D-Mail α⚑2 → ⚑1`, `compaction`, `/clear` …, with names from `lines`.
    pub fn headline(&self, lines: &[LineStory]) -> String {
        match self.kind {
            ForkKind::Dmail => {
                let from = match self.sender {
                    Some(p) => format!(" {}", place_name(lines, p)),
                    None => " from outside".to_string(),
                };
                format!("✉ D-Mail{from} → {}", self.back())
            }
            ForkKind::Compaction => "⊜ compaction".to_string(),
            ForkKind::Clear => "∅ /clear".to_string(),
            ForkKind::Undo => format!("↶ {}", self.undo.as_deref().unwrap_or("undo")),
            ForkKind::Rewind
            | ForkKind::Summarize
            | ForkKind::Tree
            | ForkKind::Fork
            | ForkKind::Rollback => self.kind.branch_words().to_string(),
            ForkKind::Unknown => "? unknown rotation".to_string(),
        }
    }
}

impl LineStory {
    /// `⚑0–⚑3 (⚑0–⚑1 shared)`.
    pub fn checkpoint_range(&self) -> String {
        let Some((lo, hi)) = self.checkpoints else {
            return "no checkpoints".to_string();
        };
        let mut s = if lo == hi {
            format!("⚑{lo}")
        } else {
            format!("⚑{lo}–⚑{hi}")
        };
        if let Some(to) = self.shared_to {
            if to == lo {
                s.push_str(&format!(" (⚑{lo} shared)"));
            } else {
                s.push_str(&format!(" (⚑{lo}–⚑{to} shared)"));
            }
        }
        s
    }

    /// `16 records · 996 tok`.
    pub fn counts(&self) -> String {
        let mut s = format!(
            "{} record{}",
            self.records,
            if self.records == 1 { "" } else { "s" }
        );
        if let Some(t) = self.tokens {
            s.push_str(&format!(" · {} tok", human_tokens(t)));
        }
        s
    }
}

/// `β⚑3`.
pub fn place_name(lines: &[LineStory], p: Place) -> String {
    let name = lines
        .get(p.line)
        .map(|l| l.name.clone())
        .unwrap_or_else(|| line_name(p.line));
    match p.checkpoint {
        Some(c) => format!("{name}⚑{c}"),
        None => name,
    }
}

pub fn cp_name(c: Option<i64>) -> String {
    c.map(|c| format!("⚑{c}")).unwrap_or_else(|| "⚑?".into())
}

/// `996`, `4.4k`, `1.2M`.
pub fn human_tokens(t: u64) -> String {
    match t {
        0..1_000 => t.to_string(),
        1_000..1_000_000 => format!("{:.1}k", t as f64 / 1e3),
        _ => format!("{:.1}M", t as f64 / 1e6),
    }
}

impl Story {
    pub fn of(s: &Session) -> Story {
        Story {
            title: s.title.clone(),
            session_id: s.id.clone(),
            agents: s
                .agents
                .iter()
                .enumerate()
                .map(|(i, a)| agent_story(s, i, a))
                .collect(),
        }
    }

    pub fn main(&self) -> &AgentStory {
        &self.agents[0]
    }
}

fn agent_story(s: &Session, index: usize, a: &Agent) -> AgentStory {
    let f = &a.family;
    let lines = (0..f.lines.len())
        .map(|i| LineStory {
            compactions: a
                .compactions
                .iter()
                .filter(|m| m.world_line == i)
                .filter_map(|m| m.at.line)
                .collect(),
            ..line_story(f, i)
        })
        .collect();
    let refused = f
        .attempts
        .iter()
        .filter(|t| t.accepted != Some(true))
        .map(|t| Refused {
            at: place(f, t.call),
            target: t.checkpoint_id,
            message: t.message.clone(),
            reason: match (t.accepted, &t.error) {
                (None, _) => "no result yet".to_string(),
                (_, Some(e)) => e.clone(),
                _ => "refused".to_string(),
            },
            tool_call_id: t.tool_call_id.clone(),
        })
        .collect();
    let subagent = a.meta.as_ref().map(|m| SubagentStory {
        agent_id: m.agent_id.clone(),
        kind: m.subagent_type.clone(),
        description: m.description.clone(),
        status: m.status.clone(),
        parent: a.parent_call.map(|c| place(s.main(), c)),
        parent_tool_call_id: a.parent_tool_call_id.clone(),
    });
    AgentStory {
        index,
        subagent,
        lines,
        refused,
    }
}

/// The checkpoint a record of a family was written at.
pub fn place(f: &Family, r: RecordRef) -> Place {
    let checkpoint = f
        .files
        .get(r.line)
        .map(|file| last_checkpoint(file.records.range(..=r.record)))
        .unwrap_or(None);
    Place {
        line: r.line,
        checkpoint,
        record: r.record,
    }
}

fn last_checkpoint(records: crate::read::RecordIter<'_>) -> Option<i64> {
    records.rev().find_map(|r| r.checkpoint())
}

fn line_story(f: &Family, i: usize) -> LineStory {
    let l = &f.lines[i];
    let file = &f.files[i];
    let ids = file.records.iter().filter_map(|r| r.checkpoint());
    let checkpoints = ids.clone().min().zip(ids.max());
    let shared_to = (l.shared > 0)
        .then(|| last_checkpoint(file.records.range(..l.shared)))
        .flatten();
    let times: Vec<f64> = (l.shared..f.line_len(i))
        .filter_map(|r| l.times.at(r))
        .collect();
    let fork = l.fork.as_ref().map(|k| ForkStory {
        kind: k.kind,
        origin: k.origin,
        checkpoint: k.checkpoint,
        message: k.message.clone(),
        sender: k.sender.as_ref().map(|snd| place(f, snd.call)),
        tool_call_id: k.sender.as_ref().map(|snd| snd.tool_call_id.clone()),
        undo: (k.kind == ForkKind::Undo).then(|| k.undo_summary()),
        turns: k.turns,
    });
    LineStory {
        index: i,
        name: line_name(i),
        colour: line_colour(i),
        file: l.file.clone(),
        records: file.records.len(),
        shared: l.shared,
        checkpoints,
        shared_to,
        tokens: file.records.iter().rev().find_map(|r| r.tokens()),
        current: l.current,
        start: times.first().copied(),
        end: times.last().copied(),
        fork,
        compactions: Vec::new(),
    }
}

/// Untrusted text as at most `max_lines` safe lines of at most `width`
/// columns, broken at spaces where possible; `…` ends a cut.
pub fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    use crate::text::{sanitize_line, width as cols};
    let width = width.max(4);
    // sanitize_line folds white space; enough columns for every kept line.
    let flat = sanitize_line(text, width * max_lines + 1);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in flat.split(' ') {
        let mut word = word.to_string();
        loop {
            let sep = usize::from(!cur.is_empty());
            if cols(&cur) + sep + cols(&word) <= width {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than a line: split it by columns.
            let head = crate::text::truncate(&word, width + 1);
            let head = head.trim_end_matches('…').to_string();
            let head = if head.is_empty() {
                word.chars().take(1).collect()
            } else {
                head
            };
            word = word[head.len()..].to_string();
            out.push(head);
            if word.is_empty() {
                break;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() > max_lines {
        out.truncate(max_lines);
        if let Some(last) = out.last_mut() {
            let cut = crate::text::truncate(last, width.saturating_sub(1));
            *last = format!("{}…", cut.trim_end_matches('…'));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_cuts_with_an_ellipsis() {
        assert_eq!(
            wrap("one two three four", 9, 3),
            ["one two", "three", "four"]
        );
        assert_eq!(wrap("one two three four", 9, 2), ["one two", "three…"]);
        assert_eq!(wrap("abcdefghij", 4, 5), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\x1b[31mb", 20, 1), ["a␛[31mb"]);
        assert!(wrap("", 10, 2).is_empty());
    }

    #[test]
    fn tokens_read_short() {
        assert_eq!(human_tokens(996), "996");
        assert_eq!(human_tokens(4_400), "4.4k");
        assert_eq!(human_tokens(1_200_000), "1.2M");
    }
}
