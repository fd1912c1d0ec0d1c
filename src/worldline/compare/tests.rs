use std::path::{Path, PathBuf};

use super::*;

/// The session directory of a fixture (kimi-cli `sessions/<work>/<id>`,
/// Kimi Code `home/sessions/<work>/<session>` — the one named, or the
/// first).
fn fixture_dir(name: &str, session: Option<&str>) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    let sessions = if root.join("sessions").is_dir() {
        root.join("sessions")
    } else if root.join("home/sessions").is_dir() {
        root.join("home/sessions")
    } else {
        return root;
    };
    let work = std::fs::read_dir(sessions)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let mut all: Vec<PathBuf> = std::fs::read_dir(work)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    all.sort();
    match session {
        Some(s) => all
            .into_iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().contains(s))
            .unwrap(),
        None => all.remove(0),
    }
}

fn load(name: &str, session: Option<&str>) -> Session {
    Session::load(&fixture_dir(name, session)).unwrap()
}

#[test]
fn a_dmail_line_against_the_line_it_left_kimi_cli() {
    // thinking_tools: α plans, writes out.txt after ⚑1 and sends a D-Mail
    // back to ⚑1; β starts with that D-Mail and only answers.
    let s = load("kimi-cli/thinking_tools", None);
    let (a, b) = default_pair(s.main(), None).unwrap();
    assert_eq!((a, b), (0, 1));
    let c = compare(&s, 0, a, b).unwrap();
    assert_eq!(c.fork.checkpoint, Some(1));
    // Shared: the system prompt, ⚑0, its note, the prompt, ⚑1, its note.
    assert_eq!(c.fork.shared, 6);
    assert_eq!(c.fork.steps, 2);
    let [la, lb] = &c.lines;
    assert_eq!((la.name.as_str(), lb.name.as_str()), ("α", "β"));
    assert_eq!(la.files_written(), ["out.txt"]);
    assert_eq!(la.files[0].effect, Effect::Write);
    assert!(lb.files.is_empty());
    assert!(c.files_both.is_empty());
    let tools: Vec<&str> = la
        .steps
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.tool.as_str()))
        .collect();
    assert_eq!(tools, ["SetTodoList", "WriteFile", "SendDMail"]);
    // The D-Mail the agent sent was refused by nothing: all three answered.
    assert_eq!((la.tool_calls, la.ok + la.errors), (3, 3));
    assert_eq!(lb.tool_calls, 0);
    assert_eq!(lb.steps[0].kind, StepKind::DMail);
    assert!(lb.steps[0].text.starts_with("out.txt already written"));
    assert!(lb.reason.contains("D-Mail"), "{}", lb.reason);
    assert_eq!(
        lb.last_text.as_deref(),
        Some("the future me wrote it. Done, the file exists.")
    );
    assert_eq!(lb.state, TrackState::Current);
    assert_eq!(la.state, TrackState::Abandoned);
    assert_eq!(la.unread + lb.unread, 0);
    // Steps are aligned: every step of each side is in exactly one row.
    for (side, n) in [(0, la.steps.len()), (1, lb.steps.len())] {
        let mut seen: Vec<usize> = c
            .rows
            .iter()
            .filter_map(|r| if side == 0 { r.a } else { r.b })
            .collect();
        seen.dedup();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }
}

#[test]
fn the_order_of_the_two_lines_is_the_callers() {
    let s = load("kimi-cli/thinking_tools", None);
    let ab = compare(&s, 0, 0, 1).unwrap();
    let ba = compare(&s, 0, 1, 0).unwrap();
    assert_eq!(ab.fork, ba.fork);
    assert_eq!(ab.lines[0], ba.lines[1]);
    assert_eq!(compare(&s, 0, 1, 1), Err(CompareError::Same));
    assert!(matches!(
        compare(&s, 0, 0, 7),
        Err(CompareError::NoLine(..))
    ));
}

#[test]
fn two_dmails_in_a_row_part_at_their_checkpoints() {
    let s = load("kimi-cli/dmail_twice", None);
    let f = s.main();
    // γ (context.jsonl) left β at ⚑2; β left α at ⚑1.
    assert_eq!(default_pair(f, None).unwrap(), (1, 2));
    assert_eq!(compare(&s, 0, 1, 2).unwrap().fork.checkpoint, Some(2));
    assert_eq!(compare(&s, 0, 0, 1).unwrap().fork.checkpoint, Some(1));
    // α and γ: they part where β left α.
    let ag = compare(&s, 0, 0, 2).unwrap();
    assert_eq!(ag.fork.checkpoint, Some(1));
    assert_eq!(ag.fork.shared, f.lines[1].shared);
    assert_eq!(find_line(f, "γ"), Some(2));
    assert_eq!(find_line(f, "context_2.jsonl"), Some(1));
    assert_eq!(find_line(f, "ω"), None);
}

#[test]
fn kimi_code_undo_branches_part_at_their_wire_line() {
    let s = load("kimi-code/r_two_undos_compact_fork", Some("480a004a"));
    let f = s.main();
    assert_eq!(find_line(f, "b1"), Some(1));
    assert_eq!(find_pair(f, "main", "b2").unwrap(), (0, 2));
    // b1 is main undone after wire line 47: the last shared record is there.
    let c = compare(&s, 0, 0, 1).unwrap();
    assert_eq!(c.fork.file_line, Some(47), "{:?}", c.fork);
    assert_eq!(c.fork.checkpoint, None);
    let [main, b1] = &c.lines;
    // main's third turn was undone; b1 went on with turn 4.
    assert!(main.steps[0].text.contains("Turn 3"), "{:?}", main.steps);
    assert!(b1.steps[0].text.contains("Turn 4"), "{:?}", b1.steps);
    assert!(b1.reason.contains("undo"), "{}", b1.reason);
    assert!(c.lines.iter().all(|l| l.unread == 0));
    // The commands each line ran after the fork, with their outcome.
    let ran =
        |l: &LineSummary| -> Vec<String> { l.commands.iter().map(|c| c.command.clone()).collect() };
    assert!(ran(main).is_empty());
    // Shared prefix: turn 1 and 2 (with its Bash call).
    assert_eq!(c.fork.steps, 2);
    // b2 and main part where b1 left main.
    let c2 = compare(&s, 0, 0, 2).unwrap();
    assert_eq!(c2.fork.file_line, Some(47));
    // b1 → b2: their own fork point.
    let c3 = compare(&s, 0, 1, 2).unwrap();
    assert_eq!(c3.fork.file_line, Some(87), "{:?}", c3.fork);
    assert!(
        c3.lines[0].steps[0].text.contains("Turn 5"),
        "{:?}",
        c3.lines[0].steps
    );
}

#[test]
fn kimi_code_commands_are_listed_with_their_outcome() {
    for name in [
        "kimi-code/a_undo1",
        "kimi-code/o_undo",
        "kimi-code/f_fork",
        "kimi-code/b2_undo_on_branch",
    ] {
        let s = load(name, None);
        let f = s.main();
        if f.lines.len() < 2 {
            continue;
        }
        let (a, b) = default_pair(f, None).unwrap();
        let c = compare(&s, 0, a, b).unwrap();
        for l in &c.lines {
            assert_eq!(l.tool_calls, l.ok + l.errors + l.open_calls());
            for cmd in &l.commands {
                assert!(!cmd.command.is_empty());
            }
        }
        // Every pair parts at a wire line, after a record both hold.
        assert!(c.fork.file_line.is_some() && c.fork.at.is_some(), "{name}");
        assert!(c.lines.iter().all(|l| !l.steps.is_empty()), "{name}");
    }
}

#[test]
fn what_each_ran_and_how_its_calls_ended_kimi_cli() {
    // dmail_twice: β ran `echo hello`, then sent the second D-Mail
    // ("echo works, skip it"); γ, told so, ran nothing.
    let s = load("kimi-cli/dmail_twice", None);
    let c = compare(&s, 0, 1, 2).unwrap();
    let [b, g] = &c.lines;
    let ran: Vec<(&str, Outcome)> = b
        .commands
        .iter()
        .map(|c| (c.command.as_str(), c.outcome))
        .collect();
    assert_eq!(ran, [("echo hello", Outcome::Ok)]);
    assert!(g.commands.is_empty() && g.tool_calls == 0);
    assert_eq!(g.last_text.as_deref(), Some("Done after two D-Mails."));
    assert_eq!((b.tokens, g.tokens), (Some(1072), Some(1110)));
    assert!(g.duration_s.is_some_and(|d| d > 0.0 && d < 60.0));
    // dmail_errors: a D-Mail to a checkpoint that doesn't exist, then two
    // in one step, the second refused: three calls, two failed.
    let s = load("kimi-cli/dmail_errors", None);
    let c = compare(&s, 0, 0, 1).unwrap();
    assert_eq!(c.fork.checkpoint, Some(0));
    let a = &c.lines[0];
    assert_eq!((a.tool_calls, a.ok, a.errors), (3, 1, 2));
    let glyphs: Vec<&str> = a
        .steps
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.outcome.glyph()))
        .collect();
    assert_eq!(glyphs, ["✗", "✓", "✗"]);
}

fn step(calls: &[(&str, &str)], text: &str) -> Step {
    let r = RecordRef {
        agent: 0,
        line: 0,
        record: 0,
    };
    Step {
        records: 0..1,
        lead: None,
        checkpoint: None,
        kind: if calls.is_empty() {
            StepKind::Prompt
        } else {
            StepKind::Reply
        },
        text: text.into(),
        calls: calls
            .iter()
            .map(|(t, x)| Call {
                record: r,
                id: String::new(),
                tool: t.to_string(),
                effect: tools::effect(t),
                target: Some(x.to_string()),
                outcome: Outcome::Ok,
            })
            .collect(),
        time: None,
    }
}

#[test]
fn matching_steps_are_aligned_side_by_side() {
    let a = [
        step(&[], "go"),
        step(&[("Shell", "ls")], ""),
        step(&[("WriteFile", "a.txt")], ""),
        step(&[("Shell", "make")], ""),
    ];
    let b = [
        step(&[], "go"),
        step(&[("WriteFile", "a.txt")], ""),
        step(&[("Shell", "cargo test")], ""),
        step(&[], "done"),
    ];
    let rows = align(&a, &b);
    let got: Vec<(Option<usize>, Option<usize>, bool)> =
        rows.iter().map(|r| (r.a, r.b, r.same)).collect();
    assert_eq!(
        got,
        [
            (Some(0), Some(0), true),
            (Some(1), None, false),
            (Some(2), Some(1), true),
            (Some(3), Some(2), false),
            (None, Some(3), false),
        ]
    );
}
