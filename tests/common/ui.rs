//! Driving the TUI's pure state with typed keys, as a user would.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use worldline::ui::app::{App, Effect};
use worldline::ui::keys::{self, Mode};

/// Presses keys by their characters.
pub fn press(app: &mut App, typed: &str) -> Effect {
    let mut last = Effect::None;
    for c in typed.chars() {
        last = press_code(app, KeyCode::Char(c));
    }
    last
}

/// Presses one key, in the mode the app is in (typing a search or not).
pub fn press_code(app: &mut App, code: KeyCode) -> Effect {
    let mode = if app.search.input.is_some() {
        Mode::SearchInput
    } else {
        Mode::Normal
    };
    match keys::key(mode, &KeyEvent::new(code, KeyModifiers::NONE)) {
        Some(a) => app.update(a),
        None => Effect::None,
    }
}
