//! The popups over the session screen, each with its update and its draw:
//! help (from the key table), the subagent list and the filter menu. Their
//! state is the `Overlay` variant that opens them.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::text::{sanitize_line, truncate};

use super::geometry::offset;
use super::msg::{Action, Effect};
use super::rows::RoleFilter;
use super::session::{FilterItem, Overlay, SessionScreen};
use super::view::{centered, plural};

impl SessionScreen {
    pub(super) fn update_subagents(&mut self, sel: usize, action: Action) -> Effect {
        let n = self
            .session
            .as_ref()
            .map_or(0, |s| s.agents.len().saturating_sub(1));
        match action {
            Action::Move(d) | Action::Wheel(d) => {
                self.overlay = Overlay::Subagents {
                    sel: offset(sel, d).min(n.saturating_sub(1)),
                }
            }
            Action::Top => self.overlay = Overlay::Subagents { sel: 0 },
            Action::Bottom => {
                self.overlay = Overlay::Subagents {
                    sel: n.saturating_sub(1),
                }
            }
            Action::Expand => {
                self.overlay = Overlay::None;
                self.enter_agent(sel + 1);
            }
            Action::Quit => return Effect::Quit,
            _ => self.overlay = Overlay::None,
        }
        Effect::None
    }

    /// The filter menu's choices, with what each would show.
    pub fn filter_items(&self) -> Vec<FilterItem> {
        use crate::model::Role;
        let mut items = vec![
            FilterItem {
                label: "steps (one row each)".into(),
                count: self.rows.step_count(),
                role: RoleFilter::All,
                every: false,
            },
            FilterItem {
                label: "every record".into(),
                count: self.rows.total,
                role: RoleFilter::All,
                every: true,
            },
        ];
        let Some(f) = self.family() else {
            return items;
        };
        let mut counts = [0usize; 4];
        for (li, file) in f.files.iter().enumerate() {
            let skip = f.lines.get(li).map_or(0, |l| l.shared);
            for m in file.records.iter().skip(skip) {
                let k = match m.role() {
                    Role::User if !super::rows::is_bookkeeping(m) => 0,
                    Role::Assistant => 1,
                    Role::Tool => 2,
                    Role::Checkpoint => 3,
                    _ => continue,
                };
                counts[k] += 1;
            }
        }
        let roles = [
            ("user messages", RoleFilter::User),
            ("assistant messages", RoleFilter::Assistant),
            ("tool results", RoleFilter::Tool),
            ("checkpoints", RoleFilter::Checkpoints),
        ];
        for ((label, role), count) in roles.into_iter().zip(counts) {
            items.push(FilterItem {
                label: label.into(),
                count,
                role,
                every: false,
            });
        }
        for (name, count) in self.rows.tools(f) {
            items.push(FilterItem {
                label: format!("tool {}", crate::text::sanitize_line(name, 30)),
                count: *count,
                role: RoleFilter::ToolName(name.clone()),
                every: false,
            });
        }
        items
    }

    /// j/k, the wheel and the page keys scroll the help; any other key
    /// (q too) closes it.
    pub(super) fn update_help(&mut self, scroll: u16, action: Action) -> Effect {
        let by = match action {
            Action::Move(d) | Action::Wheel(d) => d,
            Action::Page(d) => d * 10,
            _ => {
                self.overlay = Overlay::None;
                return Effect::None;
            }
        };
        let scroll = (scroll as isize + by).clamp(0, 60) as u16;
        self.overlay = Overlay::Help { scroll };
        Effect::None
    }

    pub(super) fn update_filter_menu(&mut self, sel: usize, action: Action) -> Effect {
        let items = self.filter_items();
        let n = items.len();
        match action {
            Action::Move(d) | Action::Wheel(d) => {
                self.overlay = Overlay::Filter {
                    sel: offset(sel, d).min(n.saturating_sub(1)),
                }
            }
            Action::Top => self.overlay = Overlay::Filter { sel: 0 },
            Action::Bottom => {
                self.overlay = Overlay::Filter {
                    sel: n.saturating_sub(1),
                }
            }
            Action::Expand => {
                self.overlay = Overlay::None;
                if let Some(item) = items.into_iter().nth(sel) {
                    self.filter.role = item.role;
                    self.filter.every = item.every;
                    self.refilter();
                    self.status = Some(format!("showing {} ({})", item.label, item.count));
                }
            }
            Action::Quit => return Effect::Quit,
            _ => self.overlay = Overlay::None,
        }
        Effect::None
    }
}

pub fn draw_help(f: &mut Frame, app: &SessionScreen, scroll: u16) {
    let t = &app.theme;
    let area = centered(f.area(), 86, 40);
    let (_, hidden) = super::keys::footer_where(f.area().width as usize, |b| app.offers(b));
    let inner = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    // Where the session is: what `worldline send`, `tree` and a second
    // `worldline` take (a demo's lives in a temporary directory).
    if let Some(s) = &app.session {
        lines.push(Line::from(vec![
            Span::styled(" Session ", t.bold()),
            Span::raw(crate::text::sanitize_path(&s.dir)),
        ]));
        lines.push(Line::default());
    }
    for b in super::keys::TABLE
        .iter()
        .filter(|b| !b.keys.is_empty() && app.offers(b))
    {
        // `·` marks what the footer has no room for; one row a key, so the
        // keys stay a table however narrow the screen.
        let off_footer = b.footer.is_some_and(|(label, _)| hidden.contains(&label));
        let what = crate::text::truncate(b.what, inner.saturating_sub(16));
        lines.push(Line::from(vec![
            Span::styled(if off_footer { "·" } else { " " }, t.accent()),
            Span::styled(format!("{:<14}", b.keys), t.bold()),
            Span::raw(what),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled(format!(" {:<14}", "mouse"), t.bold()),
        Span::raw("wheel scrolls, click selects a row or a map track"),
    ]));
    if !hidden.is_empty() {
        lines.push(Line::from(Span::styled(
            "· not in the footer at this width",
            t.dim(),
        )));
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled(" Map ", t.bold()),
        Span::raw(
            "one track per world line, oldest first, in written order: ━ its own records, \
             ⚑N checkpoints, ┗ where it left the line above, ✉ a D-Mail sent (✗ refused), \
             ◆ current head, ┫ abandoned, ⊜ compaction, ∅ /clear, ⇲ a subagent; the arc \
             joins a D-Mail's sender to the checkpoint it went back to.",
        ),
    ]));
    lines.push(Line::from(vec![
        Span::styled(" Rows ", t.bold()),
        Span::raw(
            "one per step (a checkpoint to the next): ⚑ gutter, what it did, tools ✓/✗, tokens, \
             time; ▸ unfolds. Lanes keep their column; each is named at its tip.",
        ),
    ]));
    lines.push(Line::from(vec![
        Span::styled(" Divergence N.ppphhh ", t.bold()),
        Span::raw(
            "N = D-Mails between α and this line, ppp = per mille of its parent left behind, \
             hhh = fingerprint of the D-Mail. None for compaction or /clear.",
        ),
    ]));
    let p = Paragraph::new(lines)
        .block(Block::bordered().title(format!(
            " help — {} ",
            super::keys::title_of(super::keys::HELP)
        )))
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

pub fn draw_filter_menu(f: &mut Frame, app: &SessionScreen, sel: usize) {
    let t = &app.theme;
    let items = app.filter_items();
    let h = (items.len() as u16 + 2).min(f.area().height.saturating_sub(2));
    let area = centered(f.area(), 50, h);
    let visible = h.saturating_sub(2) as usize;
    let first = sel.saturating_sub(visible.saturating_sub(1));
    let mut lines = Vec::new();
    for (i, it) in items.iter().enumerate().skip(first).take(visible) {
        let current = it.role == app.filter.role && it.every == app.filter.every;
        let text = format!(
            " {} {:<34}{:>8}",
            if current { '●' } else { ' ' },
            truncate(&it.label, 34),
            it.count
        );
        let style = if i == sel { t.selected() } else { Style::new() };
        lines.push(Line::from(Span::styled(text, style)));
    }
    let p = Paragraph::new(lines).block(Block::bordered().title(format!(
        " show — {} ",
        super::keys::title_of(super::keys::MENU)
    )));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}

pub fn draw_subagents(f: &mut Frame, app: &SessionScreen, sel: usize) {
    let t = &app.theme;
    let Some(s) = &app.session else { return };
    let n = s.agents.len().saturating_sub(1) as u16;
    let area = centered(f.area(), 70, n + 4);
    let mut lines = Vec::new();
    for (i, a) in s.agents.iter().enumerate().skip(1) {
        let m = a.meta.clone().unwrap_or_default();
        // What the session doesn't say is left out, not shown as `(?) ""`.
        let short = crate::worldline::SubagentMeta {
            status: None,
            description: m.description.as_deref().map(|d| sanitize_line(d, 30)),
            ..m.clone()
        };
        let text = format!(
            " {} · {} world line{} {}",
            crate::export::subagent_words(&short),
            a.family.lines.len(),
            plural(a.family.lines.len()),
            sanitize_line(m.status.as_deref().unwrap_or(""), 10)
        );
        let style = if i - 1 == sel {
            t.selected()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    let p = Paragraph::new(lines).block(Block::bordered().title(format!(
        " subagents — {} ",
        super::keys::title_of(super::keys::MENU)
    )));
    f.render_widget(Clear, area);
    f.render_widget(p, area);
}
