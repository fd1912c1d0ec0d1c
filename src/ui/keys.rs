//! Terminal events → actions. Only key presses count (Windows and the kitty
//! protocol also report releases and repeats).

use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Size};

use super::app::Action;

/// How keys are read right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing a search query.
    SearchInput,
    /// Typing a D-Mail: every key goes to the text but Ctrl-S, Esc, Ctrl-C.
    Compose,
}

pub fn action_for(mode: Mode, ev: &Event) -> Option<Action> {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => key(mode, k),
        // The compose box has no mouse use, and a click must not move the
        // selection under it.
        Event::Mouse(_) if mode == Mode::Compose => None,
        Event::Mouse(m) => mouse(m),
        Event::Paste(s) if mode == Mode::Compose => Some(Action::ComposePaste(s.clone())),
        Event::Resize(w, h) => Some(Action::Resize(Size::new(*w, *h))),
        _ => None,
    }
}

pub fn key(mode: Mode, k: &KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Raw mode turns Ctrl-C into a key; it always quits.
    if ctrl && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('q')) {
        return Some(Action::Quit);
    }
    if mode == Mode::Compose {
        return Some(match k.code {
            KeyCode::Esc => Action::ComposeCancel,
            KeyCode::Char('s') if ctrl => Action::ComposeSend,
            _ => Action::ComposeKey((*k).into()),
        });
    }
    if mode == Mode::SearchInput {
        return match k.code {
            KeyCode::Esc => Some(Action::SearchCancel),
            KeyCode::Enter => Some(Action::SearchSubmit),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::SearchChar(c)),
            _ => None,
        };
    }
    let a = match k.code {
        KeyCode::Char('j') | KeyCode::Down => Action::Move(1),
        KeyCode::Char('k') | KeyCode::Up => Action::Move(-1),
        KeyCode::Char('d') if ctrl => Action::Page(1),
        KeyCode::Char('u') if ctrl => Action::Page(-1),
        KeyCode::PageDown | KeyCode::Char(' ') => Action::Page(1),
        KeyCode::PageUp => Action::Page(-1),
        KeyCode::Char('g') | KeyCode::Home => Action::Top,
        KeyCode::Char('G') | KeyCode::End => Action::Bottom,
        KeyCode::Char('h') | KeyCode::Left | KeyCode::BackTab => Action::SwitchLine(-1),
        KeyCode::Char('l') | KeyCode::Right | KeyCode::Tab => Action::SwitchLine(1),
        KeyCode::Enter => Action::Expand,
        KeyCode::Char(']') => Action::Mark(1),
        KeyCode::Char('[') => Action::Mark(-1),
        KeyCode::Char('/') => Action::SearchOpen,
        KeyCode::Char('n') => Action::Hit(1),
        KeyCode::Char('N') => Action::Hit(-1),
        KeyCode::Char('f') => Action::CycleFilter,
        KeyCode::Char('c') => Action::Collapse,
        KeyCode::Char('s') => Action::Subagents,
        KeyCode::Esc | KeyCode::Backspace => Action::Back,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('F') => Action::Follow,
        KeyCode::Char('d') => Action::DMail,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    };
    Some(a)
}

fn mouse(m: &MouseEvent) -> Option<Action> {
    match m.kind {
        MouseEventKind::ScrollDown => Some(Action::Wheel(3)),
        MouseEventKind::ScrollUp => Some(Action::Wheel(-3)),
        MouseEventKind::Down(MouseButton::Left) => {
            Some(Action::Click(Position::new(m.column, m.row)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_ignored_and_ctrl_c_quits_everywhere() {
        let mut k = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
        assert!(matches!(
            action_for(Mode::Normal, &Event::Key(k)),
            Some(Action::Move(1))
        ));
        k.kind = KeyEventKind::Release;
        assert!(action_for(Mode::Normal, &Event::Key(k)).is_none());
        let c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(key(Mode::SearchInput, &c), Some(Action::Quit)));
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert!(matches!(
            key(Mode::SearchInput, &q),
            Some(Action::SearchChar('q'))
        ));
    }
}
