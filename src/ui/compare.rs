//! The compare screen: two world lines side by side from where they part
//! (`c` on the session screen). A screen of its own: it owns its state
//! (the pair, the comparison, the selected row and pane, an opened step),
//! its update, its key table ([`keys::COMPARE`], which feeds its keys, its
//! help and its footer) and its drawing. All disk reads happen in [`Screen::prepare`]
//! (the comparison, an opened step's bodies); `draw` reads prepared state.
//! Live: a snapshot that grew either line makes `prepare` compare again, so
//! a growing line extends its pane.

use std::sync::Arc;

use ratatui::layout::{Constraint, Layout, Rect, Size};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::export::compare::{calls_words, file_words, fork_words, step_words};
use crate::export::diff::{self, Kind};
use crate::model::Role;
use crate::text::{sanitize_line, truncate, width};
use crate::worldline::compare::{compare, default_pair, Comparison, LineSummary, Outcome as Done};
use crate::worldline::Session;

use super::app::Action;
use super::keys::{self, COMPARE};
use super::pane::ListPane;
use super::theme::Theme;

/// What an update asks of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Stay,
    /// Back to the session screen.
    Close,
    Quit,
}

/// One prepared line of an opened step.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DetailLine {
    kind: LineKind,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Head,
    Text,
    Dim,
    Add,
    Del,
    Hunk,
    Error,
}

/// An opened step: which, and its lines once `prepare` read them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opened {
    side: usize,
    step: usize,
    lines: Option<Vec<DetailLine>>,
    scroll: u16,
}

#[derive(Debug, Clone)]
pub struct Screen {
    agent: usize,
    pair: [usize; 2],
    session: Arc<Session>,
    cmp: Option<Comparison>,
    error: Option<String>,
    /// What `cmp` was computed from: the pair and both lines' lengths.
    stamp: Option<([usize; 2], [usize; 2], usize)>,
    /// Selected row (0 is the shared part, then the aligned steps): one
    /// list for both panes, which move together.
    list: ListPane,
    pane: usize,
    opened: Option<Opened>,
    help: bool,
    size: Size,
}

impl Screen {
    /// The screen on `session`'s agent `agent`, world lines `a` and `b`,
    /// on the first step after their fork.
    pub fn new(session: Arc<Session>, agent: usize, a: usize, b: usize, size: Size) -> Screen {
        let mut s = Screen::bare(session, agent, a, b, size);
        s.list.set_cursor(1);
        s
    }

    fn bare(session: Arc<Session>, agent: usize, a: usize, b: usize, size: Size) -> Screen {
        Screen {
            agent,
            pair: [a, b],
            session,
            cmp: None,
            error: None,
            stamp: None,
            list: ListPane::default(),
            pane: 1,
            opened: None,
            help: false,
            size,
        }
    }

    /// The default pair around world line `focus`: its parent and it.
    pub fn around(
        session: Arc<Session>,
        agent: usize,
        focus: usize,
        size: Size,
    ) -> Result<Screen, String> {
        let f = &session
            .agents
            .get(agent)
            .ok_or_else(|| format!("no agent {agent}"))?
            .family;
        let (a, b) = default_pair(f, Some(focus)).map_err(|e| e.to_string())?;
        Ok(Screen::new(session.clone(), agent, a, b, size))
    }

    /// The two world lines compared, left pane first.
    pub fn pair(&self) -> (usize, usize) {
        (self.pair[0], self.pair[1])
    }

    /// The comparison shown (after `prepare`).
    pub fn comparison(&self) -> Option<&Comparison> {
        self.cmp.as_ref()
    }

    /// The active pane: 0 left, 1 right.
    pub fn pane(&self) -> usize {
        self.pane
    }

    /// The selected row: 0 the shared part, then one per aligned step.
    pub fn row(&self) -> usize {
        self.list.cursor()
    }

    /// Whether a step is open.
    pub fn step_open(&self) -> bool {
        self.opened.is_some()
    }

    pub fn session_dir(&self) -> &std::path::Path {
        &self.session.dir
    }

    /// A new snapshot of the same session: compared again in `prepare`
    /// when either line changed.
    pub fn set_session(&mut self, s: Arc<Session>) {
        self.session = s;
    }

    pub fn resize(&mut self, size: Size) {
        self.size = size;
        self.keep_in_view();
    }

    fn lens(&self) -> Option<([usize; 2], usize)> {
        let f = &self.session.agents.get(self.agent)?.family;
        Some((
            [f.line_len(self.pair[0]), f.line_len(self.pair[1])],
            f.lines.len(),
        ))
    }

    /// Compares (again) when stale, and reads an opened step's bodies.
    pub fn prepare(&mut self) {
        let now = self.lens().map(|(l, n)| (self.pair, l, n));
        if now != self.stamp {
            self.stamp = now;
            match compare(&self.session, self.agent, self.pair[0], self.pair[1]) {
                Ok(c) => {
                    self.cmp = Some(c);
                    self.error = None;
                }
                Err(e) => {
                    self.cmp = None;
                    self.error = Some(e.to_string());
                }
            }
            self.list
                .select(self.list.cursor(), self.rows(), self.list_height());
            if let Some(o) = &mut self.opened {
                o.lines = None;
            }
        }
        if let Some(o) = &self.opened {
            if o.lines.is_none() {
                let lines = self.read_step(o.side, o.step);
                if let Some(o) = &mut self.opened {
                    o.lines = Some(lines);
                }
            }
        }
    }

    /// Rows of the step list: the shared part, then the aligned steps.
    fn rows(&self) -> usize {
        1 + self.cmp.as_ref().map_or(0, |c| c.rows.len())
    }

    fn list_height(&self) -> usize {
        layout(self.size).steps.height.max(1) as usize
    }

    fn keep_in_view(&mut self) {
        self.list.keep_in_view(self.rows(), self.list_height());
    }

    /// The step of `side` on the selected row.
    fn step_at(&self, side: usize) -> Option<usize> {
        let c = self.cmp.as_ref()?;
        let r = c.rows.get(self.list.cursor().checked_sub(1)?)?;
        if side == 0 {
            r.a
        } else {
            r.b
        }
    }

    pub fn update(&mut self, action: Action) -> Outcome {
        if self.help {
            self.help = false;
            return match action {
                Action::Quit => Outcome::Quit,
                _ => Outcome::Stay,
            };
        }
        if let Some(o) = &mut self.opened {
            match action {
                Action::Move(d) | Action::Wheel(d) => {
                    o.scroll = super::geometry::offset(o.scroll as usize, d) as u16
                }
                Action::Page(d) => {
                    o.scroll = super::geometry::offset(o.scroll as usize, d * 10) as u16
                }
                Action::Quit => return Outcome::Quit,
                Action::Help => self.help = true,
                _ => self.opened = None,
            }
            return Outcome::Stay;
        }
        let page = self.list_height();
        match action {
            Action::Move(d) | Action::Wheel(d) => self.list.move_by(d, self.rows(), page),
            Action::Page(d) => self.list.move_by(d * page as isize, self.rows(), page),
            Action::Top => self.list.select(0, self.rows(), page),
            Action::Bottom => self.list.select(usize::MAX, self.rows(), page),
            Action::SwitchLine(_) => self.pane = 1 - self.pane,
            Action::Mark(d) => self.other_line(d),
            Action::Expand => {
                if let Some(step) = self.step_at(self.pane) {
                    self.opened = Some(Opened {
                        side: self.pane,
                        step,
                        lines: None,
                        scroll: 0,
                    });
                }
            }
            Action::Back => return Outcome::Close,
            Action::Help => self.help = true,
            Action::Quit => return Outcome::Quit,
            _ => {}
        }
        Outcome::Stay
    }

    /// The active pane shows the previous or next world line (skipping the
    /// other pane's).
    fn other_line(&mut self, d: isize) {
        let Some(n) = self.lens().map(|(_, n)| n) else {
            return;
        };
        let mut l = self.pair[self.pane];
        for _ in 0..n {
            l = (l as isize + d).rem_euclid(n as isize) as usize;
            if l != self.pair[1 - self.pane] {
                break;
            }
        }
        if l != self.pair[1 - self.pane] {
            self.pair[self.pane] = l;
            self.list.reset();
            self.list.set_cursor(1);
        }
    }

    /// The lines of step `step` of `side`: each record's text, tool calls
    /// (edits and writes as diffs) and results.
    fn read_step(&self, side: usize, step: usize) -> Vec<DetailLine> {
        let mut out = Vec::new();
        let Some(c) = &self.cmp else { return out };
        let l = &c.lines[side];
        let Some(st) = l.steps.get(step) else {
            return out;
        };
        let Some(f) = self.session.agents.get(self.agent).map(|a| &a.family) else {
            return out;
        };
        let push =
            |out: &mut Vec<DetailLine>, kind, text: String| out.push(DetailLine { kind, text });
        for pos in st.records.clone().take(200) {
            let Some(r) = f.owner(l.line, pos) else {
                continue;
            };
            let Some(m) = f.record(r) else { continue };
            let note = matches!(
                m.marker().as_deref(),
                Some(crate::model::Marker::CheckpointNote(_))
            );
            if note || matches!(m.role(), Role::Checkpoint | Role::Usage) {
                if let Some(cp) = m.checkpoint() {
                    push(&mut out, LineKind::Dim, format!("⚑{cp}"));
                }
                continue;
            }
            let body = match self.session.body(r) {
                Ok(b) => b,
                Err(e) => {
                    push(
                        &mut out,
                        LineKind::Error,
                        format!("cannot read: {}", sanitize_line(&e.to_string(), 200)),
                    );
                    continue;
                }
            };
            let text = body.text();
            match m.role() {
                Role::Tool => {
                    let failed = crate::worldline::tools::result_failed(&body);
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    push(
                        &mut out,
                        if failed {
                            LineKind::Error
                        } else {
                            LineKind::Dim
                        },
                        format!(
                            "  ← {} {}",
                            if failed { "✗" } else { "✓" },
                            sanitize_line(first, 300)
                        ),
                    );
                    continue;
                }
                role => {
                    if !text.trim().is_empty() {
                        push(&mut out, LineKind::Head, role.as_str().to_string());
                        for t in text.lines().take(40) {
                            push(&mut out, LineKind::Text, sanitize_line(t, 400));
                        }
                    }
                }
            }
            for call in &body.tool_calls {
                let target = crate::worldline::tools::target(&call.name, &call.arguments)
                    .map(|t| format!(" {}", sanitize_line(&t, 200)))
                    .unwrap_or_default();
                push(
                    &mut out,
                    LineKind::Head,
                    format!("→ {}{target}", sanitize_line(&call.name, 40)),
                );
                for d in diff::of_call(&call.name, &call.arguments, 60) {
                    push(
                        &mut out,
                        LineKind::Dim,
                        format!(
                            "  {} {}{}",
                            d.path,
                            d.stat(),
                            if d.whole { " (whole file)" } else { "" }
                        ),
                    );
                    for line in d.lines {
                        let kind = match line.kind {
                            Kind::Add => LineKind::Add,
                            Kind::Del => LineKind::Del,
                            Kind::Hunk | Kind::Fold => LineKind::Hunk,
                            Kind::Context => LineKind::Text,
                        };
                        push(&mut out, kind, format!("  {}", line.unified()));
                    }
                }
            }
        }
        out
    }
}

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub title: Rect,
    pub heads: Rect,
    pub steps: Rect,
    pub files: Rect,
    pub footer: Rect,
}

/// Rows of the header of each pane and of the files strip.
const HEAD_ROWS: u16 = 4;
const FILE_ROWS: u16 = 4;

pub fn layout(size: Size) -> Areas {
    let area = Rect::new(0, 0, size.width, size.height);
    let small = size.height < 16;
    let [title, heads, steps, files, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(if small { 2 } else { HEAD_ROWS + 1 }),
        Constraint::Min(1),
        Constraint::Length(if small { 1 } else { FILE_ROWS + 1 }),
        Constraint::Length(1),
    ])
    .areas(area);
    Areas {
        title,
        heads,
        steps,
        files,
        footer,
    }
}

/// The two halves of a row and the column between them.
fn halves(area: Rect) -> (Rect, Rect, Rect) {
    let [a, gap, b] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(3),
        Constraint::Fill(1),
    ])
    .areas(area);
    (a, gap, b)
}

/// The footer for `width` columns from [`COMPARE`].
pub fn footer(width: usize) -> String {
    keys::footer_of(COMPARE, width, |_| true).0
}

fn fit(s: &str, cols: usize) -> String {
    let s = truncate(s, cols);
    let pad = cols.saturating_sub(width(&s));
    format!("{s}{}", " ".repeat(pad))
}

fn head_lines<'a>(l: &LineSummary, t: &Theme, cols: usize) -> Vec<Line<'a>> {
    let label = match &l.branch {
        Some(b) => format!("branch {}", sanitize_line(b, 30)),
        None => sanitize_line(&l.label, 40),
    };
    // Bodies past the read limit, or that could not be read, are not in
    // the counts or the files: say so rather than show less as all.
    let unread = match l.unread {
        0 => String::new(),
        1 => " · 1 record not read".to_string(),
        n => format!(" · {n} records not read"),
    };
    let stats = format!(
        "{} step{} · calls {} · {} · {}{unread}",
        l.steps.len(),
        if l.steps.len() == 1 { "" } else { "s" },
        calls_words(l),
        l.tokens
            .map_or("— tokens".into(), |t| format!("{t} tokens")),
        l.duration_s
            .map_or("—".into(), crate::export::compare::duration)
    );
    let state = l.state.as_str();
    vec![
        Line::from(vec![
            Span::styled(format!("{} ", l.name), t.line(l.line).patch(t.bold())),
            Span::raw(truncate(&label, cols.saturating_sub(12 + state.len()))),
            Span::styled(format!("  {state}"), t.dim()),
        ]),
        Line::from(Span::styled(truncate(&l.reason, cols), t.dmail())),
        Line::from(truncate(&stats, cols)),
        Line::from(Span::styled(
            truncate(
                &format!(
                    "ended: {}",
                    l.last_text
                        .as_deref()
                        .map_or("—".to_string(), |x| format!("\"{x}\""))
                ),
                cols,
            ),
            t.dim(),
        )),
    ]
}

pub fn draw(f: &mut Frame, s: &Screen, t: &Theme, status: Option<&str>) {
    let a = layout(f.area().as_size());
    let Some(c) = &s.cmp else {
        let msg = s.error.as_deref().unwrap_or("comparing…");
        f.render_widget(
            Paragraph::new(format!(" compare: {}", sanitize_line(msg, 200))),
            a.title,
        );
        f.render_widget(Paragraph::new(footer(a.footer.width as usize)), a.footer);
        return;
    };
    let [la, lb] = &c.lines;
    // Title: the pair and where they part.
    let title = Line::from(vec![
        Span::styled(" compare ", t.bold()),
        Span::styled(la.name.clone(), t.line(la.line).patch(t.bold())),
        Span::raw(" ↔ "),
        Span::styled(lb.name.clone(), t.line(lb.line).patch(t.bold())),
        Span::styled(
            format!(
                "  {}",
                truncate(&fork_words(c), (a.title.width as usize).saturating_sub(14))
            ),
            t.dim(),
        ),
    ]);
    f.render_widget(Paragraph::new(title), a.title);
    // Pane heads.
    let (ha, hg, hb) = halves(a.heads);
    let rows = a.heads.height.saturating_sub(1) as usize;
    for (side, (area, l)) in [(ha, la), (hb, lb)].into_iter().enumerate() {
        let mut lines = head_lines(l, t, area.width as usize);
        lines.truncate(rows);
        let style = if side == s.pane {
            Style::new()
        } else {
            t.dim()
        };
        f.render_widget(Paragraph::new(lines).style(style), area);
    }
    let sep: Vec<Line> = (0..rows).map(|_| Line::from(" │ ")).collect();
    f.render_widget(Paragraph::new(sep).style(t.dim()), hg);
    let rule = Rect::new(
        a.heads.x,
        a.heads.bottom().saturating_sub(1),
        a.heads.width,
        1,
    );
    f.render_widget(
        Paragraph::new("─".repeat(a.heads.width as usize)).style(t.dim()),
        rule,
    );
    // Steps, aligned.
    let (sa, _, _) = halves(a.steps);
    let half = sa.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    let h = a.steps.height as usize;
    for row in s.list.shown(s.rows(), h) {
        let selected = row == s.list.cursor();
        if row == 0 {
            let text = format!("≡ {}", fork_words(c));
            let style = if selected { t.selected() } else { t.dim() };
            lines.push(Line::from(Span::styled(
                fit(&text, a.steps.width as usize),
                style,
            )));
            continue;
        }
        let Some(r) = c.rows.get(row - 1) else { break };
        let mark = match (r.a, r.b, r.same) {
            (_, _, true) => "=",
            (Some(_), Some(_), false) => "≠",
            _ => " ",
        };
        let cell = |side: usize, idx: Option<usize>| {
            let l = &c.lines[side];
            let text = idx
                .and_then(|i| l.steps.get(i))
                .map(|st| step_words(st, half))
                .unwrap_or_default();
            let failed = idx
                .and_then(|i| l.steps.get(i))
                .is_some_and(|st| st.calls.iter().any(|c| c.outcome == Done::Failed));
            let mut style = if failed { t.error() } else { Style::new() };
            if selected && side == s.pane {
                style = t.selected();
            } else if selected {
                style = style.patch(t.bold());
            }
            Span::styled(fit(&text, half), style)
        };
        let mark_style = if r.same { t.dim() } else { t.accent() };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), mark_style),
            cell(0, r.a),
            Span::styled(" │ ", t.dim()),
            cell(1, r.b),
        ]));
    }
    f.render_widget(Paragraph::new(lines), a.steps);
    // Files strip.
    draw_files(f, c, t, a.files);
    let foot = match status {
        Some(msg) => format!(" {}", sanitize_line(msg, 200)),
        None => footer(a.footer.width as usize),
    };
    f.render_widget(Paragraph::new(foot).style(t.dim()), a.footer);
    if let Some(o) = &s.opened {
        draw_step(f, s, o, t);
    }
    if s.help {
        draw_help(f, t);
    }
}

fn draw_files(f: &mut Frame, c: &Comparison, t: &Theme, area: Rect) {
    if area.height == 0 {
        return;
    }
    let cols = area.width as usize;
    let words = "── files written or edited, commands run (a revert undoes none of them) ";
    let rule = Line::from(Span::styled(
        format!(
            "{}{}",
            truncate(words, cols),
            "─".repeat(cols.saturating_sub(width(words)))
        ),
        t.dim(),
    ));
    let mut lines = vec![rule];
    for l in &c.lines {
        let mut spans = vec![Span::styled(
            format!(" {} ", l.name),
            t.line(l.line).patch(t.bold()),
        )];
        if l.files.is_empty() {
            spans.push(Span::styled("no files", t.dim()));
        }
        for (k, file) in l.files.iter().enumerate() {
            if k > 0 {
                spans.push(Span::raw(", "));
            }
            let both = c.files_both.contains(&file.path);
            let style = if both {
                t.error()
            } else if file.failed {
                t.dim()
            } else {
                Style::new()
            };
            let mark = if both { "‼ " } else { "" };
            spans.push(Span::styled(format!("{mark}{}", file_words(file)), style));
        }
        let ran: Vec<String> = l
            .commands
            .iter()
            .map(|c| format!("$ {} {}", sanitize_line(&c.command, 40), c.outcome.glyph()))
            .collect();
        if !ran.is_empty() {
            spans.push(Span::styled("  ·  ", t.dim()));
            spans.push(Span::raw(ran.join("  ")));
        }
        lines.push(Line::from(spans));
    }
    let both = if c.files_both.is_empty() {
        Line::from(Span::styled(" both: no file", t.dim()))
    } else {
        let names: Vec<String> = c.files_both.iter().map(|p| sanitize_line(p, 60)).collect();
        Line::from(vec![
            Span::styled(" both: ", t.error()),
            Span::raw(names.join(", ")),
        ])
    };
    lines.push(both);
    lines.truncate(area.height as usize);
    // One row per line when short on room: the rule goes first.
    if area.height < 3 {
        lines.remove(0);
    }
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            if width(&text) > cols {
                let mut out = Vec::new();
                let mut used = 0;
                for sp in l.spans {
                    let w = width(&sp.content);
                    if used + w > cols {
                        let cut = truncate(&sp.content, cols.saturating_sub(used));
                        out.push(Span::styled(cut, sp.style));
                        break;
                    }
                    used += w;
                    out.push(sp);
                }
                Line::from(out)
            } else {
                l
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), area);
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw_step(f: &mut Frame, s: &Screen, o: &Opened, t: &Theme) {
    let area = centered(
        f.area(),
        f.area().width.saturating_sub(4),
        f.area().height.saturating_sub(2),
    );
    let Some(c) = &s.cmp else { return };
    let l = &c.lines[o.side];
    let st = l.steps.get(o.step);
    let title = format!(
        " {} step {} of {}{} · j/k scroll · Esc closes ",
        l.name,
        o.step + 1,
        l.steps.len(),
        st.and_then(|s| s.checkpoint)
            .map(|c| format!(" (⚑{c})"))
            .unwrap_or_default()
    );
    let lines: Vec<Line> = match &o.lines {
        None => vec![Line::from("reading…")],
        Some(v) => v
            .iter()
            .map(|d| {
                let style = match d.kind {
                    LineKind::Head => t.bold(),
                    LineKind::Text => Style::new(),
                    LineKind::Dim => t.dim(),
                    LineKind::Add => t.line(3),
                    LineKind::Del => t.error(),
                    LineKind::Hunk => t.accent(),
                    LineKind::Error => t.error(),
                };
                Line::from(Span::styled(d.text.clone(), style))
            })
            .collect(),
    };
    let p = Paragraph::new(lines)
        .block(Block::bordered().title(title))
        .wrap(Wrap { trim: false })
        .scroll((o.scroll, 0));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

fn draw_help(f: &mut Frame, t: &Theme) {
    let area = centered(f.area(), 76, 16);
    let mut lines: Vec<Line> = COMPARE
        .iter()
        .filter(|b| !b.keys.is_empty())
        .map(|b| {
            Line::from(vec![
                Span::styled(format!(" {:<12}", b.keys), t.bold()),
                Span::raw(b.what),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        " = the same on both · ≠ both did something else · ‼ a file both wrote",
        t.dim(),
    )));
    let p = Paragraph::new(lines)
        .block(Block::bordered().title(" compare — keys · any key closes "))
        .wrap(Wrap { trim: false });
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}
