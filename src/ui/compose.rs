//! D-Mail compose: which checkpoint `d` targets, what the revert would
//! discard, the modal's state and drawing, and the two blocking jobs the
//! runtime (or a test) runs for it: the liveness probe and the send.

use std::path::PathBuf;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};
use ratatui::Frame;
use ratatui_textarea::{Input, Key, TextArea, WrapMode};

use crate::denwa::{self, DenwaClient};
use crate::model::{Marker, Role};
use crate::text::{sanitize, sanitize_line};
use crate::worldline::{Family, ForkKind, RecordRef, Session};

use super::theme::{line_name, Theme};

pub const NOT_A_CHECKPOINT: &str =
    "d sends a D-Mail: select a checkpoint (⚑) of the current world line";
pub const NOT_CURRENT: &str =
    "d sends a D-Mail: this world line is not current: D-Mails go to the live one";
pub const NOT_LIVE: &str = "not live: no DenwaRenji socket for this session";
pub const EMPTY: &str = "the D-Mail is empty: type a message first";
pub const MOVED: &str =
    "the checkpoint is no longer on the current world line: Esc and pick another";

/// The checkpoint a D-Mail would revert to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The agent's directory, where its `denwa.json` is.
    pub dir: PathBuf,
    pub agent: usize,
    /// The `_checkpoint` record (or its note when no record precedes it).
    pub record: RecordRef,
    pub checkpoint: i64,
}

/// What the agent's DenwaRenji said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Accepted,
    /// DenwaRenji's refusal, verbatim.
    Refused(String),
    NotLive,
    /// Transport or protocol failure.
    Failed(String),
}

/// A D-Mail to hand to the agent (the runtime does it on a worker thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendRequest {
    pub dir: PathBuf,
    pub checkpoint: i64,
    pub message: String,
    /// World lines the agent had at sending: the D-Mail's comes after.
    pub lines_before: usize,
}

/// An accepted D-Mail whose world line has not appeared yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingJump {
    pub dir: PathBuf,
    pub checkpoint: i64,
    pub message: String,
    /// World lines the agent had when it accepted: the new one comes after.
    pub lines_before: usize,
}

/// A note under the text: a hint, or a problem in the warning colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Hint(String),
    Warning(String),
}

/// The open compose modal.
#[derive(Debug, Clone)]
pub struct Compose {
    pub target: Target,
    pub text: TextArea<'static>,
    pub note: Option<Note>,
    /// A send is on its way; another Ctrl-S waits for its reply.
    pub sending: bool,
}

// TextArea has no PartialEq; what the user wrote is what matters.
impl PartialEq for Compose {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target
            && self.text.lines() == other.text.lines()
            && self.note == other.note
            && self.sending == other.sending
    }
}

impl Eq for Compose {}

impl Compose {
    pub fn new(target: Target) -> Compose {
        let mut text = TextArea::default();
        text.set_cursor_line_style(Style::new());
        text.set_wrap_mode(WrapMode::WordOrGlyph);
        text.set_placeholder_text("a message to your past self…");
        Compose {
            target,
            text,
            note: None,
            sending: false,
        }
    }

    /// The message as it will be sent.
    pub fn message(&self) -> String {
        self.text.lines().join("\n")
    }

    /// Feeds one key to the text. Control characters (a paste arrives as
    /// keys) become visible stand-ins instead of reaching the text raw.
    pub fn input(&mut self, input: Input) {
        match input.key {
            Key::Char(c) if !input.ctrl && !input.alt && c.is_control() && c != '\n' => {
                self.text.insert_str(sanitize(&c.to_string(), false));
            }
            _ => {
                self.text.input(input);
            }
        }
    }

    /// A bracketed paste: sanitised, newlines kept, tabs as spaces.
    pub fn paste(&mut self, s: &str) {
        let clean = sanitize(&s.replace("\r\n", "\n"), true).replace('\t', "    ");
        self.text.insert_str(clean);
    }
}

/// The checkpoint `d` would target from the selected record `r`, or why not.
pub fn target_of(session: &Session, agent: usize, r: RecordRef) -> Result<Target, &'static str> {
    let a = session.agents.get(agent).ok_or(NOT_A_CHECKPOINT)?;
    let f = &a.family;
    let meta = f.record(r).ok_or(NOT_A_CHECKPOINT)?;
    let (record, checkpoint) = match (&meta.role, meta.marker.as_deref(), meta.checkpoint) {
        (Role::Checkpoint, _, Some(id)) => (r, id),
        (_, Some(Marker::CheckpointNote(n)), _) => checkpoint_before_note(f, r, *n),
        _ => return Err(NOT_A_CHECKPOINT),
    };
    let current = f.lines.iter().rposition(|l| l.current).ok_or(NOT_CURRENT)?;
    if position_on(session, f, current, record).is_none() {
        return Err(NOT_CURRENT);
    }
    Ok(Target {
        dir: a.dir.clone(),
        agent,
        record,
        checkpoint,
    })
}

/// A note's `_checkpoint` is the record before it; its id is the truth
/// (after a compaction the note's N can disagree).
fn checkpoint_before_note(f: &Family, note: RecordRef, n: i64) -> (RecordRef, i64) {
    let before = note
        .record
        .checked_sub(1)
        .map(|i| RecordRef { record: i, ..note });
    match before.and_then(|b| Some((b, f.record(b)?))) {
        Some((b, m)) if m.role == Role::Checkpoint => (b, m.checkpoint.unwrap_or(n)),
        _ => (note, n),
    }
}

/// Index of record `r` (by owner) in world line `line`.
fn position_on(session: &Session, f: &Family, line: usize, r: RecordRef) -> Option<usize> {
    f.lines
        .get(line)?
        .nodes
        .iter()
        .position(|&n| session.graph[n].owner == r)
}

/// How many records of the current world line the revert discards: kimi-cli
/// keeps every line before `_checkpoint c` and writes that checkpoint and its
/// `CHECKPOINT c` note again, so it is every record after the note (or after
/// the checkpoint when there is no note). `None` when the target is no longer
/// on the current world line.
pub fn discarded(session: &Session, t: &Target) -> Option<Discard> {
    let f = &session.agents.get(t.agent)?.family;
    let current = f.lines.iter().rposition(|l| l.current)?;
    let i = position_on(session, f, current, t.record)?;
    let nodes = &f.lines[current].nodes;
    let next = nodes.get(i + 1).map(|&n| session.graph[n].owner);
    let after_note = next
        .and_then(|r| f.record(r))
        .is_some_and(|m| matches!(m.marker.as_deref(), Some(Marker::CheckpointNote(_))));
    let kept = i + 1 + usize::from(after_note);
    Some(Discard {
        records: nodes.len().saturating_sub(kept),
        line: current,
        after_note,
    })
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

/// Where an accepted D-Mail landed: the agent and the new world line's
/// injection record, once a snapshot holds it.
pub fn landing(session: &Session, j: &PendingJump) -> Option<(usize, usize, RecordRef)> {
    let agent = session.agents.iter().position(|a| a.dir == j.dir)?;
    let f = &session.agents[agent].family;
    let line = f
        .lines
        .iter()
        .enumerate()
        .skip(j.lines_before)
        .find_map(|(i, l)| {
            let fork = l.fork.as_ref()?;
            let same = fork.kind == ForkKind::Dmail
                && fork.checkpoint == Some(j.checkpoint)
                && fork.message.as_deref().map(str::trim) == Some(j.message.trim());
            same.then_some(i)
        })?;
    let l = &f.lines[line];
    let &n = l.nodes.get(l.shared)?;
    Some((agent, line, session.graph[n].owner))
}

/// Is there a live DenwaRenji for this agent? Cheap: no connection.
pub fn probe(t: &Target) -> bool {
    denwa::is_live(&t.dir)
}

/// Hands the D-Mail to the agent's DenwaRenji. Blocks up to the client's
/// timeouts, so the runtime calls it off the UI thread.
pub fn send(req: &SendRequest) -> Reply {
    let sent = DenwaClient::connect_session(&req.dir)
        .and_then(|mut c| c.send_dmail(&req.message, req.checkpoint));
    match sent {
        Ok(Ok(())) => Reply::Accepted,
        Ok(Err(reason)) => Reply::Refused(reason),
        Err(e) if e.is_not_live() => Reply::NotLive,
        Err(e) => Reply::Failed(e.to_string()),
    }
}

/// The modal's rectangle: centred over the body, below the header.
pub fn area(screen: Rect) -> Rect {
    let body = Rect::new(
        screen.x,
        screen.y + 2.min(screen.height),
        screen.width,
        screen.height.saturating_sub(3),
    );
    let w = 72.min(body.width);
    let h = 16.min(body.height);
    Rect::new(
        body.x + (body.width - w) / 2,
        body.y + (body.height - h) / 2,
        w,
        h,
    )
}

pub fn draw(f: &mut Frame, session: &Session, c: &Compose, t: &Theme) {
    let area = area(f.area());
    let block = Block::bordered().title(format!(" D-Mail → checkpoint {} ", c.target.checkpoint));
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    let [info, text, note, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    let w = inner.width as usize;
    let info_lines = match discarded(session, &c.target) {
        Some(Discard {
            records: n,
            line,
            after_note,
        }) => {
            let file = session
                .agents
                .get(c.target.agent)
                .and_then(|a| a.family.lines.get(line))
                .map_or("", |l| l.file.as_str());
            vec![
                Line::from(vec![
                    Span::raw(format!(
                        " reverting to ⚑{} discards {n} record{} of ",
                        c.target.checkpoint,
                        if n == 1 { "" } else { "s" }
                    )),
                    Span::styled(format!("world line {}", line_name(line)), t.line(line)),
                    Span::raw(format!(" ({})", sanitize_line(file, 30))),
                ]),
                Line::from(vec![
                    Span::raw(" "),
                    Span::styled(
                        sanitize_line(
                            &format!(
                                "counted: every record after ⚑{}{}; the old file keeps them",
                                c.target.checkpoint,
                                if after_note { "'s note" } else { "" }
                            ),
                            w.saturating_sub(1),
                        ),
                        t.dim(),
                    ),
                ]),
            ]
        }
        None => vec![Line::from(Span::styled(format!(" {MOVED}"), t.error()))],
    };
    f.render_widget(Paragraph::new(info_lines), info);
    let mut ta = c.text.clone();
    ta.set_block(
        Block::default()
            .borders(Borders::TOP | Borders::BOTTOM)
            .padding(Padding::horizontal(1)),
    );
    f.render_widget(&ta, text);
    let note_line = match (&c.note, c.sending) {
        (_, true) => Line::from(Span::styled(" sending…", t.accent())),
        (Some(Note::Warning(m)), _) => {
            Line::from(Span::styled(format!(" {}", sanitize_line(m, w)), t.error()))
        }
        (Some(Note::Hint(m)), _) => {
            Line::from(Span::styled(format!(" {}", sanitize_line(m, w)), t.dim()))
        }
        (None, false) => Line::default(),
    };
    f.render_widget(Paragraph::new(note_line), note);
    f.render_widget(
        Paragraph::new(Span::styled(
            " Ctrl-S send · Esc cancel · Enter new line",
            t.dim(),
        )),
        footer,
    );
}
