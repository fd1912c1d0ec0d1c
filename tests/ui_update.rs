//! Pure state tests: key events drive `App::update` on the fixtures, no
//! terminal. Searches run synchronously through `search::scan`.

mod common;

use common::ui::{press, press_code, submit_search};

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Size};
use worldline::model::{Marker, Role};
use worldline::ui::app::{Action, App, Effect, LiveState, Overlay};
use worldline::ui::compose::NOT_A_CHECKPOINT;
use worldline::ui::keys::{self, Mode};
use worldline::ui::theme::Theme;
use worldline::worldline::Session;

fn fixture(name: &str) -> Arc<Session> {
    let dir = common::fixture_session("kimi-cli", name);
    Arc::new(Session::load(&dir).unwrap())
}

fn app_on(name: &str) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(80, 24));
    app.update(Action::Snapshot(fixture(name)));
    app
}

fn selected_meta(app: &App) -> worldline::model::RecordMeta {
    let r = app.selected().unwrap();
    app.session.as_ref().unwrap().record(r).unwrap().clone()
}

#[test]
fn opens_at_the_top_of_the_current_world_line() {
    let app = app_on("dmail_twice");
    assert_eq!(app.live, LiveState::Static);
    assert_eq!(
        app.focus, 2,
        "focus is the current world line (context.jsonl)"
    );
    assert_eq!(app.cursor, 0);
    assert_eq!(selected_meta(&app).role, Role::SystemPrompt);
    // 16 records of α, then β's and γ's own records.
    assert_eq!(app.rows.total, 16 + (19 - 6) + (15 - 9));
}

#[test]
fn moving_clamps_and_pages() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "k");
    assert_eq!(app.cursor, 0);
    press(&mut app, "jjj");
    assert_eq!(app.cursor, 3);
    press(&mut app, "G");
    assert_eq!(app.cursor, app.rows.len() - 1);
    press(&mut app, "j");
    assert_eq!(app.cursor, app.rows.len() - 1);
    press(&mut app, "g");
    assert_eq!(app.cursor, 0);
    press_code(&mut app, KeyCode::PageDown);
    assert!(app.cursor > 5);
    press_code(&mut app, KeyCode::End);
    assert!(app.scroll > 0, "the selection stays in view");
    let h = worldline::ui::view::areas(app.size, false).graph.height as usize;
    assert!(app.cursor >= app.scroll && app.cursor < app.scroll + h);
}

#[test]
fn brackets_walk_forks_and_dmails() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "]");
    // The fork point: the last record β shares with α (CHECKPOINT 1 note).
    assert_eq!(
        selected_meta(&app).marker.as_deref(),
        Some(&Marker::CheckpointNote(1))
    );
    press(&mut app, "]");
    let m = selected_meta(&app);
    assert!(m.tool_calls.iter().any(|c| c.name == "SendDMail"));
    assert_eq!(app.focus, 0, "the sender lives on α");
    press(&mut app, "]");
    assert!(
        matches!(selected_meta(&app).marker.as_deref(), Some(Marker::DMailInjection(m)) if m.starts_with("First fold"))
    );
    assert_eq!(app.focus, 1, "the injection begins β");
    press(&mut app, "[");
    assert!(selected_meta(&app)
        .tool_calls
        .iter()
        .any(|c| c.name == "SendDMail"));
    press(&mut app, "G]");
    assert!(app.status.as_deref().unwrap().contains("no more"));
}

#[test]
fn switching_world_lines_keeps_the_equivalent_point() {
    let mut app = app_on("dmail_twice");
    // A shared record stays selected; only the focus changes.
    press(&mut app, "jj");
    let before = app.selected();
    press(&mut app, "l");
    assert_eq!(app.focus, 0, "Tab/l wraps from γ to α");
    assert_eq!(app.selected(), before);
    press(&mut app, "l");
    assert_eq!(app.focus, 1);
    assert_eq!(app.selected(), before);
    // On α's SendDMail call (not on β), l goes to β's record at that position.
    press(&mut app, "h]]");
    assert_eq!(app.focus, 0);
    let on_alpha = app.selected().unwrap();
    press_code(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, 1);
    let r = app.selected().unwrap();
    assert_ne!(r, on_alpha);
    assert_eq!(r.record, on_alpha.record);
    assert!(app.on_line(1, r));
    press_code(&mut app, KeyCode::Left);
    assert_eq!(app.focus, 0);
}

#[test]
fn filter_and_collapse_keep_the_structure() {
    let mut app = app_on("dmail_twice");
    let all = app.rows.len();
    press(&mut app, "f");
    assert!(app.status.as_deref().unwrap().contains("user"));
    assert!(app.rows.len() < all);
    let fam = &app.session.as_ref().unwrap().agents[0].family;
    let mut roles = Vec::new();
    for i in 0..app.rows.len() {
        let r = app.rows.record_of(app.rows.row_at(i).unwrap()).unwrap();
        roles.push(fam.record(r).unwrap().role.clone());
    }
    assert!(roles.contains(&Role::User));
    // D-Mail calls stay whatever the filter, so the story still reads.
    assert!(roles.contains(&Role::Assistant));
    // Usage rows show only as a world line's last record.
    assert!(roles.iter().filter(|r| **r == Role::Usage).count() <= 3);
    press(&mut app, "ffff");
    assert!(
        app.status.as_deref().unwrap().contains("tool ReadFile"),
        "{:?}",
        app.status
    );
    for _ in 0..20 {
        press(&mut app, "f");
        if app.filter.role == worldline::ui::rows::RoleFilter::All {
            break;
        }
    }
    assert_eq!(app.rows.len(), all);
    press(&mut app, "c");
    assert!(app.rows.len() < all);
    let fam = &app.session.as_ref().unwrap().agents[0].family;
    let checkpoints = (0..app.rows.len())
        .filter(|&i| {
            let r = app.rows.record_of(app.rows.row_at(i).unwrap()).unwrap();
            fam.record(r).unwrap().role == Role::Checkpoint
        })
        .count();
    // α owns checkpoints 0-2, β its new 2 and 3, γ its new 3.
    assert_eq!(checkpoints, 6);
    press(&mut app, "c");
    assert_eq!(app.rows.len(), all);
}

fn run_search(app: &mut App, query: &str) {
    press(app, "/");
    let effect = press(app, query);
    assert!(matches!(effect, Effect::None));
    submit_search(app);
}

#[test]
fn search_is_smart_case_and_n_cycles() {
    let mut app = app_on("dmail_twice");
    run_search(&mut app, "fold");
    assert!(!app.search.running);
    // Two SendDMail calls, two injections, two "Folding context." texts share rows.
    assert!(app.search.hits.len() >= 4, "{:?}", app.search.hits);
    let first = app.cursor;
    assert!(app.status.as_deref().unwrap().contains("matches"));
    press(&mut app, "n");
    assert!(app.cursor > first);
    press(&mut app, "N");
    assert_eq!(app.cursor, first);
    let lower = app.search.hits.len();
    run_search(&mut app, "Fold");
    assert!(
        app.search.hits.len() < lower,
        "uppercase makes it case-sensitive"
    );
    // Esc while typing cancels without searching.
    press(&mut app, "/x");
    assert!(matches!(press_code(&mut app, KeyCode::Esc), Effect::None));
    assert!(app.search.input.is_none());
}

#[test]
fn selection_survives_snapshots_and_follow_jumps_to_the_newest() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "]]");
    let sel = app.selected();
    app.update(Action::Snapshot(fixture("dmail_twice")));
    assert_eq!(app.selected(), sel);
    assert_eq!(
        app.live,
        LiveState::Static,
        "an identical snapshot is no change"
    );
    press(&mut app, "F");
    assert!(app.follow);
    assert_eq!(app.cursor, app.rows.len() - 1);
    press(&mut app, "k");
    assert!(!app.follow, "moving by hand stops following");
    press(&mut app, "F");
    press(&mut app, "g");
    app.update(Action::Snapshot(fixture("dmail_twice")));
    assert!(!app.follow);
    let mut following = App::new(Theme { color: false }, true, Size::new(80, 24));
    following.update(Action::Snapshot(fixture("dmail_twice")));
    assert_eq!(following.cursor, following.rows.len() - 1);
    assert_eq!(following.live, LiveState::Live);
}

#[test]
fn a_repeated_snapshot_does_not_make_a_static_session_live() {
    let mut app = app_on("dmail_twice");
    assert_eq!(app.live, LiveState::Static);
    app.update(Action::Snapshot(fixture("dmail_twice")));
    assert_eq!(app.live, LiveState::Static, "same files, same bytes");
    app.update(Action::Snapshot(fixture("dmail_basic")));
    assert_eq!(app.live, LiveState::Live, "the files changed");
}

#[test]
fn subagents_enter_and_escape_back() {
    let mut app = app_on("subagent");
    press(&mut app, "jjj");
    let before = app.selected();
    press(&mut app, "s");
    assert_eq!(app.overlay, Overlay::Subagents { sel: 0 });
    press_code(&mut app, KeyCode::Enter);
    assert_eq!(app.overlay, Overlay::None);
    assert_eq!(app.agent, 1);
    assert_eq!(app.selected().unwrap().agent, 1);
    press_code(&mut app, KeyCode::Esc);
    assert_eq!(app.agent, 0);
    assert_eq!(app.selected(), before);
    // On the Agent call itself, s enters directly.
    let call = app.session.as_ref().unwrap().agents[1].parent_call.unwrap();
    while app.selected() != Some(call) {
        press(&mut app, "j");
    }
    press(&mut app, "s");
    assert_eq!(app.agent, 1);
    let mut plain = app_on("dmail_twice");
    press(&mut plain, "s");
    assert!(plain.status.as_deref().unwrap().contains("no subagents"));
}

#[test]
fn help_dmail_hint_expand_and_quit() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "?");
    assert_eq!(app.overlay, Overlay::Help);
    press(&mut app, "j");
    assert_eq!(app.overlay, Overlay::None);
    assert_eq!(app.cursor, 0, "the key that closes help does nothing else");
    press(&mut app, "d");
    assert_eq!(app.status.as_deref(), Some(NOT_A_CHECKPOINT));
    press_code(&mut app, KeyCode::Enter);
    assert!(app.expanded);
    press_code(&mut app, KeyCode::PageDown);
    assert!(app.detail_scroll > 0);
    press_code(&mut app, KeyCode::Esc);
    assert!(!app.expanded);
    assert!(matches!(press(&mut app, "q"), Effect::Quit));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(
        app.update(keys::key(Mode::Normal, &ctrl_c).unwrap()),
        Effect::Quit
    ));
}

#[test]
fn mouse_clicks_select_and_the_wheel_scrolls() {
    let mut app = app_on("dmail_twice");
    let g = worldline::ui::view::areas(app.size, false).graph;
    app.update(Action::Click(Position::new(g.x + 5, g.y + 4)));
    assert_eq!(app.cursor, 4);
    app.update(Action::Wheel(3));
    assert_eq!(app.cursor, 7);
    app.update(Action::Click(Position::new(0, 0)));
    assert_eq!(app.cursor, 7, "clicks outside the graph select nothing");
    app.update(Action::Resize(Size::new(120, 40)));
    assert_eq!(app.size, Size::new(120, 40));
}

#[test]
fn picker_opens_the_chosen_session() {
    let s = fixture("dmail_twice");
    let summary = worldline::session::summarize(&s.dir, &Default::default());
    let other = worldline::session::summarize(&fixture("dmail_basic").dir, &Default::default());
    let mut app = App::new(Theme { color: false }, false, Size::new(80, 24))
        .with_picker(vec![summary, other.clone()]);
    press(&mut app, "j");
    let Effect::Open(dir) = press_code(&mut app, KeyCode::Enter) else {
        panic!("Enter opens");
    };
    assert_eq!(dir, other.dir);
    assert!(matches!(press(&mut app, "q"), Effect::Quit));
}
