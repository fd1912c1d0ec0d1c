//! The session picker: its state (the sessions, the selection), its update
//! and its draw. Drawing and clicks share one [`ListPane`], so a click lands
//! on the row it was drawn on even when the list is scrolled.

use ratatui::layout::{Rect, Size};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::sources::SessionSummary;
use crate::text::{sanitize_line, truncate};

use super::geometry::{self, picker_list_area};
use super::msg::{Action, Effect};
use super::pane::ListPane;
use super::theme::Theme;

#[derive(Debug, Clone)]
pub struct Picker {
    sessions: Vec<SessionSummary>,
    list: ListPane,
}

impl Picker {
    pub fn new(sessions: Vec<SessionSummary>) -> Picker {
        Picker {
            sessions,
            list: ListPane::default(),
        }
    }

    /// Position of the selected session.
    pub fn selected(&self) -> usize {
        self.list.cursor()
    }

    /// A key or click on the picker.
    pub fn update(&mut self, action: Action, size: Size) -> Effect {
        let n = self.sessions.len();
        let list = geometry::picker_list_area(size);
        let h = list.height as usize;
        match action {
            Action::Move(d) | Action::Wheel(d) => self.list.move_by(d, n, h),
            Action::Page(d) => self.list.move_by(d * h.max(1) as isize, n, h),
            Action::Top => self.list.select(0, n, h),
            Action::Bottom => self.list.select(usize::MAX, n, h),
            Action::Expand => {
                if let Some(s) = self.sessions.get(self.list.cursor()) {
                    return Effect::Open(s.dir.clone());
                }
            }
            Action::Click(pos) if list.contains(pos) => {
                if let Some(i) = self.list.at((pos.y - list.y) as usize, n) {
                    self.list.select(i, n, h);
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
    let mut lines = Vec::new();
    for i in p.list.shown(p.sessions.len(), h) {
        let s = &p.sessions[i];
        let text = format!(
            " {:<16}  {:>5}  {:>4}  {} · {}",
            crate::export::format_time(s.modified as f64),
            s.world_lines,
            s.subagents,
            sanitize_line(s.title.as_deref().unwrap_or("(untitled)"), 40),
            sanitize_line(&s.id, 36)
        );
        let text = truncate(&text, w);
        let style = if i == p.list.cursor() {
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
