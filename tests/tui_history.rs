//! The TUI on sessions of older kimi-cli releases, drawn with TestBackend:
//! a flat 0.55 session and a 1.0 `context_sub` session show their
//! subagent, and inside it the subagent's own D-Mail world line.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::ui::{press, press_code};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{App, Live};
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::Session;

fn history_session(scenario: &str) -> PathBuf {
    let folder = std::fs::read_dir(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/kimi-cli-history")
            .join(scenario)
            .join("sessions"),
    )
    .unwrap()
    .next()
    .unwrap()
    .unwrap()
    .path();
    let first = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() || !p.file_name().unwrap().to_string_lossy().contains('_'))
        .unwrap();
    // A flat session is named by its main file.
    worldline::sources::kimi_cli::resolve(
        Some(&first.display().to_string()),
        &worldline::sources::kimi_cli::Locator::from_env(),
    )
    .unwrap()
}

fn render(app: &mut App) -> String {
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

fn open(path: &Path) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(120, 36));
    app.update(Live::Snapshot(Arc::new(Session::load(path).unwrap())));
    app
}

#[test]
fn old_subagents_open_with_their_own_dmail_world_line() {
    for scenario in ["v0_55_subagent_dmail", "v1_0_subagent_dmail"] {
        let mut app = open(&history_session(scenario));
        let main = render(&mut app);
        // The main agent has one world line: α's track, no β.
        assert!(main.contains("▸α "), "{scenario}:\n{main}");
        assert!(!main.contains("β"), "{scenario}:\n{main}");
        assert!(main.contains("Delegating."), "{scenario}:\n{main}");
        press(&mut app, "s");
        let list = render(&mut app);
        assert!(list.contains("sub_1"), "{scenario}:\n{list}");
        assert!(list.contains("2 world lines"), "{scenario}:\n{list}");
        press_code(&mut app, KeyCode::Enter);
        let sub = render(&mut app);
        assert!(sub.contains("subagent sub_1"), "{scenario}:\n{sub}");
        // The current world line is the D-Mail's (β): its map track says so,
        // and why, and the sending step shows the accepted send.
        let beta = sub
            .lines()
            .find(|l| l.contains("▸β"))
            .unwrap_or_else(|| panic!("{scenario}: no β track:\n{sub}"));
        assert!(beta.contains("current"), "{scenario}:\n{sub}");
        assert!(
            beta.contains("← D-Mail from α at ⚑2 → ⚑0"),
            "{scenario}:\n{sub}"
        );
        assert!(
            sub.contains("Sub fold: line 42 only."),
            "{scenario}:\n{sub}"
        );
    }
}

#[test]
fn a_flat_dmail_session_shows_both_world_lines() {
    let mut app = open(&history_session("v0_55_dmail"));
    let screen = render(&mut app);
    // Both world lines are named on the map; β says why it exists.
    assert!(screen.contains(" α  ●"), "{screen}");
    assert!(screen.contains("← D-Mail from α at ⚑2 → ⚑1"), "{screen}");
    assert!(screen.contains("Version fold"), "{screen}");
    // The sending step shows the accepted send and the line it made.
    assert!(screen.contains("SendDMail→⚑1⇒β ✓"), "{screen}");
}
