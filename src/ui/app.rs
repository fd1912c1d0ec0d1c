//! The app: which screen is in front and the one door into the UI. Three
//! screens each own their state, update, draw and key table: the session
//! picker ([`Picker`]), the session screen ([`SessionScreen`], with its
//! popups) and the compare screen ([`super::compare::Screen`], opened over
//! the session screen and back to it). `update` routes a message to the
//! screen it belongs to; `prepare` does every disk read of the next frame;
//! `view::draw` draws the screen in front from prepared state. Tests and the
//! runtime reach the UI through this API only.

use std::sync::Arc;

use ratatui::layout::Size;

use crate::sources::SessionSummary;
use crate::worldline::map::Map;
use crate::worldline::{Family, RecordRef, Session};

use super::cache::Cache;
use super::compare;
use super::geometry::Areas;
use super::keys::Mode;
use super::rows::{Filter, RowModel};
use super::theme::Theme;

pub use super::msg::{Action, Denwa, Effect, Found, Live, Msg, SearchRequest};
pub use super::picker::Picker;
pub use super::session::{
    Anchor, FilterItem, Leap, LiveState, Overlay, SearchState, SessionScreen, LEAP,
};

/// The screen in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Choosing a session (before one is open).
    Picker,
    /// Waiting for the first snapshot of the session asked for.
    Loading,
    Session,
    Compare,
}

pub struct App {
    session: SessionScreen,
    picker: Option<Picker>,
    /// Over the session screen while open; the session screen under it
    /// keeps taking snapshots.
    compare: Option<compare::Screen>,
}

impl App {
    pub fn new(theme: Theme, follow: bool, size: Size) -> App {
        App {
            session: SessionScreen::new(theme, follow, size),
            picker: None,
            compare: None,
        }
    }

    /// Starts on the session picker.
    pub fn with_picker(mut self, sessions: Vec<SessionSummary>) -> App {
        self.picker = Some(Picker::new(sessions));
        self
    }

    /// The screen in front.
    pub fn screen(&self) -> Screen {
        if self.session.session.is_none() {
            if self.picker.is_some() {
                Screen::Picker
            } else {
                Screen::Loading
            }
        } else if self.compare.is_some() {
            Screen::Compare
        } else {
            Screen::Session
        }
    }

    /// How keys are read right now (which key table applies).
    pub fn mode(&self) -> Mode {
        match self.screen() {
            Screen::Compare => Mode::Compare,
            Screen::Picker => Mode::Picker,
            Screen::Session | Screen::Loading => self.session.mode(),
        }
    }

    pub fn update(&mut self, msg: impl Into<Msg>) -> Effect {
        match msg.into() {
            Msg::Input(a) => self.input(a),
            Msg::Resize(s) => {
                if let Some(c) = &mut self.compare {
                    c.resize(s);
                }
                self.session.update(Msg::Resize(s))
            }
            Msg::Live(l) => {
                let effect = self.session.update(Msg::Live(l));
                // The compare screen follows the same session's snapshots.
                if let (Some(c), Some(s)) = (&mut self.compare, &self.session.session) {
                    if c.session_dir() == s.dir {
                        c.set_session(s.clone());
                    } else {
                        self.compare = None;
                    }
                }
                effect
            }
            other => self.session.update(other),
        }
    }

    /// Input goes to the screen in front.
    fn input(&mut self, action: Action) -> Effect {
        match self.screen() {
            Screen::Picker => {
                if matches!(action, Action::Help) {
                    self.session.status = Some(super::keys::title_of(super::keys::PICKER));
                    return Effect::None;
                }
                match &mut self.picker {
                    Some(p) => p.update(action, self.session.size),
                    None => Effect::None,
                }
            }
            Screen::Compare => {
                let Some(c) = &mut self.compare else {
                    return Effect::None;
                };
                match c.update(action) {
                    compare::Outcome::Stay => Effect::None,
                    compare::Outcome::Close => {
                        self.compare = None;
                        Effect::None
                    }
                    compare::Outcome::Quit => Effect::Quit,
                }
            }
            Screen::Loading | Screen::Session => {
                if matches!(action, Action::Compare) && self.session.overlay == Overlay::None {
                    self.compare = self.session.compare_screen();
                    return Effect::None;
                }
                self.session.update(Msg::Input(action))
            }
        }
    }

    /// Reads from disk what the next frame shows; drawing reads nothing.
    pub fn prepare(&mut self) {
        match &mut self.compare {
            Some(c) if self.session.session.is_some() => c.prepare(),
            _ => self.session.prepare(),
        }
    }

    /// Says `msg` on the status line.
    pub fn say(&mut self, msg: String) {
        self.session.status = Some(msg);
    }

    /// A key press clears the last status message (not while typing a
    /// search, whose prompt is on the status line).
    pub fn key_pressed(&mut self) {
        if self.session.search.input.is_none() {
            self.session.status = None;
        }
    }

    // What the screens hold, read-only: for drawing and for tests.

    pub fn session_screen(&self) -> &SessionScreen {
        &self.session
    }

    pub fn picker(&self) -> Option<&Picker> {
        self.picker.as_ref()
    }

    /// The compare screen, when open.
    pub fn compare_screen(&self) -> Option<&compare::Screen> {
        self.compare.as_ref()
    }

    pub fn theme(&self) -> &Theme {
        &self.session.theme
    }

    pub fn size(&self) -> Size {
        self.session.size
    }

    /// The session shown (the newest snapshot).
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.session.session.as_ref()
    }

    pub fn status(&self) -> Option<&str> {
        self.session.status.as_deref()
    }

    pub fn rows(&self) -> &RowModel {
        &self.session.rows
    }

    /// Which rows are shown (steps or every record, a role).
    pub fn filter(&self) -> &Filter {
        &self.session.filter
    }

    pub fn map(&self) -> &Map {
        &self.session.map
    }

    /// Visible position of the selected row.
    pub fn cursor(&self) -> usize {
        self.session.list.cursor()
    }

    /// Visible position of the first row drawn.
    pub fn scroll(&self) -> usize {
        self.session.list.scroll()
    }

    /// The selected world line.
    pub fn focus(&self) -> usize {
        self.session.focus
    }

    /// The agent shown (0: the main agent).
    pub fn agent(&self) -> usize {
        self.session.agent
    }

    pub fn overlay(&self) -> &Overlay {
        &self.session.overlay
    }

    pub fn search(&self) -> &SearchState {
        &self.session.search
    }

    pub fn live(&self) -> LiveState {
        self.session.live
    }

    pub fn follow(&self) -> bool {
        self.session.follow
    }

    /// The detail pane takes the whole body area.
    pub fn expanded(&self) -> bool {
        self.session.expanded
    }

    pub fn detail_scroll(&self) -> u16 {
        self.session.detail_scroll
    }

    /// A new world line being shown while following.
    pub fn leap(&self) -> Option<Leap> {
        self.session.leap
    }

    /// An accepted D-Mail whose world line has not appeared yet.
    pub fn pending_jump(&self) -> Option<&super::compose::PendingJump> {
        self.session.pending_jump.as_ref()
    }

    /// What was read for drawing.
    pub fn cache(&self) -> &Cache {
        &self.session.cache
    }

    pub fn selected(&self) -> Option<RecordRef> {
        self.session.selected()
    }

    pub fn detail_record(&self) -> Option<RecordRef> {
        self.session.detail_record()
    }

    pub fn dmail_record(&self) -> Option<RecordRef> {
        self.session.dmail_record()
    }

    pub fn family(&self) -> Option<&Family> {
        self.session.family()
    }

    pub fn areas(&self) -> Areas {
        self.session.areas()
    }

    pub fn filter_items(&self) -> Vec<FilterItem> {
        self.session.filter_items()
    }

    pub fn shown_rows(&self, row: usize) -> std::ops::Range<usize> {
        self.session.shown_rows(row)
    }

    // Settings the runtime (and tests) give the session screen.

    /// The session's work dir, shown in the header.
    pub fn set_work_dir(&mut self, dir: Option<String>) {
        self.session.work_dir = dir;
    }

    pub fn set_follow(&mut self, on: bool) {
        self.session.follow = on;
    }

    /// Snapshots that only append records extend the rows and map when
    /// true (the default); false rebuilds them (tests compare the two).
    /// How long a new world line stays shown while following ([`LEAP`]).
    pub fn set_leap_time(&mut self, d: std::time::Duration) {
        self.session.leap_time = d;
    }

    pub fn set_incremental(&mut self, on: bool) {
        self.session.incremental = on;
    }
}
