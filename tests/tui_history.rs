//! The TUI on sessions of older kimi-cli releases, drawn with TestBackend:
//! a flat 0.55 session and a 1.0 `context_sub` session show their
//! subagent, and inside it the subagent's own D-Mail world line; a
//! `/fork` and an `/undo` hang off their source's map, `o` or a click steps
//! into them and Esc back, and a fork made while the source is watched
//! appears on its map.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::ui::{press, press_code};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{Action, App, Effect, Live};
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
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
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

fn fork_undo(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-cli-history/v1_40_0_fork_undo/sessions")
        .join("e7267f0bd6f7ca742a4acd6faae02d7e")
        .join(id)
}

const SOURCE: &str = "0706220a-4234-46bf-958b-2c56b11dcb00";
const UNDO: &str = "e299ef2f-64d0-45f5-b7f1-32ec254df600";
const FORK: &str = "1daf86b9-2123-4299-843b-fa06669261a9";

/// What the runtime does with `Effect::Open`: load that session and hand
/// it over as the follower's first snapshot.
fn opened(app: &mut App, effect: Effect) -> PathBuf {
    let Effect::Open(dir) = effect else {
        panic!("expected an Open, got {effect:?}");
    };
    app.update(Live::Snapshot(Arc::new(Session::load(&dir).unwrap())));
    dir
}

/// The record a fork leaves its source at, as the row list holds it.
fn fork_point_owner(s: &Session, k: usize) -> worldline::worldline::RecordRef {
    let r = s.fork_point(&s.forks[k]).unwrap();
    s.main().owner_of(r).unwrap()
}

/// Does the selected row stand for record `r`?
fn selection_covers(app: &App, r: worldline::worldline::RecordRef) -> bool {
    let row = app.rows().row_at(app.cursor()).unwrap();
    app.shown_rows(row).contains(&app.rows().row_of(r).unwrap())
}

#[test]
fn o_steps_into_a_fork_session_and_esc_comes_back() {
    let mut app = open(&fork_undo(SOURCE));
    let source = app.session().cloned().unwrap();
    // Away from any fork point, `o` goes to the next one (the /undo's),
    // whose row is marked.
    press(&mut app, "g");
    assert!(matches!(press(&mut app, "o"), Effect::None));
    assert!(selection_covers(&app, fork_point_owner(&source, 0)));
    let screen = render(&mut app);
    let marked = screen
        .lines()
        .find(|l| l.contains("⑂ /undo e299ef2f"))
        .unwrap();
    assert!(marked.contains("three"), "{screen}");
    let here = app.selected();
    let source_screen = screen;
    // On it, `o` opens the /undo session, which says where it came from.
    let effect = press(&mut app, "o");
    let dir = opened(&mut app, effect);
    assert!(dir.ends_with(UNDO));
    assert_eq!(app.session().unwrap().id, UNDO);
    let screen = render(&mut app);
    assert!(
        screen.contains("α: ⑂ /undo of one · from ⚑5 · shares 19 records"),
        "{screen}"
    );
    // The source's map said it in the same words.
    let track = source_screen
        .lines()
        .find(|l| l.contains("└⑂ /undo · e299ef2f"))
        .unwrap();
    assert!(
        track.contains("from ⚑5 · shares 19 records"),
        "{source_screen}"
    );
    // It opens on its fork point: the last record it shares.
    let sel = screen
        .lines()
        .find(|l| l.contains("⑂ copied up to here"))
        .unwrap();
    assert!(sel.contains("⚑5"), "{screen}");
    // A late snapshot of the source (its follower stopping) is dropped.
    app.update(Live::Snapshot(source.clone()));
    assert_eq!(app.session().unwrap().id, UNDO);
    // Esc: back on the source, where we were.
    let effect = press_code(&mut app, KeyCode::Esc);
    let dir = opened(&mut app, effect);
    assert!(dir.ends_with(SOURCE));
    assert_eq!(app.session().unwrap().id, SOURCE);
    assert_eq!(app.selected(), here);
    assert!(app.status().unwrap_or("").contains("source"));
    // Nothing left to go back to: Esc stays.
    assert!(matches!(press_code(&mut app, KeyCode::Esc), Effect::None));
}

#[test]
fn brackets_stop_at_fork_and_undo_rows() {
    let mut app = open(&fork_undo(SOURCE));
    let source = app.session().cloned().unwrap();
    press(&mut app, "g");
    press(&mut app, "]");
    assert!(
        !app.status().unwrap_or("").contains("no more"),
        "{:?}",
        app.status()
    );
    assert!(selection_covers(&app, fork_point_owner(&source, 0)));
    press(&mut app, "]");
    assert!(selection_covers(&app, fork_point_owner(&source, 1)));
    press(&mut app, "[");
    assert!(selection_covers(&app, fork_point_owner(&source, 0)));
    // On the /undo session, `[` from its end reaches where it was copied.
    let mut undo = open(&fork_undo(UNDO));
    press(&mut undo, "G[");
    let screen = render(&mut undo);
    let sel = screen
        .lines()
        .find(|l| l.contains("⑂ copied up to here"))
        .unwrap();
    assert!(sel.contains("⚑5"), "{screen}");
    let here = undo.shown_rows(undo.rows().row_at(undo.cursor()).unwrap());
    assert!(here.contains(&undo.session_screen().own_fork_row().unwrap()));
}

#[test]
fn clicking_a_fork_track_enters_it_and_o_goes_back_to_the_source() {
    let mut app = open(&fork_undo(SOURCE));
    let screen = render(&mut app);
    let (y, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("└⑂ /fork · 1daf86b9"))
        .unwrap();
    let x = line.chars().position(|c| c == '└').unwrap() as u16;
    let effect = app.update(Action::Click(ratatui::layout::Position::new(x, y as u16)));
    let dir = opened(&mut app, effect);
    assert!(dir.ends_with(FORK));
    let screen = render(&mut app);
    assert!(
        screen.contains("α: ⑂ /fork of one · from ⚑6 · shares 23 records"),
        "{screen}"
    );
    // The fork has no forks of its own: `o` is the way back.
    let effect = press(&mut app, "o");
    let dir = opened(&mut app, effect);
    assert!(dir.ends_with(SOURCE));
    assert_eq!(app.session().unwrap().forks.len(), 2);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_fork_made_while_the_source_is_shown_appears_on_its_map() {
    use worldline::live::{self, LiveEvent, LiveOptions};
    let tmp = tempfile::tempdir().unwrap();
    let folder = fork_undo(SOURCE).parent().unwrap().to_path_buf();
    let work = tmp.path().join(folder.file_name().unwrap());
    copy_dir(&folder.join(SOURCE), &work.join(SOURCE));
    let (rx, _h) = live::spawn(
        work.join(SOURCE),
        LiveOptions {
            poll: true,
            poll_interval: std::time::Duration::from_millis(20),
        },
    )
    .unwrap();
    let mut seen = common::Seen::default();
    let first = seen.until_snapshot(&rx, "the first snapshot", |_| true);
    let mut app = App::new(Theme { color: false }, true, Size::new(120, 36));
    app.update(Live::Snapshot(first));
    assert!(!render(&mut app).contains("└⑂"));
    // kimi-cli's fork_session: the directory, the copied files, state.json.
    let dst = work.join(FORK);
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["context.jsonl", "wire.jsonl"] {
        std::fs::copy(folder.join(FORK).join(f), dst.join(f)).unwrap();
    }
    std::fs::copy(folder.join(FORK).join("state.json"), dst.join("state.json")).unwrap();
    // Every snapshot the follower sends goes to the app, as the runtime does.
    loop {
        let ev = seen.until(&rx, "a snapshot with the fork", |e| {
            matches!(e, LiveEvent::Snapshot(_))
        });
        let LiveEvent::Snapshot(s) = ev else {
            unreachable!()
        };
        let done = !s.forks.is_empty();
        app.update(Live::Snapshot(s));
        if done {
            break;
        }
    }
    let screen = render(&mut app);
    assert!(
        screen.contains("└⑂ /fork · 1daf86b9 · from ⚑6 · shares 23 records"),
        "{screen}"
    );
    assert!(screen.contains("⑂ /fork 1daf86b9"), "{screen}");
}
