//! The TUI on real Codex threads at 80×24 and 120×40: the reverted
//! thread's two world lines and why the second exists, a turn per step led
//! by its prompt, an `exec_command` call shown as its command with its
//! output beside it, and the subagent under its parent's spawn_agent call.

mod common;

use common::ui::press;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{App, Live};
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::Session;

fn render(app: &mut App) -> String {
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

/// The first file of the one thread of a recorded case that has `id_part`.
fn thread(case: &str, id_part: &str) -> PathBuf {
    let day = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/codex")
        .join(case)
        .join("home/.codex/sessions/2026/12/04");
    let mut files: Vec<PathBuf> = std::fs::read_dir(day)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.contains(id_part) && !n[40..].contains('_')
        })
        .collect();
    files.sort();
    files.remove(0)
}

fn app(path: &Path, w: u16, h: u16) -> App {
    let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
    app.update(Live::Snapshot(Arc::new(Session::load(path).unwrap())));
    app
}

/// Moves the cursor to the first row whose body holds `needle`.
fn select(app: &mut App, needle: &str) -> String {
    press(app, "g");
    for _ in 0..80 {
        let screen = render(app);
        let r = app.selected().unwrap();
        let s = app.session().cloned().unwrap();
        if s.body(r).is_ok_and(|b| b.text().contains(needle)) {
            return screen;
        }
        press(app, "j");
    }
    panic!("no row with {needle:?}");
}

fn first_thread_id(case: &str) -> String {
    let exp: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/codex")
                .join(case)
                .join("expected.json"),
        )
        .unwrap(),
    )
    .unwrap();
    exp["sessions"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone()
}

#[test]
fn a_reverted_thread_reads_at_both_sizes() {
    let id = first_thread_id("r_revert_compact");
    let path = thread("r_revert_compact", &id);
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let mut a = app(&path, w, h);
        let screen = render(&mut a);
        // The map: the rollback line and why it exists.
        assert!(screen.contains("↶ rollback on α"), "{w}x{h}:\n{screen}");
        // One step per turn, led by what the user typed (not the injected
        // context), the compaction a step of its own.
        for want in [
            "first turn",
            "TOOLS=1 second turn",
            "after revert: another second turn",
            "⊜ compacted",
        ] {
            assert!(screen.contains(want), "{w}x{h}: {want}\n{screen}");
        }
        assert!(
            !screen.contains("environment_context"),
            "{w}x{h}:\n{screen}"
        );
        assert!(screen.contains("exec_command ✓"), "{w}x{h}:\n{screen}");
    }
}

#[test]
fn a_command_and_its_output_and_a_subagent() {
    let id = first_thread_id("r_exec_fork");
    let path = thread("r_exec_fork", &id);
    let mut a = app(&path, 120, 40);
    // Every row shown, not one per step: the call is a row of its own.
    press(&mut a, "a");
    let screen = select(&mut a, "$ echo step-1-of-2");
    assert!(screen.contains("exec_command"), "{screen}");
    common::ui::press_code(&mut a, ratatui::crossterm::event::KeyCode::Enter);
    let detail = render(&mut a);
    if std::env::var("PEEK").is_ok() {
        eprintln!("{screen}\n{detail}");
    }
    assert!(detail.contains("echo step-1-of-2"), "{detail}");

    let id = first_thread_id("r_subagent");
    let path = thread("r_subagent", &id);
    let s = Session::load(&path).unwrap();
    assert_eq!(s.agents.len(), 2);
    assert!(
        s.agents[1].parent_call.is_some(),
        "the subagent hangs off a call"
    );
    let mut a = app(&path, 120, 40);
    let screen = render(&mut a);
    assert!(screen.contains("SPAWN a helper please"), "{screen}");
}

/// A Codex turn is called a turn, and nothing promises a D-Mail can go
/// back to it (only kimi's checkpoints take one).
#[test]
fn a_turn_is_a_turn_not_a_checkpoint() {
    use worldline::model::Role;
    use worldline::worldline::RecordRef;
    let id = first_thread_id("r_revert_compact");
    let s = Session::load(&thread("r_revert_compact", &id[..8])).unwrap();
    let f = &s.agents[0].family;
    let record = f.files[0]
        .records
        .iter()
        .position(|m| *m.role() == Role::Checkpoint)
        .expect("a turn mark");
    let r = RecordRef {
        agent: 0,
        line: 0,
        record,
    };
    let text: String =
        worldline::ui::detail::lines(&s, r, &Default::default(), &Theme { color: false })
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect();
    assert!(text.starts_with("turn"), "{text}");
    assert!(text.contains("\nturn 0 begins"), "{text}");
    assert!(
        !text.contains("checkpoint") && !text.contains("D-Mail"),
        "{text}"
    );
}
