//! Every recorded kimi-cli session, rebuilt as kimi-cli writes it while the
//! live reader follows: the last snapshot equals a fresh load of the final
//! files, and no snapshot on the way shows a world line, fork or record the
//! final session does not have (no flicker through half-done rotations).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{kimi_fixtures, replay::replay, session_dir, Seen};
use worldline::export::json::session_json;
use worldline::live::{self, LiveEvent, LiveOptions};
use worldline::worldline::Session;

/// Every world line of `s` is a beginning of the same world line (by
/// position) of `fin`, with the same parent and fork once it has forked.
fn consistent(s: &Session, fin: &Session) -> Result<(), String> {
    for a in &s.agents {
        let fa = fin
            .agents
            .iter()
            .find(|f| f.dir == a.dir)
            .ok_or_else(|| format!("spurious agent {}", a.dir.display()))?;
        for (i, line) in a.family.lines.iter().enumerate() {
            let fl = fa
                .family
                .lines
                .get(i)
                .ok_or_else(|| format!("spurious world line {} ({i})", line.file))?;
            let (recs, frecs) = (&a.family.files[i].records, &fa.family.files[i].records);
            if recs.len() > frecs.len() || !recs.iter().zip(frecs).all(|(x, y)| x.same_record(y)) {
                return Err(format!(
                    "{}: records not a prefix of {}",
                    line.file, fl.file
                ));
            }
            if line.parent != fl.parent {
                return Err(format!("{}: parent {:?}", line.file, line.parent));
            }
            let kind = |l: &worldline::worldline::WorldLine| {
                l.fork
                    .as_ref()
                    .map(|f| (f.kind, f.checkpoint, f.origin, f.message.clone()))
            };
            if kind(line) != kind(fl) {
                return Err(format!(
                    "{}: fork {:?}, finally {:?}",
                    line.file,
                    kind(line),
                    kind(fl)
                ));
            }
        }
    }
    for w in &s.warnings {
        if !fin.warnings.contains(w) {
            return Err(format!("spurious warning {w:?}"));
        }
    }
    Ok(())
}

fn replay_one(scenario: &Path, poll: bool, seed: u64) {
    let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
    let src = session_dir(scenario);
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(src.file_name().unwrap());
    std::fs::create_dir(&dst).unwrap();
    let opts = LiveOptions {
        poll,
        poll_interval: Duration::from_millis(20),
    };
    let (rx, handle) = live::spawn(dst.clone(), opts).unwrap();
    assert_eq!(handle.is_polling(), poll, "{name}: watcher kind");
    replay(&src, &dst, seed);
    let fin = Session::load(&dst).unwrap();
    let want = session_json(&fin);
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, &format!("{name}: the final state"), |s| {
        session_json(s) == want
    });
    drop(handle);
    seen.events.extend(rx.try_iter());
    assert!(seen.errors().is_empty(), "{name}: {:?}", seen.errors());
    assert!(
        !seen.events.iter().any(|e| matches!(e, LiveEvent::Deleted)),
        "{name}: deleted?"
    );
    eprintln!("{name} poll={poll}: {} events", seen.events.len());
    let mut n = 0;
    for s in seen.snapshots() {
        n += 1;
        if let Err(e) = consistent(s, &fin) {
            panic!("{name} (poll: {poll}) snapshot {n}: {e}");
        }
    }
}

#[test]
fn replayed_fixtures_follow_with_native_watcher() {
    for (k, scenario) in kimi_fixtures().iter().enumerate() {
        replay_one(scenario, false, 1 + k as u64);
    }
}

#[test]
fn replayed_fixtures_follow_with_poll_watcher() {
    for (k, scenario) in kimi_fixtures().iter().enumerate() {
        replay_one(scenario, true, 101 + k as u64);
    }
}
