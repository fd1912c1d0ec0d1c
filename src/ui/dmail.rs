//! The App side of D-Mail compose: `d`, the keys of the compose box, the
//! reply, and the jump to the new world line once it appears. Pure like the
//! rest of `update`: liveness and sending come back as effects.

use super::compose::{self, Note, PendingJump, Reply, SendRequest};
use super::msg::{Action, Effect};
use super::session::{Overlay, SessionScreen};
use super::theme::line_name;

impl SessionScreen {
    /// Does the agent shown write ⚑ checkpoints (what a D-Mail goes back
    /// to)? Some formats have none: `d` is then not offered.
    pub fn has_checkpoints(&self) -> bool {
        self.map.tracks.iter().any(|t| !t.ticks.is_empty())
    }

    /// Is key binding `b` of use here (the footer and help leave out what
    /// isn't)?
    pub fn offers(&self, b: &super::keys::Binding) -> bool {
        self.has_checkpoints() || self.by_turns() || !matches!((b.action)(), Action::DMail)
    }

    /// Does this session take D-Mails by turns (a server that undoes
    /// them), with or without checkpoints?
    fn by_turns(&self) -> bool {
        self.session.as_deref().is_some_and(compose::by_turns)
    }

    /// `d`: explain, or ask the runtime whether the agent is live.
    pub(super) fn dmail(&mut self) -> Effect {
        let Some(s) = self.session.clone() else {
            return Effect::None;
        };
        // By turns any record of the current world line will do; by
        // checkpoints the selected ⚑ (or the one a folded step holds).
        let by_turns = compose::by_turns(&s);
        if !by_turns && !self.has_checkpoints() {
            self.status = Some(compose::NO_CHECKPOINTS.into());
            return Effect::None;
        }
        let r = if by_turns {
            self.selected()
        } else {
            self.dmail_record()
        };
        let Some(r) = r else {
            self.status = Some(
                if by_turns {
                    compose::NOT_A_TURN
                } else {
                    compose::NOT_A_CHECKPOINT
                }
                .into(),
            );
            return Effect::None;
        };
        match compose::target_of(&s, self.agent, r) {
            Ok(t) => Effect::Probe(t),
            Err(why) => {
                self.status = Some(why.into());
                Effect::None
            }
        }
    }

    pub(super) fn update_compose(&mut self, action: Action) -> Effect {
        let Overlay::Compose(c) = &mut self.overlay else {
            return Effect::None;
        };
        match action {
            Action::ComposeInsertKept => {
                if let Some(s) = self.session.clone() {
                    c.insert_kept(&s);
                }
            }
            Action::ComposeKey(input) => {
                c.input(input);
                if matches!(c.note, Some(Note::Hint(_))) {
                    c.note = None;
                }
            }
            Action::ComposePaste(text) => c.paste(&text),
            Action::ComposeSend => return self.send_compose(),
            Action::ComposeCancel => {
                self.overlay = Overlay::None;
                self.status = Some("D-Mail not sent".into());
            }
            Action::Quit => return Effect::Quit,
            // Graph keys, clicks and the wheel do nothing while composing.
            _ => {}
        }
        Effect::None
    }

    fn send_compose(&mut self) -> Effect {
        let Some(s) = self.session.clone() else {
            return Effect::None;
        };
        let Overlay::Compose(c) = &mut self.overlay else {
            return Effect::None;
        };
        if c.sending {
            return Effect::None;
        }
        let message = c.message();
        if message.trim().is_empty() {
            c.note = Some(Note::Hint(compose::EMPTY.into()));
            return Effect::None;
        }
        // The agent may have moved on (a rotation) while the user typed.
        if compose::discarded(&s, &c.target).is_none() {
            c.note = Some(Note::Warning(compose::MOVED.into()));
            return Effect::None;
        }
        c.sending = true;
        c.note = None;
        let lines_before = s
            .agents
            .get(c.target.agent)
            .map_or(0, |a| a.family.lines.len());
        Effect::SendDMail(SendRequest {
            dir: c.target.dir.clone(),
            back: c.target.back,
            session: c.target.session.clone(),
            tool: c.target.tool,
            message,
            lines_before,
        })
    }

    /// Accepted: close the box and wait for the world line. Anything else:
    /// show it in the box (text kept for a resend), or in the status line if
    /// the box was closed meanwhile.
    pub(super) fn dmail_reply(&mut self, request: SendRequest, reply: Reply) {
        let open = match &mut self.overlay {
            Overlay::Compose(c) if c.sending && c.target.dir == request.dir => Some(c),
            _ => None,
        };
        let problem = match reply {
            Reply::Accepted => {
                if open.is_some() {
                    self.overlay = Overlay::None;
                }
                self.status = Some(match request.back {
                    compose::Back::Checkpoint(cp) => format!(
                        "D-Mail accepted: the agent reverts to checkpoint {cp} at the end of its step"
                    ),
                    back => format!(
                        "D-Mail accepted: the agent went {} and takes it as its next prompt",
                        crate::worldline::revert::back_words(back)
                    ),
                });
                self.pending_jump = Some(PendingJump {
                    dir: request.dir,
                    back: request.back,
                    message: request.message,
                    lines_before: request.lines_before,
                });
                // The revert may already be in the snapshot we hold.
                self.try_jump();
                return;
            }
            Reply::Refused(reason) => format!("refused: {reason}"),
            Reply::NotLive => compose::NOT_LIVE.to_string(),
            Reply::Failed(e) => format!("not sent: {e}"),
        };
        match open {
            Some(c) => {
                c.sending = false;
                c.note = Some(Note::Warning(problem));
            }
            None => self.status = Some(problem),
        }
    }

    /// Moves to the accepted D-Mail's world line once a snapshot has it.
    pub(super) fn try_jump(&mut self) {
        let (Some(s), Some(j)) = (self.session.clone(), self.pending_jump.as_ref()) else {
            return;
        };
        let Some((agent, line, r)) = compose::landing(&s, j) else {
            return;
        };
        let at = match j.back {
            compose::Back::Checkpoint(cp) => format!("back at checkpoint {cp}"),
            back => crate::worldline::revert::back_words(back),
        };
        self.status = Some(format!(
            "D-Mail landed: {at}, world line {} begins with it",
            line_name(line)
        ));
        self.pending_jump = None;
        if agent != self.agent {
            return;
        }
        self.focus = line;
        // A filter may hide the injection: then the line's first shown row.
        let row = self.rows.row_of(r).or_else(|| {
            let rows = self.rows.line_rows(line);
            (!rows.is_empty()).then_some(rows.start)
        });
        if let Some(row) = row {
            self.select_row(row);
        }
    }
}
