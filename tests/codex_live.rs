//! A Codex thread followed live: a recorded thread (a revert generation
//! and a compaction, `fixtures/codex/r_revert_compact`) written again in
//! chunks that split lines, the second file appearing half way. The
//! step-by-step reader's snapshots equal the session built afresh after
//! every chunk, and both the reader and the follower end equal to what
//! `tree --format json` says of the finished files.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Seen;
use worldline::export::json::session_json;
use worldline::live::{self, LiveOptions, Reader};
use worldline::worldline::Session;

/// The recorded thread's files, first generation first, and where they go.
fn thread(dest: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let case = common::scenarios("codex")
        .into_iter()
        .find(|c| c.ends_with("r_revert_compact"))
        .unwrap();
    let day = case.join("home/.codex/sessions/2026/12/04");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&day)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The first file has no generation id (no `_` after the thread id).
    files.sort_by_key(|p| p.file_name().unwrap().to_string_lossy().contains('_'));
    let to = dest.join("sessions/2026/12/04");
    std::fs::create_dir_all(&to).unwrap();
    files
        .into_iter()
        .map(|p| (to.join(p.file_name().unwrap()), std::fs::read(&p).unwrap()))
        .collect()
}

fn append(path: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Chunks of 1..=max bytes, seeded.
fn chunks(bytes: &[u8], rng: &mut common::Rng, max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = rng.range(1, max).min(bytes.len() - at);
        out.push(bytes[at..at + n].to_vec());
        at += n;
    }
    out
}

fn tree_json(home: &Path, first: &Path) -> serde_json::Value {
    let mut c = common::worldline();
    c.env("CODEX_HOME", home)
        .args(["tree", first.to_str().unwrap(), "--format", "json"]);
    serde_json::from_str(&common::stdout_of(c)).unwrap()
}

#[test]
fn the_reader_follows_a_thread_written_in_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    let files = thread(&home);
    let first = files[0].0.clone();
    // The session_meta line first: what makes the file a Codex rollout.
    let head = files[0].1.iter().position(|&b| b == b'\n').unwrap() + 1;
    append(&first, &files[0].1[..head]);
    let mut reader = Reader::new(&first);
    let mut errors = Vec::new();
    reader.refresh(&mut errors);
    let mut rng = common::Rng::new(23);
    let mut steps = 0;
    for (k, (path, bytes)) in files.iter().enumerate() {
        let from = if k == 0 { head } else { 0 };
        for c in chunks(&bytes[from..], &mut rng, 6000) {
            append(path, &c);
            if reader.refresh(&mut errors) {
                let (live, full) = reader.snapshot_and_full().unwrap();
                assert_eq!(
                    session_json(&live),
                    session_json(&full),
                    "after {steps} chunks"
                );
                steps += 1;
            }
        }
    }
    assert!(errors.is_empty(), "{errors:?}");
    assert!(steps > 10, "only {steps} snapshots");
    reader.refresh(&mut errors);
    let last = reader
        .snapshot()
        .or_else(|| reader.snapshot_and_full().map(|(s, _)| s))
        .unwrap();
    let want = tree_json(&home, &first);
    let mut got = session_json(&last);
    // Warnings and paths are as the binary prints them.
    got["session_dir"] = want["session_dir"].clone();
    assert_eq!(got, want);
    assert_eq!(got["world_lines"].as_array().unwrap().len(), 2);
}

#[test]
fn the_follower_sees_the_rollback_line_appear() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    let files = thread(&home);
    let first = files[0].0.clone();
    append(&first, &files[0].1);
    let opts = LiveOptions {
        poll: false,
        poll_interval: Duration::from_millis(20),
    };
    let (rx, _handle) = live::spawn(first.clone(), opts).unwrap();
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, "the first generation", |s| {
        s.agents[0].family.lines.len() == 1
    });
    let mut rng = common::Rng::new(7);
    for c in chunks(&files[1].1, &mut rng, 9000) {
        append(&files[1].0, &c);
        std::thread::sleep(Duration::from_millis(3));
    }
    let done = Session::load(&first).unwrap();
    let want = session_json(&done);
    let last = seen.until_snapshot(&rx, "the whole thread", |s| session_json(s) == want);
    assert_eq!(last.agents[0].family.lines.len(), 2);
    assert!(seen.errors().is_empty(), "{:?}", seen.errors());
}

#[test]
fn a_rollout_cut_short_or_replaced_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    let files = thread(&home);
    let first = files[0].0.clone();
    append(&first, &files[0].1);
    let mut reader = Reader::new(&first);
    let mut errors = Vec::new();
    reader.refresh(&mut errors);
    let lines = |s: &Session| s.agents[0].family.files[0].records.len();
    let whole = reader.snapshot_and_full().unwrap().0;
    // Cut to its first ten lines, in place (same inode, shorter).
    let ten: usize = files[0]
        .1
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(9)
        .unwrap()
        .0
        + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(ten as u64)
        .unwrap();
    assert!(reader.refresh(&mut errors));
    let (cut, full) = reader.snapshot_and_full().unwrap();
    assert_eq!(session_json(&cut), session_json(&full));
    assert_eq!(lines(&cut), 10);
    assert!(lines(&whole) > 10);
    // Replaced by a new file (another inode) with all its lines again.
    let aside = first.with_extension("tmp");
    std::fs::write(&aside, &files[0].1).unwrap();
    std::fs::rename(&aside, &first).unwrap();
    assert!(reader.refresh(&mut errors));
    let (again, _) = reader.snapshot_and_full().unwrap();
    assert_eq!(
        session_json(&again),
        session_json(&Session::load(&first).unwrap())
    );
    assert!(errors.is_empty(), "{errors:?}");
}
