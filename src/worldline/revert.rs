//! Revert semantics: which checkpoint (or, for an agent whose server undoes
//! turns, how many turns) a D-Mail from a selected record goes back to
//! (`target_of`, `turn_target_of`, by the session's `route`), what the
//! revert discards from the current world
//! line (`discarded`), where an accepted D-Mail lands (`landing`), and what
//! a revert never undoes (`kept_by_revert`, `kept_at_landing`): kimi-cli
//! rewinds only the conversation, so files written or edited and commands
//! run after the checkpoint stay done. Pure: the session index in; the few
//! bodies needed (tool arguments and results) come through a loader.

use std::path::PathBuf;

use super::{Family, ForkKind, RecordRef, Session};
pub use crate::denwa::{Back, DMailRoute};
use crate::model::{Body, CallKey, Marker, Role};

/// What D-Mail this session can take: its source says.
pub fn route(session: &Session) -> DMailRoute {
    session.tool.source().dmail_route(&session.dir)
}

/// Why a record can't be a D-Mail's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotATarget {
    /// Neither a checkpoint nor its `CHECKPOINT N` note.
    NotACheckpoint,
    /// A checkpoint, but not of the current world line.
    NotCurrent,
    /// A turn, but a compaction lies between it and now: undo never
    /// crosses one.
    AcrossCompaction,
    /// A subagent: its turns can't be undone from outside.
    Subagent,
    /// Before the first turn: nothing to go back to.
    NoTurn,
}

/// Where a D-Mail would go back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The agent's directory, where its `denwa.json` is.
    pub dir: PathBuf,
    pub agent: usize,
    /// The `_checkpoint` record (or its note when no record precedes it);
    /// for turns, the prompt of the first turn undone.
    pub record: RecordRef,
    /// A checkpoint id, or turns back.
    pub back: Back,
    /// The session, and whose: a turns D-Mail goes through its source.
    pub session: PathBuf,
    pub tool: crate::sources::Tool,
}

impl Target {
    /// `⚑3` or `2 turns back`.
    pub fn back_name(&self) -> String {
        back_words(self.back)
    }
}

/// `⚑3` or `2 turns back`.
pub fn back_words(back: Back) -> String {
    match back {
        Back::Checkpoint(c) => format!("⚑{c}"),
        Back::Turns(n) | Back::KeepTurns(n) => super::family::back_name(None, Some(n)),
    }
}

/// A D-Mail the agent accepted, to find once its world line appears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentDMail {
    pub dir: PathBuf,
    pub back: Back,
    pub message: String,
    /// World lines the agent had when it accepted: the new one comes after.
    pub lines_before: usize,
}

/// What a revert discards from the current world line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discard {
    pub records: usize,
    /// The current world line.
    pub line: usize,
    /// Counted after the checkpoint's `CHECKPOINT N` note (else after the
    /// checkpoint itself).
    pub after_note: bool,
}

/// The checkpoint a D-Mail from the selected record `r` would target.
pub fn target_of(session: &Session, agent: usize, r: RecordRef) -> Result<Target, NotATarget> {
    let a = session
        .agents
        .get(agent)
        .ok_or(NotATarget::NotACheckpoint)?;
    let f = &a.family;
    let meta = f.record(r).ok_or(NotATarget::NotACheckpoint)?;
    let (record, checkpoint) = match (meta.role(), meta.marker().as_deref(), meta.checkpoint()) {
        (Role::Checkpoint, _, Some(id)) => (r, id),
        (_, Some(Marker::CheckpointNote(n)), _) => checkpoint_before_note(f, r, *n),
        _ => return Err(NotATarget::NotACheckpoint),
    };
    let current = current_line(f).ok_or(NotATarget::NotCurrent)?;
    if position_on(f, current, record).is_none() {
        return Err(NotATarget::NotCurrent);
    }
    Ok(Target {
        dir: a.dir.clone(),
        agent,
        record,
        back: Back::Checkpoint(checkpoint),
        session: session.dir.clone(),
        tool: session.tool,
    })
}

/// For an agent that undoes turns: a D-Mail from the selected record `r`
/// goes back to the turn `r` is in, undoing it and every later one (its
/// prompt is replaced by the D-Mail). A turn is a user's prompt; the walk
/// stops at a compaction, as the agent's undo does.
pub fn turn_target_of(session: &Session, agent: usize, r: RecordRef) -> Result<Target, NotATarget> {
    if agent != 0 {
        return Err(NotATarget::Subagent);
    }
    let a = session.agents.first().ok_or(NotATarget::NoTurn)?;
    let f = &a.family;
    let current = current_line(f).ok_or(NotATarget::NotCurrent)?;
    let i = position_on(f, current, r).ok_or(NotATarget::NotCurrent)?;
    let len = f.line_len(current);
    let meta = |k: usize| f.owner(current, k).and_then(|o| f.record(o));
    let is_turn = |k: usize| meta(k).is_some_and(|m| *m.role() == Role::User);
    let is_compaction = |k: usize| {
        meta(k).is_some_and(|m| matches!(m.marker().as_deref(), Some(Marker::Compaction)))
    };
    // The turn `r` is in: the last prompt at or before it, else the first.
    let start = (0..=i)
        .rev()
        .take_while(|&k| !is_compaction(k) || k == i)
        .find(|&k| is_turn(k))
        .or_else(|| (i..len).find(|&k| is_turn(k)))
        .ok_or(NotATarget::NoTurn)?;
    if (start..len).any(is_compaction) {
        return Err(NotATarget::AcrossCompaction);
    }
    let turns = (start..len).filter(|&k| is_turn(k)).count();
    let record = f.owner(current, start).ok_or(NotATarget::NotCurrent)?;
    Ok(Target {
        dir: a.dir.clone(),
        agent,
        record,
        back: Back::Turns(u32::try_from(turns).unwrap_or(u32::MAX)),
        session: session.dir.clone(),
        tool: session.tool,
    })
}

fn current_line(f: &Family) -> Option<usize> {
    f.lines.iter().rposition(|l| l.current)
}

/// A note's `_checkpoint` is the record before it; its id is the truth
/// (after a compaction the note's N can disagree).
fn checkpoint_before_note(f: &Family, note: RecordRef, n: i64) -> (RecordRef, i64) {
    let before = note
        .record
        .checked_sub(1)
        .map(|i| RecordRef { record: i, ..note });
    match before.and_then(|b| Some((b, f.record(b)?))) {
        Some((b, m)) if *m.role() == Role::Checkpoint => (b, m.checkpoint().unwrap_or(n)),
        _ => (note, n),
    }
}

/// Index of record `r` (by owner) in world line `line`.
fn position_on(f: &Family, line: usize, r: RecordRef) -> Option<usize> {
    (f.owner(line, r.record)? == r).then_some(r.record)
}

/// How many records of the current world line the revert discards: kimi-cli
/// keeps every line before `_checkpoint c` and writes that checkpoint and its
/// `CHECKPOINT c` note again, so it is every record after the note (or after
/// the checkpoint when there is no note). `None` when the target is no longer
/// on the current world line.
pub fn discarded(session: &Session, t: &Target) -> Option<Discard> {
    let f = &session.agents.get(t.agent)?.family;
    let current = current_line(f)?;
    let i = position_on(f, current, t.record)?;
    if let Back::Turns(_) | Back::KeepTurns(_) = t.back {
        // The turn's prompt and everything after it.
        return Some(Discard {
            records: f.line_len(current).saturating_sub(i),
            line: current,
            after_note: false,
        });
    }
    let next = f.owner(current, i + 1);
    let after_note = next
        .and_then(|r| f.record(r))
        .is_some_and(|m| matches!(m.marker().as_deref(), Some(Marker::CheckpointNote(_))));
    let kept = i + 1 + usize::from(after_note);
    Some(Discard {
        records: f.line_len(current).saturating_sub(kept),
        line: current,
        after_note,
    })
}

/// Where an accepted D-Mail landed: the agent, the new world line and its
/// injection record, once a snapshot holds it.
pub fn landing(session: &Session, sent: &SentDMail) -> Option<(usize, usize, RecordRef)> {
    let agent = session.agents.iter().position(|a| a.dir == sent.dir)?;
    let f = &session.agents[agent].family;
    let line = f
        .lines
        .iter()
        .enumerate()
        .skip(sent.lines_before)
        .find_map(|(i, l)| {
            let fork = l.fork.as_ref()?;
            let to = match sent.back {
                Back::Checkpoint(c) => fork.checkpoint == Some(c),
                Back::Turns(n) | Back::KeepTurns(n) => fork.turns == Some(n),
            };
            let same = fork.kind == ForkKind::Dmail
                && to
                && fork.message.as_deref().map(str::trim) == Some(sent.message.trim());
            same.then_some(i)
        })?;
    Some((agent, line, f.owner(line, f.lines[line].shared)?))
}

/// One side effect a revert leaves in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// The file's path, the command, or the tool's name, as the model wrote it.
    pub what: String,
    /// The assistant record holding the call.
    pub call: RecordRef,
    /// The tool said it failed (a failed write or edit changed nothing).
    pub failed: bool,
    /// The subagent (its agent id) that made it, if not the agent itself.
    pub by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    Wrote,
    Edited,
    Ran,
    /// A tool worldline doesn't know; it may have changed anything.
    Other,
}

/// What a revert leaves on disk: the changes in order, and how many calls
/// could not be told apart because their record was unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    pub changes: Vec<Change>,
    pub unreadable: usize,
    /// More calls than `MAX_CALLS`: the rest are not listed.
    pub truncated: bool,
}

/// Calls looked into at most, so a huge session stays a quick keypress.
pub const MAX_CALLS: usize = 400;

/// Tools that only look: never listed.
const READ_ONLY: &[&str] = &[
    "ReadFile",
    "Read",
    "ReadMediaFile",
    "Glob",
    "Grep",
    "SearchWeb",
    "WebSearch",
    "FetchURL",
    "WebFetch",
    "SetTodoList",
    "TodoList",
    "TodoWrite",
    "Think",
    "SendDMail",
    "AskUserQuestion",
    "TaskList",
    "TaskOutput",
    "GetGoal",
    "CronList",
    "EnterPlanMode",
    "ExitPlanMode",
    "Skill",
    "WaitFor",
];

fn kind_of(tool: &str) -> Option<ChangeKind> {
    Some(match tool {
        "WriteFile" | "Write" => ChangeKind::Wrote,
        "StrReplaceFile" | "Edit" | "MultiEdit" | "NotebookEdit" => ChangeKind::Edited,
        "Shell" | "Bash" => ChangeKind::Ran,
        t if READ_ONLY.contains(&t) || is_subagent_tool(t) => return None,
        _ => ChangeKind::Other,
    })
}

fn is_subagent_tool(tool: &str) -> bool {
    matches!(tool, "Agent" | "Task")
}

/// Reads a record's body for the side-effect summary.
pub type Loader<'a> = dyn FnMut(RecordRef) -> Option<Body> + 'a;

/// What the current world line did after the target checkpoint that the
/// revert will not undo. `None` when the target is no longer current.
pub fn kept_by_revert(session: &Session, t: &Target, load: &mut Loader) -> Option<Kept> {
    let d = discarded(session, t)?;
    let from = session.agents.get(t.agent)?.family.line_len(d.line) - d.records;
    Some(kept_in(session, t.agent, d.line, from, load))
}

/// For a world line that began with a D-Mail: what the world line it left
/// had done after the checkpoint when the D-Mail arrived (it was on disk
/// already). `None` for other world lines.
pub fn kept_at_landing(
    session: &Session,
    agent: usize,
    line: usize,
    load: &mut Loader,
) -> Option<Kept> {
    let f = &session.agents.get(agent)?.family;
    let l = f.lines.get(line)?;
    l.fork.as_ref().filter(|k| k.kind == ForkKind::Dmail)?;
    let parent = l.parent?;
    // The shared prefix ends with ⚑c and its note, written again by the
    // revert; the parent's records after them are what it did meanwhile.
    Some(kept_in(session, agent, parent, l.shared, load))
}

/// Side effects of world line `line` from its record `from` to its end,
/// subagents' included.
fn kept_in(session: &Session, agent: usize, line: usize, from: usize, load: &mut Loader) -> Kept {
    let mut kept = Kept::default();
    let refs: Vec<RecordRef> = session.walk(agent, line).into_iter().skip(from).collect();
    collect(session, &refs, None, load, &mut kept);
    kept
}

fn collect(
    session: &Session,
    refs: &[RecordRef],
    by: Option<&str>,
    load: &mut Loader,
    kept: &mut Kept,
) {
    let mut calls = 0usize;
    for (i, &r) in refs.iter().enumerate() {
        let Some(meta) = session.record(r) else {
            continue;
        };
        if *meta.role() != Role::Assistant || meta.tool_calls().is_empty() {
            continue;
        }
        let wanted: Vec<_> = meta
            .tool_calls()
            .iter()
            .filter(|c| kind_of(c.name()).is_some() || is_subagent_tool(c.name()))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        calls += wanted.len();
        if calls > MAX_CALLS {
            kept.truncated = true;
            return;
        }
        let body = load(r);
        for head in wanted {
            if is_subagent_tool(head.name()) {
                subagent_changes(session, r, load, kept);
                continue;
            }
            let Some(kind) = kind_of(head.name()) else {
                continue;
            };
            let what = match (kind, &body) {
                (ChangeKind::Other, _) => Some(head.name().to_string()),
                (_, Some(b)) => b
                    .tool_calls
                    .iter()
                    .find(|c| head.is(&c.id))
                    .and_then(|c| argument(kind, &c.arguments)),
                (_, None) => None,
            };
            let Some(what) = what else {
                kept.unreadable += 1;
                continue;
            };
            kept.changes.push(Change {
                kind,
                what,
                call: r,
                failed: result_failed(session, &refs[i + 1..], head.key(), load),
                by: by.map(str::to_owned),
            });
        }
    }
}

/// The path or command of a call, from its arguments JSON text; arguments
/// cut short (some recorders truncate them) still give their beginning.
fn argument(kind: ChangeKind, arguments: &str) -> Option<String> {
    let keys: &[&str] = match kind {
        ChangeKind::Ran => &["command", "cmd"],
        _ => &["path", "file_path", "notebook_path"],
    };
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(arguments) {
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

/// Did the call's tool result (among the records after it) report an error?
fn result_failed(session: &Session, after: &[RecordRef], id: CallKey, load: &mut Loader) -> bool {
    let Some(&r) = after
        .iter()
        .take_while(|&&r| {
            session
                .record(r)
                .is_some_and(|m| *m.role() != Role::Assistant)
        })
        .find(|&&r| session.record(r).is_some_and(|m| m.answers(id)))
    else {
        return false; // no result yet: it may well have happened
    };
    load(r).is_some_and(|b| {
        b.text().trim_start().starts_with("<system>ERROR")
            || b.raw.get("is_error").and_then(|v| v.as_bool()) == Some(true)
    })
}

/// The changes of the subagent run by the Agent call in `call`.
fn subagent_changes(session: &Session, call: RecordRef, load: &mut Loader, kept: &mut Kept) {
    for (i, a) in session.agents.iter().enumerate() {
        if a.parent_call != Some(call) {
            continue;
        }
        let Some(line) = current_line(&a.family) else {
            continue;
        };
        let refs: Vec<RecordRef> = session.walk(i, line);
        let id = a.meta.as_ref().map(|m| m.agent_id.clone());
        collect(
            session,
            &refs,
            id.as_deref().or(Some("subagent")),
            load,
            kept,
        );
    }
}

/// Longest path or command shown; the record has the rest.
const MAX_WHAT: usize = 100;

/// A command or path on one line, white space collapsed, capped.
fn one_line(what: &str) -> String {
    let flat: Vec<&str> = what.split_whitespace().collect();
    let flat = flat.join(" ");
    match flat.char_indices().nth(MAX_WHAT) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

impl Kept {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.unreadable == 0 && !self.truncated
    }

    /// One line per file or command, in first-seen order, repeats counted:
    /// `edited tally/parse.py (2×)`, `ran `pytest -q``, failed ones marked.
    /// Failed writes and edits changed nothing, so they are left out.
    pub fn summary(&self) -> Vec<String> {
        let mut rows: Vec<(ChangeKind, &str, Option<&str>, bool, usize)> = Vec::new();
        for c in &self.changes {
            if c.failed && matches!(c.kind, ChangeKind::Wrote | ChangeKind::Edited) {
                continue;
            }
            let by = c.by.as_deref();
            match rows
                .iter_mut()
                .find(|(k, w, b, f, _)| *k == c.kind && *w == c.what && *b == by && *f == c.failed)
            {
                Some(row) => row.4 += 1,
                None => rows.push((c.kind, &c.what, by, c.failed, 1)),
            }
        }
        let mut out: Vec<String> = rows
            .into_iter()
            .map(|(kind, what, by, failed, n)| {
                let what = one_line(what);
                let mut s = match kind {
                    ChangeKind::Wrote => format!("wrote {what}"),
                    ChangeKind::Edited => format!("edited {what}"),
                    ChangeKind::Ran => format!("ran `{what}`"),
                    ChangeKind::Other => format!("called {what} (its effects unknown)"),
                };
                if failed {
                    s.push_str(" (failed)");
                }
                if n > 1 {
                    s.push_str(&format!(" ({n}×)"));
                }
                if let Some(by) = by {
                    s.push_str(&format!(" [subagent {by}]"));
                }
                s
            })
            .collect();
        if self.unreadable > 0 {
            out.push(format!(
                "{} more call{} whose record could not be read",
                self.unreadable,
                if self.unreadable == 1 { "" } else { "s" }
            ));
        }
        if self.truncated {
            out.push(format!(
                "… and more (only the first {MAX_CALLS} calls were read)"
            ));
        }
        out
    }

    /// The summary as text for a D-Mail: what the past self should know.
    pub fn message_text(&self) -> String {
        let mut s = String::from("Already done on disk (going back does not undo it):");
        for l in self.summary() {
            s.push_str("\n- ");
            s.push_str(&l);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn fixture(name: &str) -> Session {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name);
        let dir = if root.join("sessions").is_dir() {
            let work = std::fs::read_dir(root.join("sessions")).unwrap();
            let work = work.flatten().next().unwrap().path();
            std::fs::read_dir(work)
                .unwrap()
                .flatten()
                .next()
                .unwrap()
                .path()
        } else {
            root
        };
        Session::load(&dir).unwrap()
    }

    /// The checkpoint record with id `c` on the current world line.
    fn checkpoint(s: &Session, c: i64) -> RecordRef {
        let f = s.main();
        s.walk(0, current_line(f).unwrap())
            .into_iter()
            .find(|&r| {
                let m = s.record(r).unwrap();
                *m.role() == Role::Checkpoint && m.checkpoint() == Some(c)
            })
            .unwrap()
    }

    fn kept(s: &Session, c: i64) -> Kept {
        let t = target_of(s, 0, checkpoint(s, c)).unwrap();
        kept_by_revert(s, &t, &mut |r| s.body(r).ok()).unwrap()
    }

    #[test]
    fn a_landing_lists_what_the_line_it_left_wrote() {
        // thinking_tools: the old line writes out.txt after ⚑1, then sends
        // a D-Mail back to ⚑1 saying so.
        let s = fixture("kimi-cli/thinking_tools");
        let f = s.main();
        let new = current_line(f).unwrap();
        let k = kept_at_landing(&s, 0, new, &mut |r| s.body(r).ok()).unwrap();
        assert_eq!(k.changes.len(), 1, "{k:?}");
        let c = &k.changes[0];
        assert_eq!(
            (c.kind, c.what.as_str(), c.failed),
            (ChangeKind::Wrote, "out.txt", false)
        );
        assert_eq!(c.call.line, f.lines[new].parent.unwrap());
        assert_eq!(k.summary(), ["wrote out.txt"]);
        assert_eq!(
            k.message_text(),
            "Already done on disk (going back does not undo it):\n- wrote out.txt"
        );
        // The first world line began with no D-Mail.
        assert!(kept_at_landing(&s, 0, 0, &mut |r| s.body(r).ok()).is_none());
    }

    #[test]
    fn reverting_the_current_line_keeps_nothing_when_it_changed_nothing() {
        let s = fixture("kimi-cli/thinking_tools");
        // After the D-Mail the agent only answered.
        assert!(kept(&s, 1).is_empty());
        assert!(kept(&s, 2).is_empty());
    }

    #[test]
    fn shell_commands_after_the_checkpoint_are_listed_in_order() {
        let s = fixture("kimi-code-legacy/large-100msgs");
        let late = kept(&s, 20);
        let kinds: Vec<_> = late.changes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [ChangeKind::Ran, ChangeKind::Ran], "{late:#?}");
        // Its arguments were recorded cut short: their beginning still shows.
        assert!(late.changes[0]
            .what
            .starts_with("SMOKE_DIR=\"/tmp/kimi-smoke-a2i1xj\""));
        assert!(late.changes[0].what.ends_with('…'));
        assert_eq!(late.unreadable, 0);
        assert!(late.summary()[1].starts_with("ran `source /Users/example/proj"));
        // Reads, greps and todo lists are not side effects; 14 shell runs are.
        let all = kept(&s, 0);
        assert_eq!(all.changes.len(), 14, "{:#?}", all.summary());
        assert!(all
            .changes
            .iter()
            .all(|c| c.kind == ChangeKind::Ran && !c.failed));
        // Multi-line commands are one line, capped.
        assert!(all
            .summary()
            .iter()
            .all(|l| !l.contains('\n') && l.chars().count() < 120));
        // Fewer changes the later the checkpoint.
        assert!(kept(&s, 10).changes.len() < all.changes.len());
    }

    #[test]
    fn the_summary_counts_repeats_and_drops_failed_edits() {
        let r = RecordRef {
            agent: 0,
            line: 0,
            record: 0,
        };
        let change = |kind, what: &str, failed, by: Option<&str>| Change {
            kind,
            what: what.into(),
            call: r,
            failed,
            by: by.map(str::to_owned),
        };
        let k = Kept {
            changes: vec![
                change(ChangeKind::Edited, "src/a.rs", false, None),
                change(ChangeKind::Ran, "cargo test", true, None),
                change(ChangeKind::Edited, "src/a.rs", false, None),
                change(ChangeKind::Edited, "src/b.rs", true, None),
                change(ChangeKind::Wrote, "notes.md", false, Some("a1b2")),
                change(ChangeKind::Other, "mcp_deploy", false, None),
            ],
            unreadable: 1,
            truncated: false,
        };
        assert_eq!(
            k.summary(),
            [
                "edited src/a.rs (2×)",
                "ran `cargo test` (failed)",
                "wrote notes.md [subagent a1b2]",
                "called mcp_deploy (its effects unknown)",
                "1 more call whose record could not be read",
            ]
        );
        assert!(!k.is_empty());
        assert!(Kept::default().is_empty());
    }

    #[test]
    fn targets_and_discards_follow_kimi_cli() {
        let s = fixture("kimi-cli/thinking_tools");
        let f = s.main();
        let cur = current_line(f).unwrap();
        // A record that is no checkpoint, and a checkpoint of the old line.
        let answer = f.last_record(cur).unwrap();
        assert_eq!(target_of(&s, 0, answer), Err(NotATarget::NotACheckpoint));
        let old = s
            .walk(0, 0)
            .into_iter()
            .find(|&r| r.line == 0 && s.record(r).unwrap().checkpoint() == Some(3))
            .unwrap();
        assert_eq!(target_of(&s, 0, old), Err(NotATarget::NotCurrent));
        // ⚑1's note is kept; the injection, ⚑2, its note, the answer go.
        let t = target_of(&s, 0, checkpoint(&s, 1)).unwrap();
        assert_eq!(
            discarded(&s, &t),
            Some(Discard {
                records: 4,
                line: cur,
                after_note: true
            })
        );
    }
}
