//! The TUI on a real Kimi Code session with two undo branches and a
//! compaction, at 80×24 and 120×40: what a user looks for is on screen (the
//! world lines, where each leaves its parent and why, the compaction mark).

mod common;

use common::ui::press;

use std::path::Path;
use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{App, Live};
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::Session;

const SOURCE: &str = "fixtures/kimi-code/r_two_undos_compact_fork/home/sessions/wd_project_76860d8b5438/session_480a004a-1a94-4159-a609-f6ca09d99596";

fn render(app: &mut App) -> String {
    app.prepare();
    let mut term = Terminal::new(TestBackend::new(app.size().width, app.size().height)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    term.backend().to_string()
}

fn app(w: u16, h: u16) -> App {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
    let mut app = App::new(Theme { color: false }, false, Size::new(w, h));
    app.update(Live::Snapshot(Arc::new(Session::load(&dir).unwrap())));
    app
}

/// Moves the cursor to the first row whose text holds `needle`.
fn select(app: &mut App, needle: &str) -> String {
    press(app, "g");
    for _ in 0..40 {
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

#[test]
fn two_undo_branches_and_a_compaction_read_at_both_sizes() {
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let mut a = app(w, h);
        let screen = render(&mut a);
        // The map: three world lines, each saying why it exists.
        assert!(
            screen.contains("undo on α: 1 turn taken back"),
            "{w}x{h}:\n{screen}"
        );
        assert!(
            screen.contains("undo on β: 1 turn taken back"),
            "{w}x{h}:\n{screen}"
        );
        assert!(screen.contains("current"), "{w}x{h}:\n{screen}");
        // One row a turn (Kimi Code has no checkpoints), and the compaction
        // a step of its own, in compaction's words.
        for turn in [
            "Turn 1: hello.",
            "Turn 2: run a TOOL",
            "Turn 3: to be undone.",
        ] {
            assert!(screen.contains(turn), "{w}x{h}:\n{screen}");
        }
        assert!(
            screen.contains("⊜ compacted 9 messages"),
            "{w}x{h}:\n{screen}"
        );
        if h >= 40 {
            // The map's legend names the compaction marked on β.
            assert!(screen.contains("⊜ compaction"), "{w}x{h}:\n{screen}");
        }
        // Every record: both forks drawn leaving their parent, the compaction
        // marked on β's lane.
        press(&mut a, "a");
        let screen = render(&mut a);
        assert_eq!(screen.matches("●─╮").count(), 2, "{w}x{h}:\n{screen}");
        assert!(
            screen.contains("⊜ compacted 9 messages"),
            "{w}x{h}:\n{screen}"
        );

        select(&mut a, "Turn 4: on b1.");
        let screen = render(&mut a);
        assert!(
            screen.contains("begins: ↶ undo of 1 turn"),
            "{w}x{h}:\n{screen}"
        );
        select(&mut a, "Scripted compaction summary");
        let screen = render(&mut a);
        assert!(screen.contains("compacted here"), "{w}x{h}:\n{screen}");
    }
}

/// `d` on a turn of the current branch composes a D-Mail back to it (by
/// turns: a Kimi Code server undoes turns, it has no checkpoints); a turn
/// behind a compaction can't be reached.
#[test]
fn d_on_a_turn_composes_a_dmail_by_turns() {
    use worldline::ui::app::{Action, Denwa, Effect, Overlay};
    use worldline::ui::compose::{Back, ACROSS_COMPACTION};
    let mut a = app(100, 30);
    select(&mut a, "Turn 6");
    let Effect::Probe(target) = a.update(Action::DMail) else {
        panic!("d on the last turn should probe: {:?}", a.status())
    };
    assert_eq!(target.back, Back::Turns(1));
    assert_eq!(target.agent, 0);
    a.update(Denwa::Probed {
        target: target.clone(),
        live: true,
    });
    assert!(matches!(a.overlay(), Overlay::Compose(_)));
    let screen = render(&mut a);
    assert!(screen.contains("D-Mail → 1 turn back"), "{screen}");
    assert!(screen.contains("going 1 turn back discards"), "{screen}");
    a.update(Action::ComposeCancel);

    // Behind the compaction: refused with the reason, nothing probed.
    select(&mut a, "Turn 4");
    assert!(matches!(a.update(Action::DMail), Effect::None));
    assert_eq!(a.status(), Some(ACROSS_COMPACTION));

    // No server: the probe says what to do (start kimi web, or /web).
    a.update(Denwa::Probed {
        target,
        live: false,
    });
    let status = a.status().map(str::to_string).unwrap_or_default();
    assert!(status.contains("/web"), "{status}");
}

#[test]
fn a_compaction_inside_a_branch_is_drawn_in_its_own_words_and_d_goes_by_turns() {
    let mut a = app(120, 40);
    let screen = select(&mut a, "Scripted compaction summary");
    // β's track carries the compaction where it happened.
    let beta = screen
        .lines()
        .find(|l| l.contains("β ") && l.contains('┗'))
        .unwrap();
    assert!(beta.contains('⊜'), "{screen}");
    // The detail says compaction with compaction's mark, not a subagent's.
    assert!(
        screen.contains("⊜ the context was compacted here"),
        "{screen}"
    );
    assert!(!screen.contains('⇲'), "{screen}");
    // No checkpoints, but its server undoes turns: the footer and help
    // offer a D-Mail; `d` here says the compaction is in the way.
    let footer = screen.lines().last().unwrap();
    assert!(footer.contains("D-Mail"), "{footer}");
    assert!(footer.contains("? help"), "{footer}");
    press(&mut a, "d");
    assert_eq!(a.status(), Some(worldline::ui::compose::ACROSS_COMPACTION));
    press(&mut a, "?");
    let help = render(&mut a);
    assert!(help.contains("D-Mail to the selected ⚑ or turn"), "{help}");
}
