//! The compare screen (`c`) through the UI's public API, as a user drives
//! it: typed keys, snapshots of the screen at 80×24 and 120×40 on the
//! fixtures (a D-Mail, two D-Mails, Kimi Code undos, a Claude Code rewind,
//! a Pi `/tree` move, a Codex rollback), the step opened with
//! its write as a diff, Esc back, and a line that grows while compared.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{App, Effect, Live};
use worldline::ui::keys;
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::Session;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

fn app_on(dir: &Path, w: u16, h: u16) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
    app.set_work_dir(Some("~/project".into()));
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    app
}

/// One key, read in the mode the app is in now.
fn key(app: &mut App, code: KeyCode) -> Effect {
    match keys::key(app.mode(), &KeyEvent::new(code, KeyModifiers::NONE)) {
        Some(a) => app.update(a),
        None => Effect::None,
    }
}

fn keys_typed(app: &mut App, typed: &str) {
    for c in typed.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn render(app: &mut App) -> String {
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

/// The thinking_tools fixture's files copied under `tmp` (tests that
/// change them).
fn copy_of_thinking_tools(tmp: &Path) -> PathBuf {
    let src = common::fixture_session("kimi-cli", "thinking_tools");
    let dir = tmp.join("s");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    dir
}

fn kimi_code_session() -> PathBuf {
    let home = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-code/r_two_undos_compact_fork/home/sessions/wd_project_76860d8b5438");
    std::fs::read_dir(home)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("480a004a"))
        .unwrap()
}

#[test]
fn c_compares_the_focused_line_with_its_parent() {
    let dir = common::fixture_session("kimi-cli", "thinking_tools");
    for (w, h) in SIZES {
        let mut app = app_on(&dir, w, h);
        keys_typed(&mut app, "c");
        let screen = render(&mut app);
        let c = app.compare_screen().expect("c opens the compare screen");
        assert_eq!(c.pair(), (0, 1));
        assert_eq!(c.pane(), 1);
        assert!(screen.contains("compare α ↔ β"), "{screen}");
        assert!(
            screen.contains("shared: 2 steps (6 records), up to ⚑1"),
            "{screen}"
        );
        assert!(screen.contains("wrote out.txt"), "{screen}");
        assert!(screen.contains("WriteFile out.txt ✓"), "{screen}");
        insta::assert_snapshot!(format!("thinking_tools_{w}x{h}"), screen);
        // Esc: back to the session screen.
        key(&mut app, KeyCode::Esc);
        assert!(app.compare_screen().is_none());
        assert!(!render(&mut app).contains("compare α ↔ β"));
    }
}

#[test]
fn j_k_move_both_panes_tab_switches_and_enter_opens_the_step_with_its_diff() {
    let dir = common::fixture_session("kimi-cli", "thinking_tools");
    let mut app = app_on(&dir, 120, 40);
    keys_typed(&mut app, "c");
    render(&mut app);
    assert_eq!(app.compare_screen().unwrap().row(), 1);
    keys_typed(&mut app, "j");
    assert_eq!(app.compare_screen().unwrap().row(), 2);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.compare_screen().unwrap().pane(), 0);
    // α's second step after the fork writes out.txt.
    key(&mut app, KeyCode::Enter);
    let screen = render(&mut app);
    assert!(app.compare_screen().unwrap().step_open());
    assert!(screen.contains("α step 2 of 3 (⚑2)"), "{screen}");
    assert!(screen.contains("→ WriteFile out.txt"), "{screen}");
    assert!(screen.contains("+hi"), "{screen}");
    insta::assert_snapshot!("thinking_tools_step_open_120x40", screen);
    key(&mut app, KeyCode::Esc);
    assert!(!app.compare_screen().unwrap().step_open());
    // h/l: the pane shows another world line (here there are two).
    keys_typed(&mut app, "gG");
    assert_eq!(app.compare_screen().unwrap().row(), 3);
    keys_typed(&mut app, "q");
}

#[test]
fn two_dmails_and_kimi_code_undos() {
    let twice = common::fixture_session("kimi-cli", "dmail_twice");
    for (w, h) in SIZES {
        let mut app = app_on(&twice, w, h);
        keys_typed(&mut app, "c");
        let screen = render(&mut app);
        assert!(screen.contains("compare β ↔ γ"), "{screen}");
        assert!(screen.contains("up to ⚑2"), "{screen}");
        assert!(screen.contains("$ echo hello ✓"), "{screen}");
        insta::assert_snapshot!(format!("dmail_twice_{w}x{h}"), screen);
        // l: the left pane shows α instead; they part at ⚑1.
        key(&mut app, KeyCode::Tab);
        keys_typed(&mut app, "l");
        let screen = render(&mut app);
        assert_eq!(app.compare_screen().unwrap().pair(), (0, 2));
        assert!(screen.contains("compare α ↔ γ"), "{screen}");
        assert!(screen.contains("up to ⚑1"), "{screen}");
    }
    let kc = kimi_code_session();
    for (w, h) in SIZES {
        let mut app = app_on(&kc, w, h);
        keys_typed(&mut app, "c");
        let screen = render(&mut app);
        let c = app.compare_screen().unwrap().comparison().unwrap();
        assert_eq!(c.fork.file_line, Some(87));
        assert!(screen.contains("compare β ↔ γ"), "{screen}");
        assert!(screen.contains("line 87"), "{screen}");
        assert!(screen.contains("Turn 6: on b2."), "{screen}");
        insta::assert_snapshot!(format!("kimi_code_undo_{w}x{h}"), screen);
    }
}

#[test]
fn a_growing_line_extends_its_pane() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_of_thinking_tools(tmp.path());
    let mut app = app_on(&dir, 120, 40);
    keys_typed(&mut app, "c");
    render(&mut app);
    let before = app.compare_screen().unwrap().comparison().unwrap().lines[1]
        .steps
        .len();
    // β goes on: a checkpoint, a write of out.txt (which α wrote too).
    let more = concat!(
        "{\"role\": \"_checkpoint\", \"id\": 3}\n",
        "{\"role\":\"user\",\"content\":\"<system>CHECKPOINT 3</system>\"}\n",
        "{\"role\":\"assistant\",\"content\":\"Again.\",\"tool_calls\":[{\"type\":\"function\",\"id\":\"w9\",\"function\":{\"name\":\"WriteFile\",\"arguments\":\"{\\\"path\\\": \\\"out.txt\\\", \\\"content\\\": \\\"bye\\\\n\\\"}\"}}]}\n",
        "{\"role\":\"tool\",\"content\":\"<system>File successfully overwritten.</system>\",\"tool_call_id\":\"w9\"}\n",
    );
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("context.jsonl"))
        .unwrap()
        .write_all(more.as_bytes())
        .unwrap();
    app.update(Live::Snapshot(Arc::new(Session::load(&dir).unwrap())));
    let screen = render(&mut app);
    let c = app.compare_screen().unwrap().comparison().unwrap();
    assert_eq!(c.lines[1].steps.len(), before + 1);
    assert_eq!(c.files_both, ["out.txt"]);
    assert!(screen.contains("‼ wrote out.txt"), "{screen}");
    assert!(screen.contains("both: out.txt"), "{screen}");
}

#[test]
fn one_world_line_says_so() {
    let dir = common::fixture_session("kimi-cli", "subagent");
    let mut app = app_on(&dir, 80, 24);
    keys_typed(&mut app, "c");
    assert!(app.compare_screen().is_none());
    assert!(render(&mut app).contains("one world line"));
}

#[test]
fn the_detail_pane_shows_a_write_as_a_diff() {
    let dir = common::fixture_session("kimi-cli", "thinking_tools");
    let mut app = app_on(&dir, 120, 40);
    keys_typed(&mut app, "/");
    keys_typed(&mut app, "Writing.");
    common::ui::submit_search(&mut app);
    let screen = render(&mut app);
    assert!(screen.contains("→ WriteFile"), "{screen}");
    assert!(
        screen.contains("out.txt  +1 −0  (whole file written)"),
        "{screen}"
    );
    assert!(screen.contains("+hi"), "{screen}");
    // Not the JSON arguments.
    assert!(!screen.contains("\"content\""), "{screen}");
}

/// Bodies that cannot be read (the file was cut short after the session
/// was opened) are not counted as if the line did nothing: each pane says
/// how many records it could not read.
#[test]
fn records_not_read_are_said_not_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_of_thinking_tools(tmp.path());
    let mut app = app_on(&dir, 120, 40);
    assert!(!render(&mut app).contains("not read"));
    // The context files lose their bodies; the index in memory stays.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("context") {
            std::fs::write(e.path(), b"").unwrap();
        }
    }
    keys_typed(&mut app, "c");
    let screen = render(&mut app);
    assert!(app.compare_screen().is_some());
    assert!(screen.contains("records not read"), "{screen}");
}

/// The first session file of fixture case `case` ("claude-code/resume_at").
fn append_only(case: &str) -> PathBuf {
    common::append_only_sessions()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(case))
        .unwrap_or_else(|| panic!("no session in {case}"))
}

#[test]
fn a_rewind_a_tree_move_and_a_rollback_compare_from_where_they_part() {
    let cases = [
        ("claude-code/resume_at", "rewind", "claude_code_rewind"),
        ("pi/tree_nav", "/tree move", "pi_tree_move"),
        ("codex/r_revert_compact", "rollback", "codex_rollback"),
    ];
    for (case, why, snap) in cases {
        let session = append_only(case);
        // What `worldline compare --format json` says of the same pair.
        let out = common::worldline()
            .args(["compare", "--format", "json"])
            .arg(&session)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{case}: {out:?}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let names = [
            json["lines"][0]["name"].as_str().unwrap(),
            json["lines"][1]["name"].as_str().unwrap(),
        ];
        for (w, h) in SIZES {
            let mut app = app_on(&session, w, h);
            keys_typed(&mut app, "c");
            let screen = render(&mut app);
            let c = app.compare_screen().expect("c opens the compare screen");
            let cmp = c.comparison().expect("compared");
            assert_eq!(
                serde_json::json!(cmp.fork.shared),
                json["fork"]["records"],
                "{case}: the screen parts where `compare` does"
            );
            let title = format!("compare {} ↔ {}", names[0], names[1]);
            assert!(screen.contains(&title), "{case} {w}x{h}:\n{screen}");
            assert!(screen.contains("shared: "), "{case} {w}x{h}:\n{screen}");
            assert!(screen.contains(why), "{case} {w}x{h}:\n{screen}");
            insta::assert_snapshot!(format!("{snap}_{w}x{h}"), screen);
        }
    }
}

#[test]
fn c_on_a_world_line_compares_it_with_the_one_marked() {
    let twice = common::fixture_session("kimi-cli", "dmail_twice");
    for (w, h) in SIZES {
        let mut app = app_on(&twice, w, h);
        assert_eq!(app.focus(), 2, "γ, the current line, has the focus");
        // Mark α, go back to γ, compare the two: they part at ⚑1.
        keys_typed(&mut app, "hhC");
        assert_eq!(app.focus(), 0);
        assert!(
            app.status().unwrap().starts_with("α marked"),
            "{:?}",
            app.status()
        );
        keys_typed(&mut app, "llc");
        let screen = render(&mut app);
        assert_eq!(app.compare_screen().unwrap().pair(), (0, 2));
        assert!(screen.contains("compare α ↔ γ"), "{w}x{h}:\n{screen}");
        assert!(screen.contains("up to ⚑1"), "{w}x{h}:\n{screen}");
        // Back; C on α again unmarks it: c is γ and its parent again.
        key(&mut app, KeyCode::Esc);
        keys_typed(&mut app, "hhCllc");
        assert_eq!(app.compare_screen().unwrap().pair(), (1, 2));
        // A mark on the focused line itself is no pair: the parent it is.
        key(&mut app, KeyCode::Esc);
        keys_typed(&mut app, "Cc");
        assert_eq!(app.compare_screen().unwrap().pair(), (1, 2));
    }
}
