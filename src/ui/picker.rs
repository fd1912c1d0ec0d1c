//! The session picker: its state (the sessions, the selection), its update
//! and its draw. Drawing and clicks share `first_shown`, so a click lands on
//! the row it was drawn on even when the list is scrolled.

use ratatui::layout::{Rect, Size};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::sources::SessionSummary;
use crate::text::{sanitize_line, truncate};

use super::geometry::offset;
use super::geometry::{self, picker_list_area};
use super::msg::{Action, Effect};
use super::theme::Theme;

#[derive(Debug, Clone)]
pub struct Picker {
    pub sessions: Vec<SessionSummary>,
    pub sel: usize,
}

/// First session drawn when `sel` is selected in a list `h` rows high.
pub fn first_shown(sel: usize, h: usize) -> usize {
    sel.saturating_sub(h.saturating_sub(1))
}

impl Picker {
    /// A key or click on the picker.
    pub fn update(&mut self, action: Action, size: Size) -> Effect {
        let p = self;
        let n = p.sessions.len();
        match action {
            Action::Move(d) | Action::Wheel(d) => p.sel = offset(p.sel, d).min(n.saturating_sub(1)),
            Action::Page(d) => p.sel = offset(p.sel, d * 10).min(n.saturating_sub(1)),
            Action::Top => p.sel = 0,
            Action::Bottom => p.sel = n.saturating_sub(1),
            Action::Expand => {
                if let Some(s) = p.sessions.get(p.sel) {
                    return Effect::Open(s.dir.clone());
                }
            }
            Action::Click(pos) => {
                let list = geometry::picker_list_area(size);
                if list.contains(pos) {
                    let i = first_shown(p.sel, list.height as usize) + (pos.y - list.y) as usize;
                    if i < n {
                        p.sel = i;
                    }
                }
            }
            Action::Quit | Action::Back => return Effect::Quit,
            _ => {}
        }
        Effect::None
    }
}

pub fn draw(f: &mut Frame, p: &Picker, t: &Theme) {
    let size = f.area().as_size();
    let list = picker_list_area(size);
    let header = Rect::new(0, 0, size.width, 3.min(size.height));
    let w = size.width as usize;
    f.render_widget(
        Paragraph::new(vec![
            Line::from(vec![
                Span::styled(" worldline ", t.accent()),
                Span::styled("choose a session", t.bold()),
                Span::styled(
                    format!(
                        " · {}",
                        crate::text::count(p.sessions.len() as u64, "session")
                    ),
                    t.dim(),
                ),
            ]),
            Line::default(),
            Line::from(Span::styled(
                format!(
                    " {:<16}  {:>5}  {:>4}  {}",
                    "MODIFIED (UTC)", "LINES", "SUBS", "TITLE · ID"
                ),
                t.dim(),
            )),
        ]),
        header,
    );
    let h = list.height as usize;
    let first = first_shown(p.sel, h);
    let mut lines = Vec::new();
    for (i, s) in p.sessions.iter().enumerate().skip(first).take(h) {
        let text = format!(
            " {:<16}  {:>5}  {:>4}  {} · {}",
            crate::export::format_time(s.modified as f64),
            s.world_lines,
            s.subagents,
            sanitize_line(s.title.as_deref().unwrap_or("(untitled)"), 40),
            sanitize_line(&s.id, 36)
        );
        let text = truncate(&text, w);
        let style = if i == p.sel {
            t.selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if p.sessions.is_empty() {
        lines.push(Line::from(Span::styled(" no sessions found", t.dim())));
    }
    f.render_widget(Paragraph::new(lines), list);
    let footer = Rect::new(0, size.height.saturating_sub(1), size.width, 1);
    f.render_widget(
        Paragraph::new(Span::styled(
            format!(" {}", super::keys::title_of(super::keys::PICKER)),
            t.dim(),
        )),
        footer,
    );
}
