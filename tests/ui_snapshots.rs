//! Snapshot tests of the main screens on the fixtures, drawn with ratatui's
//! TestBackend at 80×24 and 120×40: colours off (as with NO_COLOR), and a
//! colour snapshot where each cell's colour is written under its glyph.
//! Also checks that untrusted text never reaches the terminal raw and that
//! wide characters keep columns aligned.

mod common;

use common::ui::{press, press_code, submit_search};

use std::path::Path;
use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::sources::SessionSummary;
use worldline::ui::app::{App, Live};
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::Session;

fn fixture_dir(name: &str) -> std::path::PathBuf {
    common::fixture_session("kimi-cli", name)
}

fn app_on_dir(dir: &Path, w: u16, h: u16) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
    // The checkout's path would show in the header; this stands for it.
    app.set_work_dir(Some("~/project".into()));
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    app
}

fn app_on(name: &str, w: u16, h: u16) -> App {
    app_on_dir(&fixture_dir(name), w, h)
}

fn render(app: &mut App) -> String {
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// The screen with each cell's foreground colour on a line under its
/// glyphs: one letter per colour, `.` for the default.
fn render_colour(app: &mut App) -> String {
    use ratatui::style::Color;
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut glyphs = String::new();
        let mut inks = String::new();
        let mut x = 0;
        while x < buf.area.width {
            let cell = &buf[(x, y)];
            glyphs.push_str(cell.symbol());
            let ink = match cell.fg {
                Color::Reset => '.',
                Color::Cyan => 'c',
                Color::Magenta => 'm',
                Color::Yellow => 'y',
                Color::Green => 'g',
                Color::LightBlue => 'b',
                Color::LightRed => 'r',
                Color::LightYellow => 'Y',
                Color::LightCyan => 'C',
                Color::LightGreen => 'G',
                Color::LightMagenta => 'M',
                _ => '?',
            };
            let w = unicode_width::UnicodeWidthStr::width(cell.symbol()).max(1);
            for _ in 0..w {
                inks.push(ink);
            }
            x += w as u16;
        }
        out.push_str(glyphs.trim_end());
        out.push('\n');
        out.push_str(inks.trim_end_matches('.'));
        out.push('\n');
    }
    out
}

#[test]
fn steps_and_map() {
    for (w, h) in SIZES {
        // Opens on the current head: the map names every line with its reason.
        let mut app = app_on("dmail_twice", w, h);
        let screen = render(&mut app);
        for reason in [
            "the first world line",
            "← D-Mail from α at ⚑2",
            "← D-Mail from β at ⚑3",
        ] {
            assert!(screen.contains(reason), "{reason}: {screen}");
        }
        insta::assert_snapshot!(format!("steps_{w}x{h}"), screen);
        // The middle of the story: the first D-Mail and the branch it made.
        press(&mut app, "g]]");
        insta::assert_snapshot!(format!("steps_dmail_{w}x{h}"), render(&mut app));
        // A step unfolded: its records under it, bookkeeping still hidden.
        press_code(&mut app, KeyCode::Enter);
        let unfolded = render(&mut app);
        assert!(!unfolded.contains("CHECKPOINT"), "{unfolded}");
        insta::assert_snapshot!(format!("steps_unfolded_{w}x{h}"), unfolded);
        // Every record, as before steps.
        press(&mut app, "a");
        insta::assert_snapshot!(format!("every_record_{w}x{h}"), render(&mut app));
    }
}

#[test]
fn colour() {
    for (w, h) in SIZES {
        let mut app = App::new(Theme { color: true }, false, Size::new(w, h));
        app.set_work_dir(Some("~/project".into()));
        app.update(Live::Snapshot(Arc::new(
            Session::load(&fixture_dir("dmail_twice")).unwrap(),
        )));
        insta::assert_snapshot!(format!("colour_steps_{w}x{h}"), render_colour(&mut app));
    }
}

#[test]
fn compaction_and_clear_are_not_time_travel() {
    for name in ["with_compact", "with_clear"] {
        let mut app = app_on(name, 120, 40);
        let screen = render(&mut app);
        let (body, _footer) = screen.trim_end().rsplit_once('\n').unwrap();
        assert!(!body.contains("D-Mail"), "{screen}");
        assert!(screen.contains(if name == "with_compact" { '⊜' } else { '∅' }));
        insta::assert_snapshot!(format!("{name}_120x40"), screen);
    }
}

#[test]
fn detail() {
    for (w, h) in SIZES {
        let mut app = app_on("dmail_twice", w, h);
        press(&mut app, "ag]]]");
        press_code(&mut app, KeyCode::Enter);
        insta::assert_snapshot!(format!("detail_injection_{w}x{h}"), render(&mut app));
    }
    let mut app = app_on("thinking_tools", 120, 40);
    press(&mut app, "aG");
    for _ in 0..30 {
        let r = app.selected().unwrap();
        let meta = app.session().unwrap().record(r).unwrap().clone();
        if !meta.tool_calls().is_empty() {
            break;
        }
        press(&mut app, "k");
    }
    insta::assert_snapshot!("detail_tool_call_120x40", render(&mut app));
}

#[test]
fn help() {
    // The checkout's path would show; relative to it, the session's path
    // the help shows is the same on every machine.
    let abs = fixture_dir("dmail_twice");
    let mut s = Session::load(&abs).unwrap();
    s.dir = abs
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .to_path_buf();
    let s = Arc::new(s);
    for (w, h) in SIZES {
        let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
        app.set_work_dir(Some("~/project".into()));
        app.update(Live::Snapshot(s.clone()));
        press(&mut app, "?");
        let screen = render(&mut app);
        // The help says where the session is (what `send` and `tree` take).
        assert!(screen.contains(" Session "), "{screen}");
        assert!(
            screen.contains("fixtures/kimi-cli/dmail_twice/sessions/"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("help_{w}x{h}"), screen);
    }
}

#[test]
fn picker() {
    let rows: Vec<SessionSummary> = ["dmail_twice", "subagent", "with_compact"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut s = worldline::sources::kimi_cli::share::summarize(
                &fixture_dir(n),
                &Default::default(),
            );
            // File mtimes depend on the checkout; fix them.
            s.modified = 1_796_068_975 - i as u64 * 3600;
            s
        })
        .collect();
    for (w, h) in SIZES {
        let mut app =
            App::new(Theme { color: false }, false, Size::new(w, h)).with_picker(rows.clone());
        press(&mut app, "j");
        insta::assert_snapshot!(format!("picker_{w}x{h}"), render(&mut app));
    }
}

#[test]
fn search() {
    for (w, h) in SIZES {
        let mut app = app_on("dmail_twice", w, h);
        press(&mut app, "g/Fold");
        insta::assert_snapshot!(format!("search_prompt_{w}x{h}"), render(&mut app));
        submit_search(&mut app);
        press(&mut app, "n");
        insta::assert_snapshot!(format!("search_hits_{w}x{h}"), render(&mut app));
    }
}

#[test]
fn subagent() {
    for (w, h) in SIZES {
        let mut app = app_on("subagent", w, h);
        press(&mut app, "s");
        insta::assert_snapshot!(format!("subagent_list_{w}x{h}"), render(&mut app));
        press_code(&mut app, KeyCode::Enter);
        insta::assert_snapshot!(format!("subagent_{w}x{h}"), render(&mut app));
    }
}

#[test]
fn filter_menu_and_filtered() {
    let mut app = app_on("dmail_twice", 80, 24);
    press(&mut app, "f");
    insta::assert_snapshot!("filter_menu_80x24", render(&mut app));
    press(&mut app, "jj");
    press_code(&mut app, KeyCode::Enter);
    insta::assert_snapshot!("filtered_user_80x24", render(&mut app));
}

#[test]
fn the_footer_keeps_help_and_quit_at_80x24() {
    let mut app = app_on("thinking_tools", 80, 24);
    let screen = render(&mut app);
    let footer = screen.lines().last().unwrap();
    assert!(footer.contains("? help  q quit"), "{footer}");
    press_code(&mut app, KeyCode::Enter);
    press(&mut app, "j");
    press_code(&mut app, KeyCode::Enter);
    assert!(app.expanded());
    let screen = render(&mut app);
    let footer = screen.lines().last().unwrap();
    assert!(
        footer.contains("Esc/Enter back") && footer.contains("q quit"),
        "{footer}"
    );
}

/// A session whose text tries escape sequences and mixes wide characters.
fn hostile_session() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hostile-session");
    std::fs::create_dir(&dir).unwrap();
    let lines = [
        r#"{"role": "_system_prompt", "content": "sys"}"#,
        r#"{"role": "_checkpoint", "id": 0}"#,
        r#"{"role":"user","content":"red \u001b[31mALERT\u001b[0m \u001b]0;pwned\u0007 \u001b[2J gone"}"#,
        r#"{"role":"assistant","content":"世界 こんにちは 👋🏽 e\u0301","tool_calls":[{"type":"function","id":"t1","function":{"name":"ReadFile","arguments":"{\"path\": \"a\"}"}}]}"#,
        r#"{"role":"assistant","content":"plain ascii","tool_calls":[{"type":"function","id":"t2","function":{"name":"ReadFile","arguments":"{}"}}]}"#,
    ];
    std::fs::write(dir.join("context.jsonl"), lines.join("\n") + "\n").unwrap();
    tmp
}

#[test]
fn escapes_are_shown_not_executed_and_wide_text_aligns() {
    let tmp = hostile_session();
    let mut app = app_on_dir(&tmp.path().join("hostile-session"), 80, 24);
    // The temp dir's name changes every run; the header shows this instead.
    app.set_work_dir(Some("~/hostile".into()));
    press(&mut app, "agjjj");
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| view::draw(f, &app)).unwrap();
    let buf = term.backend().buffer().clone();
    let mut all = String::new();
    for cell in buf.content() {
        all.push_str(cell.symbol());
    }
    assert!(!all.contains('\u{1b}'), "no raw ESC in any cell");
    assert!(!all.contains('\u{7}'));
    assert!(all.contains("␛[31mALERT"), "escapes show visibly");
    // Both ReadFile rows end their tool name in the same column.
    let ends: Vec<u16> = (0..24)
        .filter_map(|y| {
            let row: String = (0..80).map(|x| buf[(x, y)].symbol().to_string()).collect();
            if row.contains("asst") {
                (0..80u16).rev().find(|&x| buf[(x, y)].symbol() == "e")
            } else {
                None
            }
        })
        .collect();
    assert_eq!(ends.len(), 2, "two assistant rows");
    assert_eq!(ends[0], ends[1], "wide characters keep columns aligned");
    insta::assert_snapshot!("hostile_80x24", term.backend().to_string());
}

/// Four world lines, each made by a D-Mail from the one before.
fn four_lines() -> tempfile::TempDir {
    use common::{assistant, cp, cp_note, dmail_call, dmail_ok, revert, sys, turn, usage};
    let tmp = tempfile::tempdir().unwrap();
    let step = |n: i64, text: &str| vec![cp(n), cp_note(n), usage(900 + n as u64), assistant(text)];
    let mut alpha = vec![sys()];
    alpha.extend(turn(0, "fix the tally crash", "Looking at the layout."));
    alpha.extend(step(1, "Reading the parser."));
    alpha.extend(step(2, "Patching one bug."));
    alpha.push(dmail_call("d1", "two bugs, fix both", 1));
    alpha.push(dmail_ok("d1"));
    let mut beta = revert(&alpha, 1, "two bugs, fix both");
    beta.extend(step(2, "Fixing both bugs."));
    beta.extend(step(3, "Tests fail on blank lines."));
    beta.push(dmail_call("d2", "blank lines too", 2));
    beta.push(dmail_ok("d2"));
    let mut gamma = revert(&beta, 2, "blank lines too");
    gamma.extend(step(3, "All three fixed."));
    gamma.push(dmail_call("d3", "add a test first", 0));
    gamma.push(dmail_ok("d3"));
    let mut delta = revert(&gamma, 0, "add a test first");
    delta.extend(step(1, "Writing the test first."));
    // A fixed name: the session id shows in the header.
    let dir = tmp.path().join("four-lines");
    std::fs::create_dir(&dir).unwrap();
    common::write(&dir, "context_1.jsonl", &alpha);
    common::write(&dir, "context_2.jsonl", &beta);
    common::write(&dir, "context_3.jsonl", &gamma);
    common::write(&dir, "context.jsonl", &delta);
    tmp
}

#[test]
fn four_world_lines_are_named_on_the_first_screen() {
    let tmp = four_lines();
    for (w, h) in SIZES {
        let mut app = app_on_dir(&tmp.path().join("four-lines"), w, h);
        let screen = render(&mut app);
        for (name, reason) in [
            ("α", "the first world line"),
            ("β", "← D-Mail from α at ⚑2 → ⚑1"),
            ("γ", "← D-Mail from β at ⚑3 → ⚑2"),
            ("δ", "← D-Mail from γ at ⚑3 → ⚑0"),
        ] {
            let row = screen
                .lines()
                .find(|l| l.contains(reason))
                .unwrap_or_else(|| panic!("{reason} at {w}x{h}:\n{screen}"));
            assert!(row.contains(name), "{row}");
        }
        insta::assert_snapshot!(format!("four_lines_{w}x{h}"), screen);
    }
}

/// The `/fork` + `/undo` fixture: the source and the two sessions made from it.
fn fork_undo_dir(id: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kimi-cli-history/v1_40_0_fork_undo/sessions")
        .join("e7267f0bd6f7ca742a4acd6faae02d7e")
        .join(id)
}

#[test]
fn fork_sessions() {
    for (w, h) in SIZES {
        // The source: both forks leave its map at their fork point.
        let mut app = app_on_dir(&fork_undo_dir("0706220a-4234-46bf-958b-2c56b11dcb00"), w, h);
        let screen = render(&mut app);
        assert!(screen.contains("└⑂ /undo · e299ef2f"), "{screen}");
        assert!(screen.contains("└⑂ /fork · 1daf86b9"), "{screen}");
        insta::assert_snapshot!(format!("fork_source_{w}x{h}"), screen);
        // The /undo says where it came from.
        let mut app = app_on_dir(&fork_undo_dir("e299ef2f-64d0-45f5-b7f1-32ec254df600"), w, h);
        let screen = render(&mut app);
        assert!(
            screen.contains("α: ⑂ /undo of one · from ⚑5 · shares 19 records"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("fork_undo_{w}x{h}"), screen);
    }
}
