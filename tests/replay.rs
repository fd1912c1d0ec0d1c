//! `worldline replay`: replaying ends equal to opening the files (the replay
//! invariant) on every fixture; on the way the copy is always a session that
//! opens; the originals are never written; pacing follows wire.jsonl times
//! (or is even without them); the live follower sees the played copy end as
//! the original; the binary plays headless into a named directory.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::*;
use worldline::export::json::session_json;
use worldline::live::{self, LiveOptions};
use worldline::replay::{Op, Plan, Player, ReplayOptions, Target, EVEN_STEP};
use worldline::worldline::Session;

/// `tree --format json` of a session without the field that names its
/// directory and the two that name its neighbours (`forks`, `forked_from`:
/// the sessions of the same folder `/fork` or `/undo` made from it or it
/// from): a replay copies one session, not its neighbours.
fn tree_json_of(s: &Session) -> serde_json::Value {
    let mut v = session_json(s);
    let o = v.as_object_mut().unwrap();
    for k in ["session_dir", "forks", "forked_from"] {
        o.remove(k);
    }
    v
}

fn tree_json(dir: &Path) -> serde_json::Value {
    tree_json_of(&Session::load(dir).unwrap())
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let m = std::fs::metadata(&p).unwrap().modified().unwrap();
                out.push((p.clone(), std::fs::read(&p).unwrap(), m));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn replay_ends_equal_to_opening_the_files_on_every_session() {
    for src in every_session() {
        let name = src.display().to_string();
        // A flat session's files sit in its folder.
        let folder = if src.is_dir() {
            src.clone()
        } else {
            src.parent().unwrap().to_path_buf()
        };
        let before = snapshot(&folder);
        let plan = Plan::of(&src).unwrap();
        let target = Target::new(&src, None).unwrap();
        let mut player = Player::new(plan, target.path()).unwrap();
        player.start().unwrap();
        let open = player.session_path();
        let mut lines_seen = 0;
        while !player.done() {
            player.step().unwrap();
            // On the way the copy always opens, and world lines only grow.
            let s = Session::load(&open)
                .unwrap_or_else(|e| panic!("{name}: mid-replay copy does not open: {e}"));
            assert!(
                s.main().lines.len() >= lines_seen,
                "{name}: a world line vanished"
            );
            lines_seen = s.main().lines.len();
        }
        assert_eq!(tree_json(&open), tree_json(&src), "{name}");
        assert_eq!(
            snapshot(&folder),
            before,
            "{name}: the original was written"
        );
    }
}

#[test]
fn the_first_writes_make_a_session_the_tui_can_open() {
    let src = fixture_session("kimi-cli", "dmail_twice");
    let target = Target::new(&src, None).unwrap();
    let mut player = Player::new(Plan::of(&src).unwrap(), target.path()).unwrap();
    player.start().unwrap();
    assert!(worldline::sources::kimi_cli::is_session(target.path()));
    assert!(!player.done(), "start writes the beginning only");
    // Named like the original, so the TUI's header shows its id.
    assert_eq!(target.path().file_name(), src.file_name());
    let dir = target.path().to_path_buf();
    drop(target);
    assert!(!dir.exists(), "the temporary copy is removed");
}

/// All `timestamp`s of a wire file, parsed fully.
fn wire_span(path: &Path) -> (f64, f64) {
    let text = std::fs::read_to_string(path).unwrap();
    let ts: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["timestamp"].as_f64())
        .collect();
    let lo = ts.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

#[test]
fn pacing_follows_wire_times() {
    let src = fixture_session("kimi-cli", "dmail_twice");
    let plan = Plan::of(&src).unwrap();
    assert!(plan.timed);
    let (lo, hi) = wire_span(&src.join("wire.jsonl"));
    assert!(
        (plan.duration() - (hi - lo)).abs() < 1e-6,
        "plan lasts {} s, the wire {} s",
        plan.duration(),
        hi - lo
    );
    assert!(plan.events.windows(2).all(|w| w[0].at <= w[1].at));
    // Each wire line is written at its own time.
    let first_ts_line = plan
        .events
        .iter()
        .find(|e| matches!(&e.op, Op::Copy { to, start, .. } if to == Path::new("wire.jsonl") && *start > 0))
        .unwrap();
    assert!(first_ts_line.at < 0.01, "{}", first_ts_line.at);
    // The D-Mail rotations come after the calls that caused them.
    let renames: Vec<f64> = plan
        .events
        .iter()
        .filter(|e| matches!(e.op, Op::Rename(..)))
        .map(|e| e.at)
        .collect();
    assert_eq!(renames.len(), 2);
    assert!(renames[0] > 0.0 && renames[0] < renames[1]);
}

#[test]
fn without_wire_times_records_come_evenly() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = vec![sys()];
    old.extend(turn(0, "a", "b"));
    old.push(dmail_call("c1", "again", 0));
    old.push(dmail_ok("c1"));
    let new = revert(&old, 0, "again");
    write(dir.path(), "context_1.jsonl", &old);
    write(dir.path(), "context.jsonl", &new);
    let s = Session::load(dir.path()).unwrap();
    let own: usize = s
        .main()
        .lines
        .iter()
        .zip(&s.main().files)
        .map(|(l, f)| f.records.len() - l.shared)
        .sum();
    let plan = Plan::of(dir.path()).unwrap();
    assert!(!plan.timed);
    assert!((plan.duration() - own as f64 * EVEN_STEP).abs() < 1e-9);
    let target = Target::new(dir.path(), None).unwrap();
    let mut player = Player::new(plan, target.path()).unwrap();
    player.start().unwrap();
    let opts = ReplayOptions {
        speed: 1e6,
        max_gap: Duration::from_millis(1),
    };
    player.play(&opts, &AtomicBool::new(false)).unwrap();
    assert_eq!(tree_json(target.path()), tree_json(dir.path()));
}

#[test]
fn a_stop_request_ends_the_play_early() {
    let src = fixture_session("kimi-cli", "dmail_basic");
    let target = Target::new(&src, None).unwrap();
    let mut player = Player::new(Plan::of(&src).unwrap(), target.path()).unwrap();
    player.start().unwrap();
    player
        .play(&ReplayOptions::default(), &AtomicBool::new(true))
        .unwrap();
    assert!(!player.done());
}

#[test]
fn replaying_into_a_session_is_refused() {
    let src = fixture_session("kimi-cli", "dmail_basic");
    let err = Player::new(Plan::of(&src).unwrap(), &src)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("already holds a session"), "{err}");
}

/// What the TUI sees: the live follower on the copy while it plays ends at
/// the original's tree.
#[test]
fn the_live_follower_sees_the_replay_end_as_the_original() {
    let mut sources: Vec<PathBuf> = ["dmail_twice", "subagent", "with_compact"]
        .iter()
        .map(|s| fixture_session("kimi-cli", s))
        .collect();
    // Formats whose files only grow, each followed by its own source.
    sources.extend(append_only_sessions());
    for src in sources {
        let scenario = src.display().to_string();
        let mut want = tree_json(&src);
        want.as_object_mut().unwrap().remove("session_id");
        let target = Target::new(&src, None).unwrap();
        let mut player = Player::new(Plan::of(&src).unwrap(), target.path()).unwrap();
        player.start().unwrap();
        let opts = LiveOptions {
            poll: false,
            poll_interval: Duration::from_millis(20),
        };
        let (rx, handle) = live::spawn(player.session_path(), opts).unwrap();
        let play = ReplayOptions {
            speed: 1e6,
            max_gap: Duration::from_millis(15),
        };
        player.play(&play, &AtomicBool::new(false)).unwrap();
        let mut seen = Seen::default();
        seen.until_snapshot(&rx, &format!("{scenario}: the original's tree"), |s| {
            let mut got = tree_json_of(s);
            got.as_object_mut().unwrap().remove("session_id");
            got == want
        });
        drop(handle);
        assert!(seen.errors().is_empty(), "{scenario}: {:?}", seen.errors());
    }
}

#[test]
fn the_binary_plays_headless_into_a_named_directory() {
    let src = fixture_session("kimi-cli", "dmail_errors");
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("copy");
    assert_eq!(replay_headless(&src, &dst), dst);
    let mut a = tree_json(&src);
    let mut b = tree_json(&dst);
    for v in [&mut a, &mut b] {
        v.as_object_mut().unwrap().remove("session_id");
    }
    assert_eq!(a, b);
    let bad = common::worldline()
        .args(["replay", "--headless", "--speed", "0"])
        .arg(&src)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--speed"));
}

/// kimi-cli ≤ 0.58 kept a session as files in the work dir's folder: the
/// replay copies the family's files and names the main one to open.
#[test]
fn a_flat_session_replays_into_a_folder_and_opens_by_its_main_file() {
    let src = every_session()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("v0_55_subagent_dmail"))
        .expect("the flat fixture");
    assert!(src.is_file());
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("folder");
    let opened = replay_headless(&src, &dst);
    assert_eq!(opened, dst.join(src.file_name().unwrap()));
    assert_eq!(tree_json(&opened), tree_json(&src));
    // Only the session's own files: the folder's other files stay behind.
    let copied = std::fs::read_dir(&dst).unwrap().count();
    let own = Session::load(&src)
        .unwrap()
        .agents
        .iter()
        .map(|a| a.family.files.len())
        .sum::<usize>();
    assert_eq!(copied, own);
}

#[test]
fn a_headless_replay_without_a_dir_keeps_the_copy_it_names() {
    let src = fixture_session("kimi-cli", "dmail_basic");
    let tmp = tempfile::tempdir().unwrap();
    let out = common::worldline()
        .args(["replay", "--headless", "--speed", "1000"])
        .arg(&src)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let copy = std::path::PathBuf::from(stdout.lines().next().unwrap());
    assert!(copy.starts_with(tmp.path()), "{stdout}");
    // The path it printed is still there once it has exited, and reads
    // back as the original.
    assert!(copy.is_dir(), "{} was removed", copy.display());
    let mut a = tree_json(&src);
    let mut b = tree_json(&copy);
    for v in [&mut a, &mut b] {
        v.as_object_mut().unwrap().remove("session_id");
    }
    assert_eq!(a, b);
}

/// The replay invariant for formats whose files only grow (Kimi Code, and
/// Claude Code, Pi and Codex when their fixtures are there): played record
/// by record, the copy opens at every step, no world line vanishes, the
/// end equals the original, and the original is never written.
#[test]
fn append_only_sessions_replay_to_their_original() {
    let sessions = append_only_sessions();
    assert!(!sessions.is_empty(), "no append-only fixtures found");
    for src in sessions {
        let name = src.display().to_string();
        let folder = if src.is_dir() {
            src.clone()
        } else {
            src.parent().unwrap().to_path_buf()
        };
        let before = snapshot(&folder);
        let plan = Plan::of(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = tempfile::tempdir().unwrap();
        let mut player = Player::new(plan, &out.path().join("copy")).unwrap();
        player.start().unwrap();
        let open = player.session_path();
        let mut lines_seen = 0;
        while !player.done() {
            let s = Session::load(&open)
                .unwrap_or_else(|e| panic!("{name}: mid-replay copy does not open: {e}"));
            assert!(
                s.main().lines.len() >= lines_seen,
                "{name}: a world line vanished"
            );
            lines_seen = s.main().lines.len();
            player.step().unwrap();
        }
        let mut got = tree_json(&open);
        let mut want = tree_json(&src);
        for v in [&mut got, &mut want] {
            v.as_object_mut().unwrap().remove("session_id");
        }
        assert_eq!(got, want, "{name}");
        assert_eq!(
            snapshot(&folder),
            before,
            "{name}: the original was written"
        );
    }
}
