//! Driving the TUI's pure state with typed keys, as a user would.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use worldline::ui::app::{App, Effect};
use worldline::ui::keys;
use worldline::ui::search;

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
    match keys::key(app.mode(), &KeyEvent::new(code, KeyModifiers::NONE)) {
        Some(a) => app.update(a),
        None => Effect::None,
    }
}

/// Presses Enter on a typed search and applies its results, running the
/// search worker's scan on this thread.
pub fn submit_search(app: &mut App) {
    let Effect::Search(req) = press_code(app, KeyCode::Enter) else {
        panic!("Enter starts a search");
    };
    let got = Mutex::new(Vec::new());
    search::scan(&req, &AtomicBool::new(false), &|a| {
        got.lock().unwrap().push(a);
        true
    });
    for a in got.into_inner().unwrap() {
        app.update(a);
    }
}
