//! The session screen: one session's map, rows and detail, with its popups
//! (help, subagents, filter menu, D-Mail compose) and its search. It owns
//! its state and its `update(msg) -> Effect`; only input ever reaches a
//! popup. Disk reads happen only in `prepare` (bodies of visible rows, what
//! a revert keeps) and on `e`/`E`, never in drawing (`view.rs` draws it).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::layout::{Position, Size};

use crate::worldline::map::{Appended, Map};
use crate::worldline::{RecordRef, Session};

use super::cache::Cache;
use super::compose::{self, Compose, PendingJump};
use super::geometry::{self, offset};
use super::msg::{Action, Denwa, Effect, Found, Live, Msg, SearchRequest};
use super::pane::ListPane;
use super::rows::{Filter, RoleFilter, RowModel};
use super::theme::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveState {
    /// Waiting for the first snapshot.
    Loading,
    Static,
    Live,
    Deleted,
}

/// A modal drawn over the main screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    None,
    /// The help, scrolled down by `scroll` lines (it outgrows 80×24).
    Help {
        scroll: u16,
    },
    Subagents {
        sel: usize,
    },
    /// The filter menu, at item `sel`.
    Filter {
        sel: usize,
    },
    Compose(Box<Compose>),
}

/// A new world line that appeared while following: shown (its first step
/// selected, its arc lit on the map) for a moment before following resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leap {
    pub line: usize,
    pub since: Instant,
}

/// How long a leap stays on screen before following resumes.
pub const LEAP: Duration = Duration::from_secs(4);

/// A status line built from the map's caption of a world line: a snapshot
/// that grows the line redraws it, so "5% new" never sits beside a header
/// that says 72 %.
#[derive(Clone, Debug)]
struct Caption {
    prefix: &'static str,
    line: usize,
    suffix: String,
    /// What the status line said (another message replaced it if it differs).
    shown: String,
    /// A leap's caption goes with the leap.
    with_leap: bool,
}

/// One choice of the filter menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterItem {
    pub label: String,
    /// Rows it shows (steps, records or matches).
    pub count: usize,
    pub role: RoleFilter,
    pub every: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SearchState {
    /// The query being typed (`Some` while the prompt is open).
    pub input: Option<String>,
    pub query: String,
    /// Matching records by owner: they stay right when rows move, and their
    /// order is written order.
    pub hits: BTreeSet<RecordRef>,
    /// The hit `n`/`N` last went to.
    pub at: Option<RecordRef>,
    pub running: bool,
    pub scanned: usize,
    pub total: usize,
    /// Results from an older search are dropped.
    pub generation: u64,
}

/// Where to go back to when leaving a subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub agent: usize,
    pub file: String,
    pub record: usize,
    pub focus_file: String,
}

/// The session screen's state. Read by `view.rs` (inside `ui`), reached
/// from outside through [`super::app::App`].
pub struct SessionScreen {
    pub(super) theme: Theme,
    pub(super) session: Option<Arc<Session>>,
    pub(super) work_dir: Option<String>,
    pub(super) rows: RowModel,
    /// The world-line map of the agent shown.
    pub(super) map: Map,
    pub(super) show_map: bool,
    /// A new world line being shown while following.
    pub(super) leap: Option<Leap>,
    /// How long a leap stays on screen ([`LEAP`]).
    pub(super) leap_time: Duration,
    /// A world line marked with `C` (agent, line): `c` compares it with the
    /// focused one.
    compare_mark: Option<(usize, usize)>,
    pub(super) agent: usize,
    /// The selected world line.
    pub(super) focus: usize,
    /// The rows' selection and scroll (visible positions).
    pub(super) list: ListPane,
    pub(super) filter: Filter,
    pub(super) follow: bool,
    pub(super) live: LiveState,
    pub(super) overlay: Overlay,
    /// Detail pane takes the whole body area.
    pub(super) expanded: bool,
    pub(super) detail_scroll: u16,
    pub(super) search: SearchState,
    pub(super) status: Option<String>,
    /// The status line when it shows a world line's caption, so it can be
    /// said again as the line grows (and dropped when its leap ends).
    caption: Option<Caption>,
    pub(super) size: Size,
    pub(super) cache: Cache,
    /// Snapshots that only append records extend the row model and map;
    /// false rebuilds them for every snapshot (tests compare the two).
    pub(super) incremental: bool,
    /// An accepted D-Mail: its world line gets selected when it appears.
    pub(super) pending_jump: Option<PendingJump>,
    back: Option<Anchor>,
    /// Sessions left for their forks, newest last (Esc goes back).
    pub(super) hops: Vec<super::hop::Hop>,
    /// The session asked for: snapshots of any other (a follower being
    /// stopped) are dropped.
    pub(super) want_session: Option<String>,
    pub(super) arriving: Option<super::hop::Arrival>,
}

impl SessionScreen {
    pub fn new(theme: Theme, follow: bool, size: Size) -> SessionScreen {
        SessionScreen {
            theme,
            session: None,
            work_dir: None,
            rows: RowModel::empty(0),
            map: Map::default(),
            show_map: true,
            leap: None,
            leap_time: LEAP,
            compare_mark: None,
            agent: 0,
            focus: 0,
            list: ListPane::default(),
            filter: Filter::default(),
            follow,
            live: LiveState::Loading,
            overlay: Overlay::None,
            expanded: false,
            detail_scroll: 0,
            search: SearchState::default(),
            status: None,
            caption: None,
            size,
            cache: Cache::default(),
            incremental: true,
            pending_jump: None,
            back: None,
            hops: Vec::new(),
            want_session: None,
            arriving: None,
        }
    }

    /// How keys are read on this screen right now.
    pub fn mode(&self) -> super::keys::Mode {
        use super::keys::Mode;
        match self.overlay {
            Overlay::Compose(_) => return Mode::Compose,
            Overlay::Help { .. } => return Mode::Help,
            Overlay::Filter { .. } | Overlay::Subagents { .. } => return Mode::Menu,
            Overlay::None => {}
        }
        if self.search.input.is_some() {
            Mode::SearchInput
        } else {
            Mode::Normal
        }
    }

    /// `C`: marks the focused world line for `c` (again: unmarks it).
    fn mark_for_compare(&mut self) {
        let name = super::theme::line_name(self.focus);
        if self.compare_mark == Some((self.agent, self.focus)) {
            self.compare_mark = None;
            self.status = Some(format!("{name} unmarked"));
        } else {
            self.compare_mark = Some((self.agent, self.focus));
            self.status = Some(format!(
                "{name} marked: c on another world line compares the two (C again unmarks)"
            ));
        }
    }

    /// The world line marked with `C`, if it is another of this agent's.
    pub fn compare_mark(&self) -> Option<usize> {
        let lines = self.family().map_or(0, |f| f.lines.len());
        match self.compare_mark {
            Some((agent, line)) if agent == self.agent && line < lines && line != self.focus => {
                Some(line)
            }
            _ => None,
        }
    }

    /// `c`: the compare screen on the marked line and the focused one, else
    /// the focused line and its parent; or why there is none (said on the
    /// status line).
    pub(super) fn compare_screen(&mut self) -> Option<super::compare::Screen> {
        let s = self.session.clone()?;
        let screen = match self.compare_mark() {
            Some(mark) => Ok(super::compare::Screen::new(
                s, self.agent, mark, self.focus, self.size,
            )),
            None => super::compare::Screen::around(s, self.agent, self.focus, self.size),
        };
        match screen {
            Ok(c) => Some(c),
            Err(e) => {
                self.status = Some(e);
                None
            }
        }
    }

    /// The selected record (its owner reference).
    pub fn selected(&self) -> Option<RecordRef> {
        self.rows.record_of(self.rows.row_at(self.list.cursor())?)
    }

    /// The record `d` sends a D-Mail to: the selected one, or for a folded
    /// step the checkpoint it belongs to (a line's first step may start
    /// with its D-Mail, after a shared checkpoint).
    pub fn dmail_record(&self) -> Option<RecordRef> {
        let r = self.selected()?;
        let row = self.rows.row_at(self.list.cursor())?;
        if !self.rows.is_step_head(row) || self.is_unfolded(row) {
            return Some(r);
        }
        let f = self.family()?;
        let file = f.files.get(r.line)?;
        let upto = r.record.min(file.records.len().checked_sub(1)?);
        let k = file
            .records
            .range(..=upto)
            .rposition(|m| *m.role() == crate::model::Role::Checkpoint)?;
        f.owner(r.line, k)
    }

    /// The record the detail pane shows: a folded step is read through its
    /// lead (its D-Mail, prompt or reply), anything else is itself.
    pub fn detail_record(&self) -> Option<RecordRef> {
        let row = self.rows.row_at(self.list.cursor())?;
        if self.rows.is_step_head(row) && !self.is_unfolded(row) {
            if let Some(r) = self
                .family()
                .and_then(|f| super::steps::lead(f, &self.rows, row))
            {
                return Some(r);
            }
        }
        self.selected()
    }

    pub fn family(&self) -> Option<&crate::worldline::Family> {
        Some(&self.session.as_ref()?.agents.get(self.agent)?.family)
    }

    /// Is record `r` (by owner) on world line `line`'s path?
    pub fn on_line(&self, line: usize, r: RecordRef) -> bool {
        let Some(f) = self.family() else { return false };
        f.owner(line, r.record) == Some(r)
    }

    /// Rows the map takes on this screen.
    pub fn map_height(&self) -> u16 {
        geometry::map_height(self.size, super::map::wanted_rows(&self.map), self.show_map)
    }

    /// The screen's regions (shared with drawing).
    pub fn areas(&self) -> geometry::Areas {
        geometry::areas(self.size, self.expanded, self.map_height())
    }

    fn graph_height(&self) -> usize {
        self.areas().graph.height.max(1) as usize
    }

    /// Selects visible position `pos` (clamped), follows the selection with
    /// the focus unless the record is on the focused world line.
    fn select(&mut self, pos: usize) {
        self.list.select(pos, self.rows.len(), self.graph_height());
        if let Some(r) = self.selected() {
            if !self.on_line(self.focus, r) {
                self.focus = r.line;
            }
        }
        self.detail_scroll = 0;
        self.keep_in_view();
    }

    /// Scrolls so the selection has a few rows of context above and below.
    fn keep_in_view(&mut self) {
        self.list.keep_in_view(self.rows.len(), self.graph_height());
    }

    pub(super) fn select_row(&mut self, row: usize) {
        let pos = self.rows.position_of(row);
        self.select(pos);
    }

    fn moved_by_hand(&mut self) {
        if self.follow {
            self.follow = false;
            self.status = Some("follow off (F turns it on)".into());
        }
    }

    pub fn update(&mut self, msg: impl Into<Msg>) -> Effect {
        match msg.into() {
            Msg::Input(a) => self.input(a),
            Msg::Resize(s) => {
                self.size = s;
                self.keep_in_view();
                Effect::None
            }
            Msg::Live(l) => {
                self.live_update(l);
                Effect::None
            }
            Msg::Search(f) => {
                self.found(f);
                Effect::None
            }
            Msg::DMail(Denwa::Probed { target, live }) => {
                if live {
                    self.overlay = Overlay::Compose(Box::new(Compose::new(target)));
                } else {
                    self.status = Some(compose::not_live(&target));
                }
                Effect::None
            }
            Msg::DMail(Denwa::Reply { request, reply }) => {
                self.dmail_reply(request, reply);
                Effect::None
            }
        }
    }

    fn live_update(&mut self, l: Live) {
        match l {
            Live::Snapshot(s) => {
                self.apply_snapshot(s);
                self.try_jump();
            }
            Live::Deleted => {
                self.live = LiveState::Deleted;
                self.status = Some("the session directory is gone; showing the last state".into());
            }
            Live::Error(e) => {
                self.status = Some(format!("live: {}", crate::text::sanitize_line(&e, 120)))
            }
        }
    }

    fn found(&mut self, f: Found) {
        match f {
            Found::Hits {
                generation,
                records,
            } => {
                if generation == self.search.generation {
                    let first = self.search.hits.is_empty();
                    self.search.hits.extend(records);
                    if first && !self.search.hits.is_empty() && self.session.is_some() {
                        // The user asked to see hits: following would
                        // carry the selection away from them.
                        self.moved_by_hand();
                        self.jump_hit(1);
                    }
                }
            }
            Found::Progress {
                generation,
                scanned,
                total,
            } => {
                if generation == self.search.generation {
                    self.search.scanned = scanned;
                    self.search.total = total;
                }
            }
            Found::Done { generation } => {
                if generation == self.search.generation {
                    self.search.running = false;
                    let n = self.search.hits.len();
                    let at = self
                        .search
                        .at
                        .map(|a| format!(" · hit {}/{n}", self.search.hits.range(..a).count() + 1))
                        .unwrap_or_default();
                    self.status = Some(format!(
                        "/{}: {n} match{}{at}",
                        crate::text::sanitize_line(&self.search.query, 40),
                        if n == 1 { "" } else { "es" }
                    ));
                }
            }
        }
    }

    /// What the user did; a popup, when open, takes it first.
    fn input(&mut self, action: Action) -> Effect {
        match &self.overlay {
            Overlay::None => {}
            Overlay::Help { scroll } => {
                let scroll = *scroll;
                return self.update_help(scroll, action);
            }
            Overlay::Subagents { sel } => {
                let sel = *sel;
                return self.update_subagents(sel, action);
            }
            Overlay::Filter { sel } => {
                let sel = *sel;
                return self.update_filter_menu(sel, action);
            }
            // Keys typed while composing never reach the list.
            Overlay::Compose(_) => return self.update_compose(action),
        }
        match action {
            Action::Move(d) => {
                self.moved_by_hand();
                self.select(offset(self.list.cursor(), d));
            }
            Action::Page(d) => {
                if self.expanded {
                    let h = self.areas().detail.height.max(2) as isize - 1;
                    self.detail_scroll = offset(self.detail_scroll as usize, d * h) as u16;
                } else {
                    self.moved_by_hand();
                    let h = self.graph_height() as isize;
                    self.select(offset(self.list.cursor(), d * h));
                }
            }
            Action::Top => {
                self.moved_by_hand();
                self.select(0);
            }
            Action::Bottom => self.select(self.rows.len().saturating_sub(1)),
            Action::Wheel(d) => {
                if self.expanded {
                    self.detail_scroll = offset(self.detail_scroll as usize, d) as u16;
                } else {
                    self.moved_by_hand();
                    self.select(offset(self.list.cursor(), d));
                }
            }
            Action::Click(p) => return self.click(p),
            Action::SwitchLine(d) => {
                self.moved_by_hand();
                self.switch_line(d);
            }
            Action::Expand => self.expand(),
            Action::Fold => self.fold(),
            Action::Every => {
                self.filter.every = !self.filter.every;
                self.filter.role = RoleFilter::All;
                self.refilter();
                self.status = Some(if self.filter.every {
                    "every record, bookkeeping included (a: back to steps)".into()
                } else {
                    "one row per step".into()
                });
            }
            Action::FilterMenu => {
                let sel = self
                    .filter_items()
                    .iter()
                    .position(|i| i.role == self.filter.role && i.every == self.filter.every)
                    .unwrap_or(0);
                self.overlay = Overlay::Filter { sel };
            }
            Action::MapToggle => {
                self.show_map = !self.show_map;
                self.keep_in_view();
            }
            Action::Error(d) => {
                self.moved_by_hand();
                self.jump_error(d);
            }
            Action::Mark(d) => {
                self.moved_by_hand();
                self.jump_mark(d);
            }
            Action::SearchOpen => self.search.input = Some(String::new()),
            Action::SearchChar(c) => {
                if let Some(q) = &mut self.search.input {
                    q.push(c);
                }
            }
            Action::SearchBackspace => {
                if let Some(q) = &mut self.search.input {
                    q.pop();
                }
            }
            Action::SearchSubmit => return self.submit_search(),
            Action::SearchCancel => {
                self.search.input = None;
                if self.search.running {
                    self.search.running = false;
                    self.search.generation += 1;
                    self.status = Some("search stopped".into());
                    return Effect::CancelSearch;
                }
            }
            Action::Hit(d) => {
                self.moved_by_hand();
                self.jump_hit(d);
            }
            Action::Subagents => self.open_subagents(),
            Action::Fork => return self.step_fork(),
            Action::Back => {
                if self.expanded {
                    self.expanded = false;
                    self.keep_in_view();
                } else if self.agent != 0 {
                    self.leave_subagent();
                } else if let Some(e) = self.hop_back() {
                    return e;
                }
            }
            Action::Help => self.overlay = Overlay::Help { scroll: 0 },
            Action::Follow => {
                self.follow = !self.follow;
                self.status = Some(if self.follow {
                    "follow on: the newest record stays in view".into()
                } else {
                    "follow off".into()
                });
                if self.follow {
                    self.go_newest();
                }
            }
            Action::DMail => return self.dmail(),
            // Only meaningful inside the compose box.
            Action::ComposeKey(_)
            | Action::ComposePaste(_)
            | Action::ComposeSend
            | Action::ComposeInsertKept
            | Action::ComposeCancel => {}
            // The app opens the compare screen (`compare_screen`).
            Action::Compare => {}
            Action::CompareMark => self.mark_for_compare(),
            Action::Quit => return Effect::Quit,
        }
        Effect::None
    }

    fn click(&mut self, p: Position) -> Effect {
        let a = self.areas();
        if a.map.contains(p) {
            let fit = geometry::map_track_rows(self.size, a.map.height);
            let rows = super::map::shown(&self.map, fit, self.focus);
            let hit = (p.y > a.map.y)
                .then(|| rows.get((p.y - a.map.y - 1) as usize).copied())
                .flatten();
            match hit {
                Some(super::map::MapRow::Track(line)) => {
                    self.moved_by_hand();
                    self.go_line(line);
                }
                Some(super::map::MapRow::Sub(k)) => {
                    if let Some(agent) = self.map.subagents.get(k).map(|s| s.agent) {
                        self.enter_agent(agent);
                    }
                }
                Some(super::map::MapRow::Fork(k)) => return self.enter_fork(k),
                None => {}
            }
            return Effect::None;
        }
        if a.graph.contains(p) {
            self.moved_by_hand();
            if let Some(pos) = self.list.at((p.y - a.graph.y) as usize, self.rows.len()) {
                self.select(pos);
            }
        }
        Effect::None
    }

    fn apply_snapshot(&mut self, s: Arc<Session>) {
        if self.want_session.as_ref().is_some_and(|w| *w != s.id) {
            return;
        }
        // The session a hop asked for (a fork, its source) replaces this
        // one whole.
        let asked = self.want_session.is_some();
        if asked && self.session.as_ref().is_some_and(|old| old.id != s.id) {
            self.leave_session();
        }
        let first = self.session.is_none();
        // The live follower's first snapshot repeats what the fast initial
        // read showed: only a real change makes the session live.
        let unchanged = self.session.as_ref().is_some_and(|old| same_files(old, &s));
        let anchor = self.anchor();
        let lines_before = self.family().map_or(0, |f| f.lines.len());
        let said = self.status.clone();
        // Another session arriving (a hop) brings its own message.
        let grew = !unchanged && self.session.as_ref().is_some_and(|old| old.id == s.id);
        self.live = match (first, self.live) {
            (_, LiveState::Live) => LiveState::Live,
            (true, _) if self.follow => LiveState::Live,
            (true, _) => LiveState::Static,
            (false, state) if unchanged => state,
            (false, _) => LiveState::Live,
        };
        if self.agent >= s.agents.len() {
            self.agent = 0;
            self.back = None;
        }
        let old = self.session.replace(s);
        // A snapshot that only appended records or a world line extends
        // what was shown and keeps what was read (but failed reads: a
        // rotation may have renamed the file since); anything else (a
        // truncation, a changed fork, another agent) rebuilds it and
        // forgets what was read for the old one.
        if old.as_deref().is_some_and(|o| self.extend_rows(o)) {
            self.cache.forget_failures();
        } else {
            self.cache.clear();
            self.rebuild_rows();
        }
        if let Some(old) = old {
            crate::live::drop_later(old);
        }
        let lines_now = self.family().map_or(0, |f| f.lines.len());
        let now = Instant::now();
        if self.follow && !first && lines_now > lines_before {
            // The leap: show where the newest line begins and why.
            let line = lines_now - 1;
            self.leap = Some(Leap { line, since: now });
            self.say_caption("new world line · ", line, String::new(), true);
        }
        match self.leap {
            Some(l) if self.follow && now < l.since + self.leap_time => self.show_leap(l.line),
            _ => {
                self.leap = None;
                if self.follow || first {
                    // A session opens on its current head.
                    self.go_newest();
                } else if let Some(a) = anchor {
                    self.restore(&a);
                }
            }
        }
        if first && !self.follow {
            self.arrive();
        }
        if grew && self.status == said {
            self.restate(lines_now > lines_before);
        }
        // Hits are kept by record: they stay right as rows move.
    }

    /// Shows `prefix`, world line `line`'s caption and `suffix`, redrawn by
    /// later snapshots (while the leap lasts, `with_leap`).
    fn say_caption(&mut self, prefix: &'static str, line: usize, suffix: String, with_leap: bool) {
        let shown = format!("{prefix}{}{suffix}", self.map.caption(line));
        self.status = Some(shown.clone());
        self.caption = Some(Caption {
            prefix,
            line,
            suffix,
            shown,
            with_leap,
        });
    }

    /// A snapshot changed the session under a status said before it: a
    /// caption is said again from the new map (or dropped with its leap);
    /// any other message about fewer world lines than there are now goes.
    fn restate(&mut self, more_lines: bool) {
        let caption = self
            .caption
            .take()
            .filter(|c| self.status.as_deref() == Some(c.shown.as_str()));
        match caption {
            Some(c) if c.with_leap && self.leap.is_none_or(|l| l.line != c.line) => {
                self.status = None
            }
            Some(c) => self.say_caption(c.prefix, c.line, c.suffix, c.with_leap),
            None if more_lines => self.status = None,
            None => {}
        }
    }

    /// Extends the row model and the map from `old` to the session now
    /// shown, when the shown agent's family only had records appended
    /// (`Appended::between`); false when they must be rebuilt.
    fn extend_rows(&mut self, old: &Session) -> bool {
        let Some(new) = self.session.clone() else {
            return false;
        };
        if !self.incremental || old.id != new.id || self.rows.agent != self.agent {
            return false;
        }
        let (Some(of), Some(nf)) = (old.agents.get(self.agent), new.agents.get(self.agent)) else {
            return false;
        };
        let Some(grown) = Appended::between(&of.family, &nf.family) else {
            return false;
        };
        if !self.rows.extend(&new, grown, &self.filter) {
            return false;
        }
        self.map
            .extend(old, &new, self.agent, grown, self.rows.mark);
        true
    }

    fn rebuild_rows(&mut self) {
        if let Some(s) = &self.session {
            self.rows = RowModel::build(s, self.agent, &self.filter);
            self.map = if self.agent == 0 {
                Map::of_session(s)
            } else {
                match s.agents.get(self.agent) {
                    Some(a) => {
                        let order = crate::worldline::map::Order::of(&a.family);
                        Map::of_family(&a.family, &order)
                    }
                    None => Map::default(),
                }
            };
        }
    }

    /// Selects world line `line`'s first own step, with its fork in view.
    fn show_leap(&mut self, line: usize) {
        self.focus = line;
        let rows = self.rows.line_rows(line);
        if !rows.is_empty() {
            self.select_row(rows.start);
            self.focus = line;
        }
    }

    /// Goes to world line `line` where it begins (a map click).
    pub fn go_line(&mut self, line: usize) {
        let rows = self.rows.line_rows(line);
        if rows.is_empty() {
            return;
        }
        self.select_row(rows.start);
        self.focus = line;
        self.say_caption("", line, String::new(), false);
    }

    pub(super) fn refilter(&mut self) {
        let sel = self.selected();
        self.rebuild_rows();
        match sel.and_then(|r| self.rows.row_of(r)) {
            Some(row) => self.select_row(row),
            None => self.select(0),
        }
    }

    fn current_line(&self) -> usize {
        self.family()
            .and_then(|f| f.lines.iter().rposition(|l| l.current))
            .unwrap_or(0)
    }

    /// Follow mode: the newest record of the current world line.
    fn go_newest(&mut self) {
        if self.session.is_none() {
            return;
        }
        let line = self.current_line();
        self.focus = line;
        let last = self.family().and_then(|f| f.last_record(line));
        match last.and_then(|o| self.rows.row_of(o)) {
            Some(row) => {
                let pos = self.rows.position_of(row);
                self.list
                    .set_cursor(pos.min(self.rows.len().saturating_sub(1)));
                self.detail_scroll = 0;
                self.keep_in_view();
            }
            None => self.select(self.rows.len().saturating_sub(1)),
        }
    }

    /// Another agent or session: no role filter (the every-record toggle
    /// stays), and no search (its results would be of the old one).
    fn fresh_filters(&mut self) {
        self.filter = Filter {
            every: self.filter.every,
            ..Filter::default()
        };
        self.search = SearchState {
            generation: self.search.generation + 1,
            ..SearchState::default()
        };
    }

    /// Forgets the session shown (another one is arriving).
    fn leave_session(&mut self) {
        self.session = None;
        self.live = LiveState::Loading;
        self.agent = 0;
        self.back = None;
        self.leap = None;
        self.expanded = false;
        self.overlay = Overlay::None;
        self.fresh_filters();
        self.focus = 0;
        self.list.reset();
        self.compare_mark = None;
    }

    pub(super) fn anchor(&self) -> Option<Anchor> {
        let r = self.selected()?;
        let f = self.family()?;
        Some(Anchor {
            agent: self.agent,
            file: f.lines.get(r.line)?.file.clone(),
            record: r.record,
            focus_file: f.lines.get(self.focus)?.file.clone(),
        })
    }

    pub(super) fn restore(&mut self, a: &Anchor) {
        let Some(s) = self.session.clone() else {
            return;
        };
        let Some(f) = s.agents.get(self.agent).map(|ag| &ag.family) else {
            return;
        };
        let focus = f.line_by_file(&a.focus_file).unwrap_or(0);
        let row = f.line_by_file(&a.file).and_then(|l| {
            let o = f.owner(l, a.record.min(f.line_len(l).checked_sub(1)?))?;
            self.rows.row_of(o)
        });
        self.focus = focus;
        match row {
            Some(row) => {
                self.list.set_cursor(self.rows.position_of(row));
                self.keep_in_view();
            }
            None => self.select(0),
        }
    }

    /// h/l/Tab: keep the selected record when the new world line shares it,
    /// else go to the record at the same position (clamped) on that line.
    fn switch_line(&mut self, d: isize) {
        let Some(s) = self.session.clone() else {
            return;
        };
        let Some(f) = s.agents.get(self.agent).map(|a| &a.family) else {
            return;
        };
        let n = f.lines.len();
        if n == 0 {
            return;
        }
        let next = (self.focus as isize + d).rem_euclid(n as isize) as usize;
        self.focus = next;
        let target = match self.selected() {
            Some(r) if self.on_line(next, r) => Some(r),
            Some(r) => f.owner(next, r.record.min(f.line_len(next).saturating_sub(1))),
            None => None,
        };
        if let Some(row) = target.and_then(|r| self.rows.row_of(r)) {
            self.list.set_cursor(self.rows.position_of(row));
            self.detail_scroll = 0;
            self.keep_in_view();
        }
        let file = format!(" ({})", crate::text::sanitize_line(&f.lines[next].file, 40));
        self.say_caption("", next, file, false);
    }

    /// Rows worth jumping to: fork points, each world line's first own
    /// record, D-Mail calls and injections (sorted, cached per row model).
    pub fn marks(&self) -> &[usize] {
        match self.family() {
            Some(f) => self.rows.marks(f),
            None => &[],
        }
    }

    fn jump_mark(&mut self, d: isize) {
        let Some(row) = self.rows.row_at(self.list.cursor()) else {
            return;
        };
        // Marks inside the row (a folded step) are where we are already.
        let here = self.shown_rows(row);
        let cur = if d > 0 { here.end - 1 } else { here.start };
        let marks = self.marks();
        // Binary search: a million-record session may have many marks.
        let in_line = if d > 0 {
            marks.get(marks.partition_point(|&m| m <= cur)).copied()
        } else {
            marks
                .partition_point(|&m| m < cur)
                .checked_sub(1)
                .and_then(|i| marks.get(i).copied())
        };
        // Where `/fork` and `/undo` sessions leave this one (and where this
        // fork was copied from) are forks too: the nearest this way wins.
        let sessions = self.fork_point_rows().into_iter().map(|(row, _)| row);
        let sessions: Option<usize> = if d > 0 {
            sessions
                .filter(|&r| r > cur)
                .chain(self.own_fork_row().filter(|&r| r > cur))
                .min()
        } else {
            sessions
                .filter(|&r| r < cur)
                .chain(self.own_fork_row().filter(|&r| r < cur))
                .max()
        };
        let target = match (in_line, sessions) {
            (Some(a), Some(b)) if d > 0 => Some(a.min(b)),
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        match target {
            Some(row) => self.select_row(row),
            None => self.status = Some("no more forks or D-Mails this way".into()),
        }
    }

    /// n/N: the next hit after the last one visited while the selection
    /// is still on it (several hits can share a step), else after the
    /// selection. Says where it is: `hit 3/12`.
    fn jump_hit(&mut self, d: isize) {
        let Some(cur) = self.selected() else {
            self.status = Some("no search yet: / searches".into());
            return;
        };
        let here = self
            .rows
            .row_at(self.list.cursor())
            .map(|row| self.shown_rows(row))
            .unwrap_or(0..0);
        let from = match self.search.at {
            Some(a) if self.rows.row_of(a).is_some_and(|r| here.contains(&r)) => a,
            _ if d > 0 => self
                .rows
                .record_of(here.end.saturating_sub(1))
                .unwrap_or(cur),
            _ => cur,
        };
        let hits = &self.search.hits;
        let target = if d > 0 {
            hits.range((std::ops::Bound::Excluded(from), std::ops::Bound::Unbounded))
                .next()
                .or_else(|| hits.iter().next())
        } else {
            hits.range(..from)
                .next_back()
                .or_else(|| hits.iter().next_back())
        };
        match target.copied() {
            Some(r) => {
                let i = hits.range(..r).count() + 1;
                let n = hits.len();
                self.search.at = Some(r);
                if let Some(row) = self.rows.row_of(r) {
                    self.select_row(row);
                }
                self.status = Some(format!(
                    "/{}: hit {i}/{n}",
                    crate::text::sanitize_line(&self.search.query, 40)
                ));
            }
            None if self.search.query.is_empty() => {
                self.status = Some("no search yet: / searches".into())
            }
            None => self.status = Some("no matches".into()),
        }
    }

    /// The rows a drawn row stands for: itself and the hidden rows after
    /// it (a folded step's records, or what a filter hides), so lanes,
    /// forks, hits and errors inside them show on it.
    pub fn shown_rows(&self, row: usize) -> std::ops::Range<usize> {
        let p = self.rows.position_of(row);
        if self.rows.row_at(p) != Some(row) {
            return row..row + 1;
        }
        let next = self.rows.row_at(p + 1).unwrap_or(self.rows.total);
        row..next.max(row + 1)
    }

    /// Is the step headed by `row` unfolded?
    pub fn is_unfolded_step(&self, row: usize) -> bool {
        self.is_unfolded(row)
    }

    fn is_unfolded(&self, row: usize) -> bool {
        self.rows
            .record_of(row)
            .is_some_and(|r| self.filter.unfolded.contains(&r))
    }

    /// Enter/→: a step head unfolds or folds; a record opens in full.
    fn expand(&mut self) {
        let Some(row) = self.rows.row_at(self.list.cursor()) else {
            return;
        };
        if self.rows.is_step_head(row) && !self.expanded {
            let Some(r) = self.rows.record_of(row) else {
                return;
            };
            if !self.filter.unfolded.remove(&r) {
                self.filter.unfolded.insert(r);
            }
            self.refilter();
            return;
        }
        self.expanded = !self.expanded;
        self.detail_scroll = 0;
        self.keep_in_view();
    }

    /// ←: folds the step the selection is in (or closes the record).
    fn fold(&mut self) {
        if self.expanded {
            self.expanded = false;
            self.keep_in_view();
            return;
        }
        let Some(row) = self.rows.row_at(self.list.cursor()) else {
            return;
        };
        let head = self.rows.step_rows(row).start;
        if let Some(r) = self.rows.record_of(head) {
            if self.filter.unfolded.remove(&r) {
                self.refilter();
                self.select_row(head);
            }
        }
    }

    /// e/E: the next tool error or refused D-Mail. Tool errors are only in
    /// the bodies, so each tool result's first bytes are read; a bound
    /// keeps one press short on a huge session.
    fn jump_error(&mut self, d: isize) {
        const MAX_SCAN: usize = 50_000;
        let (Some(s), Some(row)) = (self.session.clone(), self.rows.row_at(self.list.cursor()))
        else {
            return;
        };
        let here = self.shown_rows(row);
        let total = self.rows.total;
        let mut scanned = 0;
        let mut next = if d > 0 {
            here.end
        } else {
            here.start.wrapping_sub(1)
        };
        while next < total && scanned < MAX_SCAN {
            scanned += 1;
            if let Some(r) = self.rows.record_of(next) {
                if self.is_error(&s, r) {
                    self.select_row(next);
                    self.status = Some("tool error".into());
                    return;
                }
            }
            next = if d > 0 {
                next + 1
            } else {
                next.wrapping_sub(1)
            };
        }
        self.status = Some(if scanned >= MAX_SCAN {
            format!("no error in the next {MAX_SCAN} records")
        } else {
            "no more errors this way".into()
        });
    }

    fn is_error(&self, s: &Session, r: RecordRef) -> bool {
        use crate::model::{Marker, Role};
        let Some(m) = s.record(r) else { return false };
        match m.marker().as_deref() {
            Some(Marker::DMailResult(res)) => return res.is_err(),
            _ if *m.role() != Role::Tool => return false,
            _ => {}
        }
        s.line_head(r, 256).is_ok_and(|h| {
            memchr::memmem::find(&h, b"<system>ERROR").is_some()
                || memchr::memmem::find(&h, b"\"is_error\": true").is_some()
        })
    }

    fn submit_search(&mut self) -> Effect {
        let Some(q) = self.search.input.take() else {
            return Effect::None;
        };
        let Some(s) = self.session.clone() else {
            return Effect::None;
        };
        if q.is_empty() {
            return Effect::None;
        }
        self.search.generation += 1;
        self.search.query = q.clone();
        self.search.hits.clear();
        self.search.at = None;
        self.search.running = true;
        self.search.scanned = 0;
        self.search.total = self.rows.total;
        Effect::Search(SearchRequest {
            session: s,
            agent: self.agent,
            query: q,
            generation: self.search.generation,
        })
    }

    fn open_subagents(&mut self) {
        let Some(s) = self.session.clone() else {
            return;
        };
        if s.agents.len() < 2 {
            self.status = Some("this session has no subagents".into());
            return;
        }
        if self.agent != 0 {
            self.status = Some("Esc goes back to the main agent".into());
            return;
        }
        // On an Agent call: enter the subagent it ran.
        if let Some(r) = self.selected() {
            if let Some(k) = s.agents.iter().position(|a| a.parent_call == Some(r)) {
                self.enter_agent(k);
                return;
            }
        }
        self.overlay = Overlay::Subagents { sel: 0 };
    }

    pub(super) fn enter_agent(&mut self, k: usize) {
        let Some(s) = self.session.clone() else {
            return;
        };
        if k == 0 || k >= s.agents.len() {
            return;
        }
        self.back = self.anchor();
        self.agent = k;
        self.fresh_filters();
        self.rebuild_rows();
        self.focus = self.current_line();
        self.select(0);
        let meta = s.agents[k].meta.clone().unwrap_or_default();
        self.status = Some(format!(
            "subagent {} — Esc goes back",
            crate::text::sanitize_line(&meta.agent_id, 30)
        ));
    }

    fn leave_subagent(&mut self) {
        self.agent = 0;
        self.fresh_filters();
        self.rebuild_rows();
        match self.back.take() {
            Some(a) => self.restore(&a),
            None => self.select(0),
        }
        self.status = Some("main agent".into());
    }

    /// Loads what the next draw shows: previews of the visible rows and the
    /// selected record's body. The only disk access of the UI thread.
    pub fn prepare(&mut self) {
        let Some(s) = self.session.clone() else {
            return;
        };
        let h = self.graph_height();
        let Some(fam) = s.agents.get(self.agent).map(|a| &a.family) else {
            return;
        };
        for pos in self.list.shown(self.rows.len(), h) {
            let Some(row) = self.rows.row_at(pos) else {
                continue;
            };
            if self.rows.is_step_head(row) {
                for r in super::steps::wanted(fam, &self.rows, row) {
                    self.cache.preview(&s, r);
                }
            } else if let Some(r) = self.rows.record_of(row) {
                self.cache.preview(&s, r);
            }
        }
        if let Some(r) = self.detail_record() {
            self.cache.body(&s, r);
            self.cache.landing(&s, r);
        }
        if let Overlay::Compose(c) = &mut self.overlay {
            c.prepare(&s);
        }
    }
}

/// Same files with the same bytes read, in every agent.
fn same_files(a: &Session, b: &Session) -> bool {
    a.agents.len() == b.agents.len()
        && a.agents.iter().zip(&b.agents).all(|(x, y)| {
            x.family.files.len() == y.family.files.len()
                && x.family.files.iter().zip(&y.family.files).all(|(f, g)| {
                    f.name == g.name && f.bytes == g.bytes && f.records.len() == g.records.len()
                })
        })
}
