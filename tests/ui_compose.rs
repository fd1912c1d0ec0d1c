//! D-Mail compose in the TUI, against a real DenwaServer: keys drive
//! `App::update`, the effects it returns (liveness probe, send) run
//! synchronously here, and the screen is drawn with TestBackend.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Size};
use ratatui::Terminal;
use tempfile::TempDir;
use worldline::denwa::{DMail, DenwaRenji, DenwaServer, ServerConfig};
use worldline::kimi_writer::{Json, Message, SessionWriter, ToolCall, ToolOutput};
use worldline::model::{Marker, Role};
use worldline::ui::app::{Action, App, Denwa, Effect, Live, Overlay};
use worldline::ui::compose::{self, Note};
use worldline::ui::keys::{self, Mode};
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::{RecordRef, Session};

const MESSAGE: &str = "q is a letter too\nthe tests live in tests/, not src/";

/// A session with two world lines (one D-Mail to ⚑1 already happened) and,
/// when `live`, a DenwaServer whose renji has 3 checkpoints.
struct Setup {
    _runtime: TempDir,
    _root: TempDir,
    dir: PathBuf,
    writer: SessionWriter,
    renji: Arc<Mutex<DenwaRenji>>,
    server: Option<DenwaServer>,
}

fn setup(live: bool) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let dir = root.path().join("0a1b2c3d-0000-4000-8000-00000000c0de");
    let mut w = SessionWriter::create(&dir, true).unwrap();
    w.system_prompt("You are a test agent.").unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::user("count the files")).unwrap();
    w.message(&Message::assistant("I will look.")).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant("old step")).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant("went the wrong way"))
        .unwrap();
    w.revert_to_checkpoint(1, "try the other directory")
        .unwrap();
    w.message(&Message::assistant("new step")).unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::assistant("working")).unwrap();
    w.message(&Message::assistant("still working")).unwrap();
    serve(root, runtime, dir, w, live)
}

/// A Setup around a written session: its renji has 3 checkpoints and, when
/// `live`, a DenwaServer in its own runtime dir.
fn serve(
    root: TempDir,
    runtime: TempDir,
    dir: PathBuf,
    writer: SessionWriter,
    live: bool,
) -> Setup {
    let mut r = DenwaRenji::new();
    r.set_n_checkpoints(3);
    let renji = Arc::new(Mutex::new(r));
    let server = live.then(|| {
        DenwaServer::start(
            ServerConfig {
                session_dir: dir.clone(),
                session_id: "c0de".into(),
                agent: None,
                server_name: "ui-compose-test 1.0".into(),
                runtime_dir: Some(runtime.path().to_owned()),
            },
            Arc::clone(&renji),
        )
        .unwrap()
    });
    Setup {
        _runtime: runtime,
        _root: root,
        dir,
        writer,
        renji,
        server,
    }
}

fn app_on(dir: &Path, w: u16, h: u16) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
    // The header would show the temp dir's random name.
    app.set_work_dir(Some("/home/user/tally".into()));
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    app
}

/// Runs what the runtime would (synchronously) until nothing is left.
fn run(app: &mut App, mut effect: Effect) -> Effect {
    loop {
        effect = match effect {
            Effect::Probe(target) => {
                let live = compose::probe(&target);
                app.update(Denwa::Probed { target, live })
            }
            Effect::SendDMail(request) => {
                let reply = compose::send(&request);
                app.update(Denwa::Reply { request, reply })
            }
            other => return other,
        };
    }
}

fn key_mod(app: &mut App, code: KeyCode, m: KeyModifiers) -> Effect {
    match keys::key(app.mode(), &KeyEvent::new(code, m)) {
        Some(a) => {
            let e = app.update(a);
            run(app, e)
        }
        None => Effect::None,
    }
}

fn key(app: &mut App, code: KeyCode) -> Effect {
    key_mod(app, code, KeyModifiers::NONE)
}

/// Types text the way a user does: `\n` is Enter.
fn type_text(app: &mut App, text: &str) -> Effect {
    let mut last = Effect::None;
    for c in text.chars() {
        last = match c {
            '\n' => key(app, KeyCode::Enter),
            c => key(app, KeyCode::Char(c)),
        };
    }
    last
}

fn ctrl_s(app: &mut App) -> Effect {
    key_mod(app, KeyCode::Char('s'), KeyModifiers::CONTROL)
}

fn session(app: &App) -> Arc<Session> {
    app.session().cloned().unwrap()
}

/// The record of world line `line` at index `i` (by owner).
fn rec(app: &App, line: usize, i: usize) -> RecordRef {
    let s = session(app);
    s.agents[0].family.owner(line, i).unwrap()
}

fn select_at(app: &mut App, line: usize, i: usize) {
    let r = rec(app, line, i);
    let row = app.rows().row_of(r).expect("record shown");
    // A step row stands for its records: show every record to pick one.
    if app.rows().row_at(app.rows().position_of(row)) != Some(row) {
        app.update(Action::Every);
    }
    let pos = app.rows().position_of(row);
    app.update(Action::Top);
    app.update(Action::Move(pos as isize));
    assert_eq!(app.selected(), Some(r));
}

fn compose_of(app: &App) -> &compose::Compose {
    match app.overlay() {
        Overlay::Compose(c) => c,
        other => panic!("compose is not open: {other:?}"),
    }
}

fn render(app: &mut App) -> String {
    app.prepare();
    draw_only(app)
}

/// A frame from what the app holds, reading nothing.
fn draw_only(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

/// `f` run while the session's files are not where the index says.
fn with_files_gone<T>(dir: &Path, f: impl FnOnce() -> T) -> T {
    let away = dir.with_extension("away");
    std::fs::rename(dir, &away).unwrap();
    let out = f();
    std::fs::rename(&away, dir).unwrap();
    out
}

// Current world line (context.jsonl): 0 sys, 1 ⚑0, 2 note, 3 user, 4 asst,
// 5 ⚑1, 6 note, 7 D-Mail, 8 asst, 9 ⚑2, 10 note, 11 asst, 12 asst.
// Old world line (context_1.jsonl): … 7 asst, 8 ⚑2, 9 note, 10 asst.
const CURRENT: usize = 1;
const OLD: usize = 0;

#[test]
fn layout_of_the_test_session() {
    let s = setup(false);
    let app = app_on(&s.dir, 80, 24);
    let ses = session(&app);
    let f = &ses.agents[0].family;
    assert_eq!(f.lines.len(), 2);
    assert!(f.lines[CURRENT].current);
    let cp = |line, i| ses.record(rec(&app, line, i)).unwrap().checkpoint();
    assert_eq!(cp(CURRENT, 9), Some(2));
    assert_eq!(cp(CURRENT, 5), Some(1));
    assert_eq!(cp(OLD, 8), Some(2));
    assert_eq!(f.line_len(CURRENT), 13);
}

#[test]
fn compose_send_accept_then_refuse() {
    let s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    let cp2 = rec(&app, CURRENT, 9);
    select_at(&mut app, CURRENT, 9);
    assert!(matches!(key(&mut app, KeyCode::Char('d')), Effect::None));
    let c = compose_of(&app);
    assert_eq!(c.target.back, worldline::ui::compose::Back::Checkpoint(2));
    assert_eq!(c.target.record, cp2);
    // ⚑2 and its note are written again; the two answers after them go.
    assert_eq!(
        compose::discarded(&session(&app), &c.target),
        Some(compose::Discard {
            records: 2,
            line: CURRENT,
            after_note: true
        })
    );
    insta::assert_snapshot!("compose_open_80x24", render(&mut app));

    // Empty: refused with a hint, nothing sent.
    assert!(matches!(ctrl_s(&mut app), Effect::None));
    assert_eq!(
        compose_of(&app).note,
        Some(Note::Hint(compose::EMPTY.into()))
    );
    assert!(s.renji.lock().unwrap().pending().is_none());

    // Graph keys type: q, j, d, s are letters here.
    let cursor = app.cursor();
    assert!(matches!(type_text(&mut app, MESSAGE), Effect::None));
    assert_eq!(app.cursor(), cursor);
    assert_eq!(compose_of(&app).message(), MESSAGE);
    insta::assert_snapshot!("compose_typed_80x24", render(&mut app));

    assert!(matches!(ctrl_s(&mut app), Effect::None));
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(
        app.status(),
        Some("D-Mail accepted: the agent reverts to checkpoint 2 at the end of its step")
    );
    assert_eq!(
        s.renji.lock().unwrap().pending(),
        Some(&DMail {
            message: MESSAGE.into(),
            checkpoint_id: 2,
        })
    );
    assert!(app.pending_jump().is_some());

    // A second one while the first is pending: DenwaRenji's words, text kept.
    key(&mut app, KeyCode::Char('d'));
    type_text(&mut app, "again");
    ctrl_s(&mut app);
    let c = compose_of(&app);
    assert_eq!(
        c.note,
        Some(Note::Warning(
            "refused: Only one D-Mail can be sent at a time".into()
        ))
    );
    assert!(!c.sending);
    assert_eq!(c.message(), "again");
    insta::assert_snapshot!("compose_refused_80x24", render(&mut app));
    assert_eq!(
        s.renji
            .lock()
            .unwrap()
            .pending()
            .map(|d| d.message.as_str()),
        Some(MESSAGE)
    );

    // Esc cancels.
    key(&mut app, KeyCode::Esc);
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(app.status(), Some("D-Mail not sent"));
}

#[test]
fn compose_snapshot_wide() {
    let s = setup(true);
    let mut app = app_on(&s.dir, 120, 40);
    select_at(&mut app, CURRENT, 5);
    key(&mut app, KeyCode::Char('d'));
    let c = compose_of(&app);
    assert_eq!(c.target.back, worldline::ui::compose::Back::Checkpoint(1));
    // After ⚑1's note: the D-Mail, an answer, ⚑2, its note, two answers.
    assert_eq!(
        compose::discarded(&session(&app), &c.target),
        Some(compose::Discard {
            records: 6,
            line: CURRENT,
            after_note: true
        })
    );
    type_text(&mut app, "short");
    insta::assert_snapshot!("compose_open_120x40", render(&mut app));
}

#[test]
fn a_checkpoint_note_targets_its_checkpoint() {
    let s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    select_at(&mut app, CURRENT, 10);
    key(&mut app, KeyCode::Char('d'));
    let c = compose_of(&app);
    assert_eq!(c.target.back, worldline::ui::compose::Back::Checkpoint(2));
    assert_eq!(c.target.record, rec(&app, CURRENT, 9));
}

#[test]
fn d_explains_itself_elsewhere() {
    let s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    // Not a checkpoint.
    select_at(&mut app, CURRENT, 8);
    assert!(matches!(key(&mut app, KeyCode::Char('d')), Effect::None));
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(app.status(), Some(compose::NOT_A_CHECKPOINT));
    // A checkpoint, and its note, of the old world line.
    for i in [8, 9] {
        select_at(&mut app, OLD, i);
        key(&mut app, KeyCode::Char('d'));
        assert_eq!(*app.overlay(), Overlay::None);
        assert_eq!(app.status(), Some(compose::NOT_CURRENT));
    }
    insta::assert_snapshot!("d_on_old_world_line_80x24", render(&mut app));
}

#[test]
fn d_on_a_session_without_denwa() {
    let s = setup(false);
    let mut app = app_on(&s.dir, 80, 24);
    select_at(&mut app, CURRENT, 9);
    let e = key(&mut app, KeyCode::Char('d'));
    assert!(matches!(e, Effect::None));
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(
        app.status(),
        Some("not live: no DenwaRenji socket for this session")
    );
}

#[test]
fn server_gone_while_composing() {
    let mut s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    select_at(&mut app, CURRENT, 9);
    key(&mut app, KeyCode::Char('d'));
    type_text(&mut app, "hello");
    s.server.take().unwrap().shutdown();
    ctrl_s(&mut app);
    let c = compose_of(&app);
    assert_eq!(c.note, Some(Note::Warning(compose::NOT_LIVE.into())));
    assert_eq!(c.message(), "hello");
}

#[test]
fn composing_ignores_the_mouse_and_graph_keys() {
    let s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    select_at(&mut app, CURRENT, 9);
    key(&mut app, KeyCode::Char('d'));
    let click = Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 3,
        modifiers: KeyModifiers::NONE,
    });
    assert!(keys::message_for(Mode::Compose, &click).is_none());
    let cursor = app.cursor();
    app.update(Action::Click(Position::new(5, 3)));
    app.update(Action::Wheel(3));
    for code in [KeyCode::Tab, KeyCode::PageDown, KeyCode::Char('G')] {
        key(&mut app, code);
    }
    assert_eq!(app.cursor(), cursor);
    assert!(matches!(app.overlay(), Overlay::Compose(_)));
    // A pasted escape sequence shows, never reaches the terminal raw.
    app.update(Action::ComposePaste("\u{1b}[31mred\r\nline".into()));
    let m = compose_of(&app).message();
    assert!(m.contains("␛[31mred\nline"), "{m:?}");
    // Ctrl-C still quits.
    let e = key_mod(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(e, Effect::Quit));
}

#[test]
fn the_view_moves_to_the_new_world_line_when_the_revert_lands() {
    let mut s = setup(true);
    let mut app = app_on(&s.dir, 80, 24);
    select_at(&mut app, CURRENT, 9);
    key(&mut app, KeyCode::Char('d'));
    type_text(&mut app, MESSAGE);
    ctrl_s(&mut app);
    assert!(app.pending_jump().is_some());
    // Selecting by hand turned follow off; the live view has it on.
    key(&mut app, KeyCode::Char('F'));

    // A snapshot without the revert changes nothing.
    s.writer
        .message(&Message::assistant("end of the step"))
        .unwrap();
    app.update(Live::Snapshot(Arc::new(Session::load(&s.dir).unwrap())));
    assert!(app.pending_jump().is_some());

    // The agent applies the D-Mail at the end of its step.
    let d = s.renji.lock().unwrap().fetch_pending_dmail().unwrap();
    s.writer
        .revert_to_checkpoint(d.checkpoint_id, &d.message)
        .unwrap();
    app.update(Live::Snapshot(Arc::new(Session::load(&s.dir).unwrap())));
    assert!(app.pending_jump().is_none());
    let new = 2;
    assert_eq!(app.focus(), new);
    let r = app.selected().unwrap();
    assert_eq!(r.line, new);
    let meta = session(&app).record(r).unwrap().clone();
    assert_eq!(*meta.role(), Role::User);
    assert_eq!(
        meta.marker().as_deref(),
        Some(&Marker::DMailInjection(MESSAGE.into()))
    );
    assert!(app.status().unwrap().contains("landed"));
    insta::assert_snapshot!("landed_80x24", render(&mut app));

    // Follow keeps the new world line's head in view as it grows.
    s.writer.message(&Message::assistant("after")).unwrap();
    app.update(Live::Snapshot(Arc::new(Session::load(&s.dir).unwrap())));
    assert_eq!(app.selected().unwrap().line, new);
    assert!(app.cursor() >= app.scroll());
}

/// A live session whose current world line, after ⚑1, writes a file, runs
/// a failing command and tries an edit that fails; ⚑2 follows.
fn setup_with_side_effects() -> Setup {
    let root = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let dir = root.path().join("0a1b2c3d-0000-4000-8000-0000000e77ec");
    let mut w = SessionWriter::create(&dir, true).unwrap();
    w.system_prompt("You are a test agent.").unwrap();
    w.checkpoint().unwrap();
    w.message(&Message::user("make the tests pass")).unwrap();
    w.checkpoint().unwrap();
    let call = |id: &str, name: &str, args: &[(&str, &str)]| {
        ToolCall::new(
            id,
            name,
            &Json::obj(args.iter().map(|(k, v)| (*k, Json::str(*v)))),
        )
    };
    let steps = [
        (
            call(
                "w1",
                "WriteFile",
                &[("path", "src/lib.rs"), ("content", "pub fn f() {}\n")],
            ),
            ToolOutput::ok("File successfully overwritten.", ""),
        ),
        (
            call("s1", "Shell", &[("command", "cargo test")]),
            ToolOutput::error("Command failed with exit code: 101."),
        ),
        (
            call("e1", "StrReplaceFile", &[("path", "src/main.rs")]),
            ToolOutput::error("No replacements made."),
        ),
        (
            call("r1", "ReadFile", &[("path", "Cargo.toml")]),
            ToolOutput::ok("1 lines read", "[package]"),
        ),
    ];
    for (c, result) in steps {
        let id = c.id.clone();
        w.message(&Message::assistant("working").with_tool_calls(vec![c]))
            .unwrap();
        w.message(&Message::tool_result(id.as_str(), &result))
            .unwrap();
    }
    w.checkpoint().unwrap();
    w.message(&Message::assistant("done, I think")).unwrap();
    serve(root, runtime, dir, w, true)
}

/// Position on the only world line of the record that is checkpoint `c`.
fn checkpoint_at(app: &App, c: i64) -> usize {
    let s = session(app);
    s.walk(0, 0)
        .into_iter()
        .position(|r| s.record(r).unwrap().checkpoint() == Some(c))
        .unwrap()
}

#[test]
fn compose_lists_what_stays_on_disk_and_ctrl_o_puts_it_in_the_message() {
    let mut s = setup_with_side_effects();
    let mut app = app_on(&s.dir, 80, 24);
    // Nothing happened after ⚑2: Ctrl-O says so and inserts nothing.
    let at2 = checkpoint_at(&app, 2);
    select_at(&mut app, 0, at2);
    key(&mut app, KeyCode::Char('d'));
    key_mod(&mut app, KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(compose_of(&app).message(), "");
    assert_eq!(
        compose_of(&app).note,
        Some(Note::Hint(compose::NOTHING_KEPT.into()))
    );
    key(&mut app, KeyCode::Esc);

    let at1 = checkpoint_at(&app, 1);
    select_at(&mut app, 0, at1);
    key(&mut app, KeyCode::Char('d'));
    app.prepare();
    let kept = compose_of(&app).kept().unwrap().clone();
    // The failed edit changed nothing; the failed command may have.
    assert_eq!(
        kept.summary(),
        ["wrote src/lib.rs", "ran `cargo test` (failed)"]
    );
    // Drawing reads only what `prepare` read: without the files, the same.
    let screen = with_files_gone(&s.dir, || draw_only(&app));
    assert!(screen.contains("stays on disk"), "{screen}");
    assert!(screen.contains("· wrote src/lib.rs"), "{screen}");
    insta::assert_snapshot!("compose_kept_80x24", screen);
    assert_eq!(render(&mut app), screen);

    type_text(&mut app, "Stop guessing. ");
    key_mod(&mut app, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let message = compose_of(&app).message();
    assert_eq!(
        message,
        "Stop guessing. \nAlready done on disk (going back does not undo it):\n- wrote src/lib.rs\n- ran `cargo test` (failed)"
    );
    assert_eq!(
        compose_of(&app).note,
        Some(Note::Hint(compose::INSERTED.into()))
    );
    insta::assert_snapshot!("compose_kept_inserted_120x40", {
        app.update(worldline::ui::app::Msg::Resize(Size::new(120, 40)));
        render(&mut app)
    });

    // Sent as written; the landing's detail lists the same changes.
    ctrl_s(&mut app);
    let d = s.renji.lock().unwrap().fetch_pending_dmail().unwrap();
    assert_eq!(d.message, message);
    s.writer
        .revert_to_checkpoint(d.checkpoint_id, &d.message)
        .unwrap();
    app.update(Live::Snapshot(Arc::new(Session::load(&s.dir).unwrap())));
    let landed = app.selected().unwrap();
    let ses = session(&app);
    // What the app reads before a frame: the body, and the landing's kept.
    let mut loaded = worldline::ui::cache::Cache::default();
    loaded.body(&ses, landed);
    loaded.landing(&ses, landed);
    let detail: Vec<String> =
        worldline::ui::detail::lines(&ses, landed, &loaded, &Theme { color: false })
            .iter()
            .map(|l| l.to_string())
            .collect();
    let at = detail
        .iter()
        .position(|l| l.contains("when this D-Mail arrived, these changes were already on disk:"))
        .unwrap_or_else(|| panic!("{detail:#?}"));
    assert_eq!(
        detail[at + 1..at + 3],
        ["   · wrote src/lib.rs", "   · ran `cargo test` (failed)"]
    );
    // The detail pane says the same from what `prepare` read, files gone.
    app.prepare();
    let screen = with_files_gone(&s.dir, || draw_only(&app));
    assert!(
        screen.contains("when this D-Mail arrived, these changes"),
        "{screen}"
    );
    assert_eq!(render(&mut app), screen);
}
