//! Pure state tests: key events drive `App::update` on the fixtures, no
//! terminal. Searches run synchronously through `search::scan`.

mod common;

use common::ui::{press, press_code, submit_search};

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Size};
use worldline::model::{Marker, Role};
use worldline::ui::app::{Action, App, Effect, Live, LiveState, Overlay};
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
    app.update(Live::Snapshot(fixture(name)));
    app
}

fn selected_meta(app: &App) -> worldline::model::RecordMeta {
    let r = app.selected().unwrap();
    app.session().unwrap().record(r).unwrap().clone()
}

/// The records the visible rows stand for (a step's head, or the record).
fn visible_metas(app: &App) -> Vec<worldline::model::RecordMeta> {
    let fam = &app.session().unwrap().agents[app.agent()].family;
    (0..app.rows().len())
        .map(|i| {
            let r = app.rows().record_of(app.rows().row_at(i).unwrap()).unwrap();
            fam.record(r).unwrap().clone()
        })
        .collect()
}

#[test]
fn a_static_session_opens_on_its_current_head() {
    let app = app_on("dmail_twice");
    assert_eq!(app.live(), LiveState::Static);
    assert_eq!(
        app.focus(),
        2,
        "focus is the current world line (context.jsonl)"
    );
    assert_eq!(app.cursor(), app.rows().len() - 1, "the head is selected");
    let r = app.selected().unwrap();
    assert_eq!(r.line, 2);
    assert!(
        app.rows()
            .step_rows(app.rows().row_at(app.cursor()).unwrap())
            .end
            == app.rows().total
    );
    // 16 records of α, then β's and γ's own records.
    assert_eq!(app.rows().total, 16 + (19 - 6) + (15 - 9));
}

#[test]
fn one_row_per_step_and_no_bare_bookkeeping() {
    let mut app = app_on("dmail_twice");
    // α: the system prompt, ⚑0 ⚑1 ⚑2; β: its D-Mail, ⚑2 ⚑3; γ: its D-Mail, ⚑3.
    assert_eq!(app.rows().len(), 9);
    assert_eq!(app.rows().step_count(), 9);
    for m in visible_metas(&app) {
        assert!(
            !matches!(m.marker().as_deref(), Some(Marker::CheckpointNote(_)))
                && *m.role() != Role::Usage,
            "{m:?}"
        );
    }
    // The detail pane reads a folded step through its lead, not its ⚑.
    press(&mut app, "g");
    press(&mut app, "jj");
    let lead = app.detail_record().unwrap();
    let fam = &app.session().unwrap().agents[0].family;
    assert_eq!(*fam.record(lead).unwrap().role(), Role::Assistant);
    assert_eq!(*selected_meta(&app).role(), Role::Checkpoint);
    // Enter unfolds the step: its records show under it, bookkeeping not.
    let head = app.cursor();
    press_code(&mut app, KeyCode::Enter);
    assert!(!app.expanded());
    assert!(app.rows().len() > 9);
    assert_eq!(app.cursor(), head, "the head stays selected");
    let unfolded = visible_metas(&app);
    assert!(unfolded.iter().any(|m| *m.role() == Role::Tool));
    assert!(unfolded
        .iter()
        .all(|m| !matches!(m.marker().as_deref(), Some(Marker::CheckpointNote(_)))));
    // Enter on a record of the step opens it whole; ← folds the step.
    press(&mut app, "j");
    assert_eq!(*selected_meta(&app).role(), Role::Assistant);
    press_code(&mut app, KeyCode::Enter);
    assert!(app.expanded());
    press_code(&mut app, KeyCode::Esc);
    press_code(&mut app, KeyCode::Left);
    assert_eq!(app.rows().len(), 9);
    assert_eq!(app.cursor(), head);
    // a (or Ctrl-O) shows every record; again goes back to steps.
    press(&mut app, "a");
    assert_eq!(app.rows().len(), app.rows().total);
    press(&mut app, "a");
    assert_eq!(app.rows().len(), 9);
}

#[test]
fn moving_clamps_and_pages() {
    let mut app = app_on("thinking_tools");
    press(&mut app, "g");
    press(&mut app, "k");
    assert_eq!(app.cursor(), 0);
    press(&mut app, "jj");
    assert_eq!(app.cursor(), 2);
    press(&mut app, "G");
    assert_eq!(app.cursor(), app.rows().len() - 1);
    press(&mut app, "j");
    assert_eq!(app.cursor(), app.rows().len() - 1);
    press(&mut app, "g");
    assert_eq!(app.cursor(), 0);
    press_code(&mut app, KeyCode::End);
    let h = app.areas().graph.height as usize;
    assert!(app.cursor() >= app.scroll() && app.cursor() < app.scroll() + h);
}

#[test]
fn jumps_keep_rows_of_context_around_the_selection() {
    let mut app = App::new(Theme { color: false }, false, Size::new(80, 24));
    app.update(Live::Snapshot(fixture("dmail_twice")));
    press(&mut app, "a");
    press(&mut app, "g");
    let h = app.areas().graph.height as usize;
    let off = worldline::ui::geometry::scroll_off(h);
    assert!(off > 0);
    for _ in 0..app.rows().len() {
        press(&mut app, "j");
        if app.cursor() + 1 < app.rows().len() - off {
            assert!(
                app.cursor() + off < app.scroll() + h,
                "{off} rows stay below the selection"
            );
        }
    }
    press(&mut app, "g");
    press(&mut app, "]]]");
    assert!(
        app.cursor() >= app.scroll() + off,
        "and above it after a jump"
    );
}

#[test]
fn brackets_walk_forks_and_dmails_step_by_step() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "g");
    let mut stops = Vec::new();
    for _ in 0..10 {
        let before = app.cursor();
        press(&mut app, "]");
        if app.cursor() == before {
            break;
        }
        stops.push(app.cursor());
    }
    assert!(stops.windows(2).all(|w| w[0] < w[1]), "{stops:?}");
    assert!(app.status().unwrap().contains("no more"));
    // The stops include both D-Mail landings, each the first step of its line.
    for line in [1, 2] {
        let first = app.rows().position_of(app.rows().line_rows(line).start);
        assert!(stops.contains(&first), "{line}: {stops:?}");
    }
    press(&mut app, "[");
    assert!(app.cursor() < *stops.last().unwrap());
}

#[test]
fn switching_world_lines_keeps_the_equivalent_point() {
    let mut app = app_on("dmail_twice");
    // A shared record stays selected; only the focus changes.
    press(&mut app, "gjj");
    let before = app.selected();
    press(&mut app, "l");
    assert_eq!(app.focus(), 0, "Tab/l wraps from γ to α");
    assert_eq!(app.selected(), before);
    press(&mut app, "l");
    assert_eq!(app.focus(), 1);
    assert_eq!(app.selected(), before);
    assert!(app.status().unwrap().starts_with("β: back to ⚑1 from α"));
    press_code(&mut app, KeyCode::Tab);
    assert_eq!(app.focus(), 2);
    press_code(&mut app, KeyCode::BackTab);
    assert_eq!(app.focus(), 1);
}

#[test]
fn the_filter_menu_counts_and_keeps_the_structure() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "f");
    assert!(matches!(app.overlay(), Overlay::Filter { sel: 0 }));
    let items = app.filter_items();
    assert_eq!(items[0].count, 9, "steps");
    assert_eq!(items[1].count, app.rows().total, "every record");
    let user = items
        .iter()
        .position(|i| i.label == "user messages")
        .unwrap();
    let read = items.iter().find(|i| i.label == "tool ReadFile").unwrap();
    assert_eq!(read.count, 1);
    // Pick "user messages": no checkpoint notes, D-Mails still shown.
    for _ in 0..user {
        press(&mut app, "j");
    }
    press_code(&mut app, KeyCode::Enter);
    assert_eq!(*app.overlay(), Overlay::None);
    assert!(app.status().unwrap().contains("user messages"));
    let metas = visible_metas(&app);
    assert!(metas
        .iter()
        .any(|m| *m.role() == Role::User && m.marker().is_none()));
    assert!(metas
        .iter()
        .all(|m| !matches!(m.marker().as_deref(), Some(Marker::CheckpointNote(_)))));
    assert!(metas
        .iter()
        .any(|m| m.tool_calls().iter().any(|c| c.name() == "SendDMail")));
    // Esc closes the menu without changing anything; then back to steps.
    let n = app.rows().len();
    press(&mut app, "f");
    press_code(&mut app, KeyCode::Esc);
    assert_eq!(app.rows().len(), n);
    press(&mut app, "f");
    press(&mut app, "g");
    press_code(&mut app, KeyCode::Enter);
    assert_eq!(app.rows().len(), 9);
}

#[test]
fn e_jumps_to_errors_and_refused_dmails() {
    let mut app = app_on("dmail_errors");
    press(&mut app, "g");
    press(&mut app, "e");
    assert_eq!(app.status(), Some("tool error"));
    let first = app.cursor();
    // The step holds a refused D-Mail's result.
    let fam = &app.session().unwrap().agents[0].family;
    let rows = app.rows().step_rows(app.rows().row_at(first).unwrap());
    assert!(rows.clone().any(|row| {
        let r = app.rows().record_of(row).unwrap();
        matches!(
            fam.record(r).unwrap().marker().as_deref(),
            Some(Marker::DMailResult(Err(_)))
        )
    }));
    press(&mut app, "e");
    assert!(app.cursor() > first);
    press(&mut app, "E");
    assert_eq!(app.cursor(), first);
    press(&mut app, "G");
    press(&mut app, "e");
    assert!(app.status().unwrap().contains("no more errors"));
}

fn run_search(app: &mut App, query: &str) {
    press(app, "/");
    let effect = press(app, query);
    assert!(matches!(effect, Effect::None));
    submit_search(app);
}

#[test]
fn search_is_smart_case_counts_i_of_n_and_survives_snapshots() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "a");
    run_search(&mut app, "fold");
    assert!(!app.search().running);
    // Two SendDMail calls, two injections, two "Folding context." texts share rows.
    assert!(app.search().hits.len() >= 4, "{:?}", app.search().hits);
    let n = app.search().hits.len();
    assert!(app.status().unwrap().contains(&format!("hit 1/{n}")));
    let first = app.cursor();
    press(&mut app, "n");
    assert!(app.cursor() > first);
    assert!(app.status().unwrap().contains(&format!("hit 2/{n}")));
    // A live snapshot keeps the hits and the place among them.
    app.update(Live::Snapshot(fixture("dmail_twice")));
    assert_eq!(app.search().hits.len(), n);
    press(&mut app, "N");
    assert_eq!(app.cursor(), first);
    assert!(app.status().unwrap().contains(&format!("hit 1/{n}")));
    // In the step view several hits can share a step: n still walks them all.
    press(&mut app, "a");
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..n {
        press(&mut app, "n");
        seen.insert(app.status().map(str::to_string).unwrap());
    }
    assert_eq!(seen.len(), n, "{seen:?}");
    let lower = app.search().hits.len();
    run_search(&mut app, "Fold");
    assert!(
        app.search().hits.len() < lower,
        "uppercase makes it case-sensitive"
    );
    // Esc while typing cancels without searching.
    press(&mut app, "/x");
    assert!(matches!(press_code(&mut app, KeyCode::Esc), Effect::None));
    assert!(app.search().input.is_none());
}

/// A kimi-cli session dir holding dmail_twice's first `lines` world lines
/// (as they were on disk when that many existed).
fn growing(dir: &std::path::Path, lines: usize) {
    let src = common::fixture_session("kimi-cli", "dmail_twice");
    let copy = |from: &str, to: &str| std::fs::copy(src.join(from), dir.join(to)).unwrap();
    match lines {
        2 => {
            copy("context_1.jsonl", "context_1.jsonl");
            copy("context_2.jsonl", "context.jsonl");
        }
        _ => {
            copy("context_2.jsonl", "context_2.jsonl");
            copy("context.jsonl", "context.jsonl");
        }
    }
}

#[test]
fn following_shows_the_leap_to_a_new_world_line() {
    let tmp = tempfile::tempdir().unwrap();
    growing(tmp.path(), 2);
    let mut app = App::new(Theme { color: false }, true, Size::new(80, 24));
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    assert_eq!(app.focus(), 1);
    assert!(app.leap().is_none());
    growing(tmp.path(), 3);
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    let leap = app
        .leap()
        .expect("a new world line while following is a leap");
    assert_eq!(leap.line, 2);
    assert_eq!(app.focus(), 2);
    // The new line's first step (the D-Mail that made it) is selected, and
    // the map's arc for it is lit; the status says what happened.
    let first = app.rows().position_of(app.rows().line_rows(2).start);
    assert_eq!(app.cursor(), first);
    assert!(
        app.status()
            .unwrap()
            .contains("new world line · γ: back to ⚑2 from β"),
        "{:?}",
        app.status()
    );
    assert!(app.follow(), "following resumes after the leap");
    // However long the status, the 80-column footer keeps the way to help and out.
    app.prepare();
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
    term.draw(|f| {
        worldline::ui::view::draw(f, &app);
    })
    .unwrap();
    let screen = term.backend().to_string();
    let footer = screen
        .lines()
        .last()
        .unwrap()
        .trim_end_matches('"')
        .trim_end();
    assert!(footer.contains("new world line"), "{screen}");
    assert!(
        footer.ends_with(keys::FOOTER_TAIL) || footer.ends_with("? q"),
        "{screen}"
    );
    // Once the leap has been shown, the next snapshot follows the head again.
    app.set_leap_time(std::time::Duration::ZERO);
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    assert!(app.leap().is_none());
    assert_eq!(app.cursor(), app.rows().len() - 1);
}

/// dmail_twice with its three world lines, γ (context.jsonl) cut to its
/// first `keep` lines: γ growing as the agent writes.
fn growing_gamma(dir: &std::path::Path, keep: usize) {
    growing(dir, 2);
    growing(dir, 3);
    let src = common::fixture_session("kimi-cli", "dmail_twice");
    let text = std::fs::read_to_string(src.join("context.jsonl")).unwrap();
    let cut: String = text.split_inclusive('\n').take(keep).collect();
    std::fs::write(dir.join("context.jsonl"), cut).unwrap();
}

#[test]
fn a_caption_in_the_status_line_is_said_again_as_its_line_grows() {
    let tmp = tempfile::tempdir().unwrap();
    growing_gamma(tmp.path(), 11);
    let mut app = App::new(Theme { color: false }, false, Size::new(100, 24));
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    assert_eq!(app.map().tracks.len(), 3);
    press(&mut app, "hl");
    assert_eq!(app.focus(), 2);
    let before = app.status().map(str::to_string).unwrap();
    assert!(before.starts_with("γ: back to ⚑2 from β"), "{before}");
    // γ grows: the status keeps saying γ's caption, with the new share.
    growing_gamma(tmp.path(), 100);
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    let after = app.status().map(str::to_string).unwrap();
    assert_ne!(before, after, "a grown line's caption is said again");
    assert_eq!(after, format!("{} (context.jsonl)", app.map().caption(2)));
    // A message said before a new world line appeared is about fewer lines.
    let tmp2 = tempfile::tempdir().unwrap();
    growing(tmp2.path(), 2);
    let mut app = App::new(Theme { color: false }, false, Size::new(100, 24));
    app.update(Live::Snapshot(Arc::new(
        Session::load(tmp2.path()).unwrap(),
    )));
    app.say("D-Mail landed: back at checkpoint 2, world line β begins with it".into());
    growing(tmp2.path(), 3);
    app.update(Live::Snapshot(Arc::new(
        Session::load(tmp2.path()).unwrap(),
    )));
    assert_eq!(app.status(), None, "a new world line makes it stale");
}

#[test]
fn a_leaps_caption_goes_with_the_leap() {
    let tmp = tempfile::tempdir().unwrap();
    growing(tmp.path(), 2);
    let mut app = App::new(Theme { color: false }, true, Size::new(100, 24));
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    growing_gamma(tmp.path(), 11);
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    assert!(app.status().unwrap().starts_with("new world line · γ"));
    // The leap is over; γ grows: "new world line · … 5% new" would lie.
    app.set_leap_time(std::time::Duration::ZERO);
    std::thread::sleep(std::time::Duration::from_millis(5));
    growing_gamma(tmp.path(), 100);
    app.update(Live::Snapshot(Arc::new(Session::load(tmp.path()).unwrap())));
    assert_eq!(app.status(), None);
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    app.prepare();
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        worldline::ui::view::draw(f, app);
    })
    .unwrap();
    term.backend().to_string()
}

#[test]
fn the_arc_row_shows_the_focused_lines_d_mail() {
    let mut app = app_on("dmail_twice");
    app.update(worldline::ui::app::Msg::Resize(Size::new(100, 30)));
    let gamma = screen(&mut app, 100, 30);
    assert!(gamma.contains("✉ β⚑3 → ⚑2"), "{gamma}");
    // h, h: α, which sent the D-Mail that made β, not the one into γ.
    press(&mut app, "hh");
    assert_eq!(app.focus(), 0);
    let alpha = screen(&mut app, 100, 30);
    assert!(!alpha.contains("β⚑3 → ⚑2"), "{alpha}");
    assert!(alpha.contains("✉ α⚑"), "{alpha}");
}

#[test]
fn selection_survives_snapshots_and_follow_jumps_to_the_newest() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "g]]");
    let sel = app.selected();
    app.update(Live::Snapshot(fixture("dmail_twice")));
    assert_eq!(app.selected(), sel);
    assert_eq!(
        app.live(),
        LiveState::Static,
        "an identical snapshot is no change"
    );
    press(&mut app, "F");
    assert!(app.follow());
    assert_eq!(app.cursor(), app.rows().len() - 1);
    press(&mut app, "k");
    assert!(!app.follow(), "moving by hand stops following");
    press(&mut app, "F");
    press(&mut app, "g");
    app.update(Live::Snapshot(fixture("dmail_twice")));
    assert!(!app.follow());
    let mut following = App::new(Theme { color: false }, true, Size::new(80, 24));
    following.update(Live::Snapshot(fixture("dmail_twice")));
    assert_eq!(following.cursor(), following.rows().len() - 1);
    assert_eq!(following.live(), LiveState::Live);
}

#[test]
fn a_repeated_snapshot_does_not_make_a_static_session_live() {
    let mut app = app_on("dmail_twice");
    assert_eq!(app.live(), LiveState::Static);
    app.update(Live::Snapshot(fixture("dmail_twice")));
    assert_eq!(app.live(), LiveState::Static, "same files, same bytes");
    app.update(Live::Snapshot(fixture("dmail_basic")));
    assert_eq!(app.live(), LiveState::Live, "the files changed");
}

#[test]
fn subagents_enter_and_escape_back() {
    let mut app = app_on("subagent");
    press(&mut app, "a");
    press(&mut app, "gjjj");
    let before = app.selected();
    press(&mut app, "s");
    assert_eq!(*app.overlay(), Overlay::Subagents { sel: 0 });
    press_code(&mut app, KeyCode::Enter);
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(app.agent(), 1);
    assert_eq!(app.selected().unwrap().agent, 1);
    press_code(&mut app, KeyCode::Esc);
    assert_eq!(app.agent(), 0);
    assert_eq!(app.selected(), before);
    // On the Agent call itself, s enters directly.
    let call = app.session().unwrap().agents[1].parent_call.unwrap();
    while app.selected() != Some(call) {
        press(&mut app, "j");
    }
    press(&mut app, "s");
    assert_eq!(app.agent(), 1);
    let mut plain = app_on("dmail_twice");
    press(&mut plain, "s");
    assert!(plain.status().unwrap().contains("no subagents"));
}

#[test]
fn help_dmail_hint_expand_and_quit() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "g?");
    assert_eq!(*app.overlay(), Overlay::Help { scroll: 0 });
    // j/k scroll the help (it outgrows 80×24); any other key closes it.
    press(&mut app, "jjk");
    assert_eq!(*app.overlay(), Overlay::Help { scroll: 1 });
    press(&mut app, "q");
    assert_eq!(
        *app.overlay(),
        Overlay::None,
        "q closes the help, it doesn't quit"
    );
    assert_eq!(
        app.cursor(),
        0,
        "the keys that scroll and close help do nothing else"
    );
    press(&mut app, "d");
    assert_eq!(app.status(), Some(NOT_A_CHECKPOINT));
    press(&mut app, "a");
    press_code(&mut app, KeyCode::Enter);
    assert!(app.expanded());
    press_code(&mut app, KeyCode::PageDown);
    assert!(app.detail_scroll() > 0);
    press_code(&mut app, KeyCode::Esc);
    assert!(!app.expanded());
    assert!(matches!(press(&mut app, "q"), Effect::Quit));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(
        app.update(keys::key(Mode::Normal, &ctrl_c).unwrap()),
        Effect::Quit
    ));
}

#[test]
fn mouse_clicks_select_rows_and_map_tracks() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "g");
    let a = app.areas();
    app.update(Action::Click(Position::new(a.graph.x + 5, a.graph.y + 4)));
    assert_eq!(app.cursor(), 4);
    app.update(Action::Wheel(3));
    assert_eq!(app.cursor(), 7);
    app.update(Action::Click(Position::new(0, 0)));
    assert_eq!(app.cursor(), 7, "clicks on the header select nothing");
    // The map's second track row is β: a click goes to where β begins.
    app.update(Action::Click(Position::new(10, a.map.y + 2)));
    assert_eq!(app.focus(), 1);
    assert_eq!(
        app.cursor(),
        app.rows().position_of(app.rows().line_rows(1).start)
    );
    // m hides the map and gives its rows to the list.
    let h = app.areas().graph.height;
    press(&mut app, "m");
    assert_eq!(app.areas().map.height, 0);
    assert!(app.areas().graph.height > h);
    app.update(worldline::ui::app::Msg::Resize(Size::new(120, 40)));
    assert_eq!(app.size(), Size::new(120, 40));
}

#[test]
fn picker_opens_the_chosen_session() {
    let s = fixture("dmail_twice");
    let summary = worldline::sources::kimi_cli::share::summarize(&s.dir, &Default::default());
    let other = worldline::sources::kimi_cli::share::summarize(
        &fixture("dmail_basic").dir,
        &Default::default(),
    );
    let mut app = App::new(Theme { color: false }, false, Size::new(80, 24))
        .with_picker(vec![summary, other.clone()]);
    press(&mut app, "j");
    let Effect::Open(dir) = press_code(&mut app, KeyCode::Enter) else {
        panic!("Enter opens");
    };
    assert_eq!(dir, other.dir);
    assert!(matches!(press(&mut app, "q"), Effect::Quit));
}

#[test]
fn d_on_a_folded_step_targets_its_checkpoint() {
    // γ's first step begins with its D-Mail, after the ⚑2 it shares with β.
    let mut app = app_on("dmail_twice");
    let first = app.rows().position_of(app.rows().line_rows(2).start);
    press(&mut app, "g");
    for _ in 0..first {
        press(&mut app, "j");
    }
    assert_eq!(
        selected_meta(&app)
            .marker()
            .as_deref()
            .map(|m| matches!(m, Marker::DMailInjection(_))),
        Some(true)
    );
    let Effect::Probe(target) = press(&mut app, "d") else {
        panic!("d asks whether the agent is live: {:?}", app.status());
    };
    assert_eq!(target.back, worldline::ui::compose::Back::Checkpoint(2));
}

#[test]
fn only_input_reaches_a_popup() {
    let mut app = app_on("dmail_twice");
    press(&mut app, "?");
    // Messages from the follower, the search worker or a resize are not
    // keys: the help stays open.
    app.update(Live::Snapshot(fixture("dmail_twice")));
    app.update(worldline::ui::app::Msg::Resize(Size::new(100, 30)));
    assert_eq!(*app.overlay(), Overlay::Help { scroll: 0 });
    press(&mut app, "q");
    assert_eq!(*app.overlay(), Overlay::None);
}

#[test]
fn a_click_on_a_scrolled_picker_picks_the_row_drawn_there() {
    let names = [
        "dmail_twice",
        "dmail_basic",
        "dmail_errors",
        "subagent",
        "thinking_tools",
        "with_clear",
        "with_compact",
    ];
    let sessions: Vec<_> = names
        .iter()
        .map(|n| {
            worldline::sources::kimi_cli::share::summarize(&fixture(n).dir, &Default::default())
        })
        .collect();
    let first_id = sessions[0].id.clone();
    let mut app = App::new(Theme { color: false }, false, Size::new(80, 8)).with_picker(sessions);
    press(&mut app, "jjjjj");
    let list = worldline::ui::geometry::picker_list_area(app.size());
    let screen = screen(&mut app, 80, 8);
    let drawn = screen.lines().nth(list.y as usize).unwrap();
    assert!(drawn.contains(" · "), "{screen}");
    assert!(
        !drawn.contains(&first_id[..8]),
        "the list is scrolled: {screen}"
    );
    app.update(Action::Click(Position::new(3, list.y)));
    let Effect::Open(dir) = press_code(&mut app, KeyCode::Enter) else {
        panic!("Enter opens the session clicked")
    };
    let id = dir.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        drawn.contains(&id[..8]),
        "{id} opened; drawn there: {drawn}"
    );
}

#[test]
fn app_and_view_do_not_import_each_other() {
    let src = |f: &str| {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/ui")
                .join(f),
        )
        .unwrap()
    };
    // Geometry is shared through ui/geometry.rs; drawing reads the app.
    // Updating a screen never draws, and never binds a key itself.
    for f in [
        "app.rs",
        "session.rs",
        "msg.rs",
        "popup.rs",
        "hop.rs",
        "dmail.rs",
    ] {
        assert!(!src(f).contains("super::view::draw"), "{f}");
        assert!(!src(f).contains("KeyCode"), "{f}");
    }
    assert!(!src("keys.rs").contains("super::view"));
}

/// The detail pane's text for record `r` of dmail_twice, its body loaded.
fn detail_text(s: &Session, r: worldline::worldline::RecordRef) -> String {
    let mut loaded = worldline::ui::cache::Cache::default();
    loaded.body(s, r);
    worldline::ui::detail::lines(s, r, &loaded, &Theme { color: false })
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

#[test]
fn the_detail_names_tools_and_world_lines_not_call_ids_or_files() {
    let s = fixture("dmail_twice");
    let f = &s.agents[0].family;
    let at = |line: usize, role: Role| {
        let record = f.files[line]
            .records
            .iter()
            .position(|m| *m.role() == role)
            .unwrap();
        f.owner(line, record).unwrap()
    };
    // α's ReadFile result says which tool it answers, not `call t1`.
    let result = detail_text(&s, at(0, Role::Tool));
    assert!(result.contains("↳ result of ReadFile"), "{result}");
    assert!(!result.contains("t1"), "{result}");
    // β begins with α's D-Mail: said with names, not call ids or files.
    let first = f.lines[1].shared;
    let begins = detail_text(&s, f.owner(1, first).unwrap());
    assert!(
        begins.contains("world line β begins: ✉ D-Mail from α → ⚑1"),
        "{begins}"
    );
    for raw in ["c2", "context_1.jsonl", "[after", "⟲"] {
        assert!(!begins.contains(raw), "{raw}: {begins}");
    }
}
