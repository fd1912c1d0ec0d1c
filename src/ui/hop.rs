//! Stepping between sessions linked by `/fork` and `/undo`: into a fork
//! from the source's map or its fork-point row, and back (Esc, or `o` on
//! the fork). The runtime opens the other session (`Effect::Open`); its
//! snapshots replace this one's, and the way back remembers the selection.

use std::path::PathBuf;

use crate::worldline::{RecordRef, Session, SessionLink};

use super::msg::Effect;
use super::session::{Anchor, SessionScreen};

/// A session left for another: where to come back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub session: String,
    pub dir: PathBuf,
    pub anchor: Option<Anchor>,
}

/// What to select when the session being opened arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// Back on a source: where the user was.
    Anchor(Anchor),
    /// Into a fork: the last record it shares with its source.
    ForkPoint,
}

impl SessionScreen {
    /// The row of the main agent's record `r` (owned by the line that wrote it).
    fn row_of_record(&self, s: &Session, r: RecordRef) -> Option<usize> {
        self.rows.row_of(s.main().owner_of(r)?)
    }

    /// Rows where fork sessions leave, with the fork's index in `map.forks`.
    pub fn fork_point_rows(&self) -> Vec<(usize, usize)> {
        let Some(s) = &self.session else {
            return Vec::new();
        };
        if self.agent != 0 {
            return Vec::new();
        }
        self.map
            .forks
            .iter()
            .enumerate()
            .filter_map(|(k, f)| Some((self.row_of_record(s, f.at?)?, k)))
            .collect()
    }

    /// The row where this session, a fork, was copied from its source.
    pub fn own_fork_row(&self) -> Option<usize> {
        let s = self.session.as_deref()?;
        if self.agent != 0 {
            return None;
        }
        let r = s.fork_point(s.forked_from.as_ref()?)?;
        self.row_of_record(s, r)
    }

    /// `o`: on a fork point, step into the fork leaving there; elsewhere go
    /// to the next fork point; on a fork without forks of its own, back to
    /// its source.
    pub(super) fn step_fork(&mut self) -> Effect {
        let Some(s) = self.session.clone() else {
            return Effect::None;
        };
        if self.agent != 0 {
            self.status =
                Some("forks are sessions of the main agent: Esc leaves the subagent".into());
            return Effect::None;
        }
        if s.forks.is_empty() {
            return match &s.forked_from {
                Some(link) => self.open_source(link.clone()),
                None => {
                    self.status = Some("no /fork or /undo session came from this one".into());
                    Effect::None
                }
            };
        }
        let mut points = self.fork_point_rows();
        points.sort();
        let here = self
            .rows
            .row_at(self.list.cursor())
            .map(|row| self.shown_rows(row))
            .unwrap_or(0..0);
        if let Some(&(_, k)) = points.iter().find(|(row, _)| here.contains(row)) {
            return self.enter_fork(k);
        }
        // The next fork point after the selection, wrapping.
        let next = points
            .iter()
            .find(|(row, _)| *row >= here.end)
            .or(points.first())
            .copied();
        match next {
            Some((row, k)) => {
                self.select_row(row);
                self.status = Some(format!(
                    "{} leaves here — o steps in",
                    self.map.forks[k].text()
                ));
            }
            // Forks leaving before anything shared (an /undo of turn 0).
            None => return self.enter_fork(0),
        }
        Effect::None
    }

    /// Opens fork `k` of `map.forks` (a click on its track, or `o`).
    pub(super) fn enter_fork(&mut self, k: usize) -> Effect {
        let Some(s) = self.session.clone() else {
            return Effect::None;
        };
        let Some(link) = self.map.forks.get(k).and_then(|f| s.forks.get(f.fork)) else {
            return Effect::None;
        };
        self.hops.push(Hop {
            session: s.id.clone(),
            dir: s.dir.clone(),
            anchor: self.anchor(),
        });
        self.arriving = Some(Arrival::ForkPoint);
        self.status = Some(format!(
            "opening the /{} session {}…",
            link.kind.as_str(),
            self.map.forks[k].label
        ));
        self.open_linked(link)
    }

    /// Esc on a session entered from its source: back there.
    pub(super) fn hop_back(&mut self) -> Option<Effect> {
        let h = self.hops.pop()?;
        self.want_session = Some(h.session);
        self.arriving = h.anchor.map(Arrival::Anchor);
        self.status = Some("back to the source session".into());
        Some(Effect::Open(h.dir))
    }

    fn open_source(&mut self, link: SessionLink) -> Effect {
        if self.hops.last().is_some_and(|h| h.session == link.session) {
            return self.hop_back().unwrap_or(Effect::None);
        }
        self.hops.clear();
        self.arriving = None;
        self.status = Some(format!(
            "opening the source of this /{}…",
            link.kind.as_str()
        ));
        self.open_linked(&link)
    }

    fn open_linked(&mut self, link: &SessionLink) -> Effect {
        self.want_session = Some(link.session.clone());
        Effect::Open(link.dir.clone())
    }

    /// The first snapshot of a session just opened: select what the hop
    /// promised.
    pub(super) fn arrive(&mut self) {
        let Some(s) = self.session.clone() else {
            return;
        };
        match self.arriving.take() {
            Some(Arrival::Anchor(a)) => self.restore(&a),
            Some(Arrival::ForkPoint) => {
                let at = s.forked_from.as_ref().and_then(|l| s.fork_point(l));
                if let Some(row) = at.and_then(|r| self.row_of_record(&s, r)) {
                    self.select_row(row);
                    self.focus = 0;
                }
                if let Some(from) = crate::worldline::map::came_from(&s) {
                    self.status = Some(format!("{from} — Esc goes back"));
                }
            }
            None => {}
        }
    }
}
