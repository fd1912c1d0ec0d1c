//! D-Mail compose: the modal's state and drawing (what the revert discards,
//! and what it leaves on disk, ready to insert into the message), and the
//! two blocking jobs the runtime (or a test) runs for it: the liveness probe
//! and the send, by the session's route (a DenwaRenji socket and a
//! checkpoint, or a server that undoes turns). Revert semantics live in
//! `worldline::revert`.

use std::path::PathBuf;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};
use ratatui::Frame;
use ratatui_textarea::{Input, Key, TextArea, WrapMode};

use crate::denwa::{self, DenwaClient};
use crate::text::{sanitize, sanitize_line};
use crate::worldline::revert::{self, Kept, NotATarget};
use crate::worldline::{RecordRef, Session};

use super::theme::{line_name, Theme};

pub const NOT_A_CHECKPOINT: &str =
    "d sends a D-Mail: select a checkpoint (⚑) of the current world line";
pub const NOT_CURRENT: &str =
    "d sends a D-Mail: this world line is not current: D-Mails go to the live one";
pub const NO_CHECKPOINTS: &str = "d sends a D-Mail back to a ⚑ checkpoint: this session has none";
pub const NOT_LIVE: &str = "not live: no DenwaRenji socket for this session";
pub const NOT_A_TURN: &str = "d sends a D-Mail: select a record of the current world line";
pub const ACROSS_COMPACTION: &str =
    "d sends a D-Mail: a compaction lies after this turn, and undo never crosses one";
pub const SUBAGENT: &str =
    "d sends a D-Mail: a subagent's turns can't be undone through the agent's server";
pub const EMPTY: &str = "the D-Mail is empty: type a message first";
pub const MOVED: &str =
    "the checkpoint is no longer on the current world line: Esc and pick another";
pub const INSERTED: &str = "inserted what stays on disk: edit it as you like";
pub const NOTHING_KEPT: &str = "nothing to insert: no file changed, no command run after it";
/// The key that inserts the kept-changes summary (Ctrl + this letter).
pub const INSERT_KEY: char = 'o';
/// Rows of kept changes the box shows; Ctrl-O inserts them all.
const KEPT_ROWS: usize = 4;

pub use crate::worldline::revert::{discarded, Back, Discard, Target};

/// An accepted D-Mail whose world line has not appeared yet.
pub type PendingJump = crate::worldline::revert::SentDMail;

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
    /// A checkpoint, or turns back.
    pub back: Back,
    pub session: PathBuf,
    pub tool: crate::sources::Tool,
    pub message: String,
    /// World lines the agent had at sending: the D-Mail's comes after.
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
    /// What the revert leaves on disk, for the world line as it was when
    /// last looked at (its length is the key: the agent may go on working).
    /// Read by [`Compose::prepare`], before a frame; drawing only reads it.
    kept: Option<(KeptKey, Option<Kept>)>,
}

type KeptKey = (usize, usize, usize);

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
            kept: None,
        }
    }

    /// Reads what a revert to the target leaves on disk, if the world line
    /// changed since the last look (the app calls this before each frame).
    pub fn prepare(&mut self, session: &Session) {
        let Some(f) = session.agents.get(self.target.agent).map(|a| &a.family) else {
            self.kept = None;
            return;
        };
        let Some(current) = f.lines.iter().rposition(|l| l.current) else {
            self.kept = None;
            return;
        };
        let key = (f.lines.len(), current, f.line_len(current));
        if self.kept.as_ref().map(|(k, _)| *k) != Some(key) {
            let mut load = |r| session.body(r).ok();
            let kept = revert::kept_by_revert(session, &self.target, &mut load);
            self.kept = Some((key, kept));
        }
    }

    /// What [`Compose::prepare`] read: `None` when the target moved or
    /// nothing was read yet.
    pub fn kept(&self) -> Option<&Kept> {
        self.kept.as_ref().and_then(|(_, k)| k.as_ref())
    }

    /// Ctrl-O: the kept-changes summary goes into the message at the
    /// cursor, on lines of its own.
    pub fn insert_kept(&mut self, session: &Session) {
        self.prepare(session);
        let Some(kept) = self.kept().filter(|k| !k.is_empty()).cloned() else {
            self.note = Some(Note::Hint(NOTHING_KEPT.into()));
            return;
        };
        let ratatui_textarea::DataCursor(row, col) = self.text.cursor();
        let line_len = self.text.lines().get(row).map_or(0, |l| l.chars().count());
        let mut text = kept.message_text();
        if col > 0 {
            text.insert(0, '\n');
        }
        if col < line_len || row + 1 < self.text.lines().len() {
            text.push('\n');
        }
        self.text.insert_str(sanitize(&text, true));
        self.note = Some(Note::Hint(INSERTED.into()));
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

/// The checkpoint `d` would target from the selected record `r`, or why
/// not, in the words the status line shows.
pub fn target_of(
    session: &Session,
    agent: usize,
    r: RecordRef,
) -> Result<Target, std::borrow::Cow<'static, str>> {
    let found = match revert::route(session) {
        revert::DMailRoute::Checkpoints { .. } => revert::target_of(session, agent, r),
        revert::DMailRoute::Turns => revert::turn_target_of(session, agent, r),
        revert::DMailRoute::None(why) => return Err(format!("d sends a D-Mail: {why}").into()),
    };
    found.map_err(|e| {
        match e {
            NotATarget::NotACheckpoint => NOT_A_CHECKPOINT,
            NotATarget::NotCurrent => NOT_CURRENT,
            NotATarget::AcrossCompaction => ACROSS_COMPACTION,
            NotATarget::Subagent => SUBAGENT,
            NotATarget::NoTurn => NOT_A_TURN,
        }
        .into()
    })
}

/// Does `d` take any selected record (turns), not only a checkpoint?
pub fn by_turns(session: &Session) -> bool {
    revert::route(session) == revert::DMailRoute::Turns
}

/// Why the probe said no, in the status line's words.
pub fn not_live(t: &Target) -> String {
    match t.back {
        Back::Checkpoint(_) => NOT_LIVE.to_string(),
        _ => match t.tool.source().turns_reachable(&t.session) {
            Err(why) => format!("not live: {why}"),
            Ok(()) => "not live".to_string(),
        },
    }
}

/// Where an accepted D-Mail landed: the agent, the new world line and its
/// injection record, once a snapshot holds it.
pub fn landing(session: &Session, j: &PendingJump) -> Option<(usize, usize, RecordRef)> {
    revert::landing(session, j)
}

/// Is there a live DenwaRenji (or a server) for this agent? Cheap: no
/// connection.
pub fn probe(t: &Target) -> bool {
    match t.back {
        Back::Checkpoint(_) => denwa::is_live(&t.dir),
        _ => t.tool.source().turns_reachable(&t.session).is_ok(),
    }
}

/// Hands the D-Mail to the agent's DenwaRenji (or its server). Blocks up
/// to the client's timeouts, so the runtime calls it off the UI thread.
pub fn send(req: &SendRequest) -> Reply {
    let checkpoint = match req.back {
        Back::Checkpoint(c) => c,
        back => {
            return match req
                .tool
                .source()
                // The TUI never loads a session: that is `send --load`'s,
                // with the user's word that nothing else has it open.
                .send_turns_back(&req.session, back, &req.message, false)
            {
                Ok(_) => Reply::Accepted,
                Err(e) => Reply::Refused(e.to_string()),
            };
        }
    };
    let sent = DenwaClient::connect_session(&req.dir)
        .and_then(|mut c| c.send_dmail(&req.message, checkpoint));
    match sent {
        Ok(Ok(())) => Reply::Accepted,
        Ok(Err(reason)) => Reply::Refused(reason),
        Err(e) if e.is_not_live() => Reply::NotLive,
        Err(e) => Reply::Failed(e.to_string()),
    }
}

/// The modal's rectangle: centred over the body, below the header.
pub fn area(screen: Rect, extra_rows: u16) -> Rect {
    let body = Rect::new(
        screen.x,
        screen.y + 2.min(screen.height),
        screen.width,
        screen.height.saturating_sub(3),
    );
    let w = 72.min(body.width);
    let h = (16 + extra_rows).min(body.height);
    Rect::new(
        body.x + (body.width - w) / 2,
        body.y + (body.height - h) / 2,
        w,
        h,
    )
}

/// The kept changes as lines: a heading, then up to `max` of the summary
/// (all when `max` is `None`), each sanitised to `w` columns.
pub fn kept_lines(
    kept: &Kept,
    heading: &str,
    max: Option<usize>,
    w: usize,
    t: &Theme,
) -> Vec<Line<'static>> {
    let summary = kept.summary();
    let mut out = vec![Line::from(Span::styled(
        format!(" {}", sanitize_line(heading, w.saturating_sub(1))),
        t.accent(),
    ))];
    let shown = match max {
        Some(m) if summary.len() > m => m.saturating_sub(1),
        _ => summary.len(),
    };
    let item = |text: &str| format!("   · {}", sanitize_line(text, w.saturating_sub(5)));
    for l in summary.iter().take(shown) {
        out.push(Line::from(item(l)));
    }
    if summary.len() > shown {
        out.push(Line::from(Span::styled(
            item(&format!(
                "… and {} more (Ctrl-{} inserts them all)",
                summary.len() - shown,
                INSERT_KEY.to_ascii_uppercase()
            )),
            t.dim(),
        )));
    }
    out
}

/// The compose box's kept-changes section.
fn kept_section(c: &Compose, kept: Option<&Kept>, w: usize, t: &Theme) -> Vec<Line<'static>> {
    match kept {
        None => Vec::new(),
        Some(k) if k.is_empty() => vec![Line::from(Span::styled(
            format!(
                " {}",
                sanitize_line(
                    &match c.target.back {
                        Back::Checkpoint(cp) => format!(
                            "nothing on disk to undo: no file changed, no command run after ⚑{cp}"
                        ),
                        _ => "nothing on disk to undo: no file changed, no command run in those turns"
                            .to_string(),
                    },
                    w.saturating_sub(1),
                )
            ),
            t.dim(),
        ))],
        Some(k) => kept_lines(
            k,
            "stays on disk (a revert rewinds the conversation only):",
            Some(KEPT_ROWS),
            w,
            t,
        ),
    }
}

/// Draws from the index and what [`Compose::prepare`] read.
pub fn draw(f: &mut Frame, session: &Session, c: &Compose, t: &Theme) {
    let w = 72.min(f.area().width).saturating_sub(2) as usize;
    let kept_rows = kept_section(c, c.kept(), w, t);
    let area = area(f.area(), kept_rows.len() as u16);
    let block = Block::bordered().title(match c.target.back {
        Back::Checkpoint(cp) => format!(" D-Mail → checkpoint {cp} "),
        _ => format!(" D-Mail → {} ", c.target.back_name()),
    });
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    let [info, kept_area, text, note, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(kept_rows.len() as u16),
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
            let (going, counted) = match c.target.back {
                Back::Checkpoint(cp) => (
                    format!("reverting to ⚑{cp}"),
                    format!(
                        "counted: every record after ⚑{cp}{}; the old file keeps them",
                        if after_note { "'s note" } else { "" }
                    ),
                ),
                _ => (
                    format!("going {}", c.target.back_name()),
                    "counted: the turn's prompt and all after it; the agent's undo keeps them in a branch"
                        .to_string(),
                ),
            };
            vec![
                Line::from(vec![
                    Span::raw(format!(
                        " {going} discards {n} record{} of ",
                        if n == 1 { "" } else { "s" }
                    )),
                    Span::styled(format!("world line {}", line_name(line)), t.line(line)),
                    Span::raw(format!(" ({})", sanitize_line(file, 30))),
                ]),
                Line::from(vec![
                    Span::raw(" "),
                    Span::styled(sanitize_line(&counted, w.saturating_sub(1)), t.dim()),
                ]),
            ]
        }
        None => vec![Line::from(Span::styled(format!(" {MOVED}"), t.error()))],
    };
    f.render_widget(Paragraph::new(info_lines), info);
    f.render_widget(Paragraph::new(kept_rows), kept_area);
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
            // Enter is typed like any other key: no binding, said here.
            format!(
                " {} · Enter new line",
                super::keys::title_of(super::keys::COMPOSE)
            ),
            t.dim(),
        )),
        footer,
    );
}

/// The detail of a D-Mail landing (`r` its injection): what the world line
/// it left had done after the checkpoint, on disk when the D-Mail arrived
/// (read before the frame by [`super::cache::Cache::landing`]).
pub fn landing_detail(out: &mut Vec<Line<'static>>, kept: Option<&Kept>, t: &Theme) {
    let Some(kept) = kept else { return };
    out.push(Line::default());
    if kept.is_empty() {
        out.push(Line::from(Span::styled(
            "when this D-Mail arrived, the world line it left had changed nothing on disk"
                .to_string(),
            t.dim(),
        )));
        return;
    }
    out.extend(kept_lines(
        kept,
        "when this D-Mail arrived, these changes were already on disk:",
        None,
        200,
        t,
    ));
}
