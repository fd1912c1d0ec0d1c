//! The live reader against files changed behind its back: truncated,
//! replaced (a new inode), deleted, and a 20 MB line arriving in pieces.
//! Each with the native and the poll watcher.

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::Seen;
use worldline::export::json::session_json;
use worldline::live::{self, LiveEvent, LiveHandle, LiveOptions};
use worldline::worldline::Session;

fn rec(role: &str, text: &str) -> String {
    format!("{{\"role\":\"{role}\",\"content\":\"{text}\"}}\n")
}

fn start(dir: &Path, poll: bool) -> (Receiver<LiveEvent>, LiveHandle) {
    let opts = LiveOptions {
        poll,
        poll_interval: Duration::from_millis(20),
    };
    live::spawn(dir.to_path_buf(), opts).unwrap()
}

fn session(poll: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(if poll { "s-poll" } else { "s-native" });
    std::fs::create_dir(&dir).unwrap();
    let mut text = String::from("{\"role\": \"_system_prompt\", \"content\": \"be brief\"}\n");
    text += "{\"role\": \"_checkpoint\", \"id\": 0}\n";
    text += &rec("user", "one");
    text += &rec("assistant", "two");
    std::fs::write(dir.join("context.jsonl"), text).unwrap();
    (tmp, dir)
}

fn records(s: &Session) -> usize {
    s.main().files.last().map_or(0, |f| f.records.len())
}

/// Waits until the follower shows exactly what a fresh load shows.
fn settles(seen: &mut Seen, rx: &Receiver<LiveEvent>, dir: &Path, what: &str) {
    let want = session_json(&Session::load(dir).unwrap());
    seen.until_snapshot(rx, what, |s| session_json(s) == want);
}

fn truncate_and_replace(poll: bool) {
    let (_tmp, dir) = session(poll);
    let (rx, _h) = start(&dir, poll);
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, "initial", |s| records(s) == 4);
    // Truncated in place, then rewritten shorter: read from the start.
    let path = dir.join("context.jsonl");
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap()
        .write_all(rec("user", "again").as_bytes())
        .unwrap();
    settles(&mut seen, &rx, &dir, "after truncation");
    // Replaced by a new file of the same length (written aside, renamed
    // over): only the inode tells.
    let tmp = dir.join("context.tmp");
    std::fs::write(&tmp, rec("user", "AGAIN")).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    settles(&mut seen, &rx, &dir, "after replacement");
    let last = seen.snapshots().last().unwrap().clone();
    let body = last
        .body(worldline::worldline::RecordRef {
            agent: 0,
            line: 0,
            record: 0,
        })
        .unwrap();
    assert_eq!(body.text(), "AGAIN");
    assert!(seen.errors().is_empty(), "{:?}", seen.errors());
}

fn deleted(poll: bool) {
    let (tmp, dir) = session(poll);
    let (rx, _h) = start(&dir, poll);
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, "initial", |s| records(s) == 4);
    std::fs::remove_dir_all(&dir).unwrap();
    seen.until(&rx, "deleted", |e| matches!(e, LiveEvent::Deleted));
    // Said once; and it comes back when the directory does.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("context.jsonl"), rec("user", "back")).unwrap();
    seen.until_snapshot(&rx, "recreated", |s| records(s) == 1);
    let deletions = seen
        .events
        .iter()
        .filter(|e| matches!(e, LiveEvent::Deleted))
        .count();
    assert_eq!(deletions, 1);
    drop(tmp);
}

fn huge_line_in_pieces(poll: bool) {
    let (_tmp, dir) = session(poll);
    let (rx, h) = start(&dir, poll);
    let mut seen = Seen::default();
    seen.until_snapshot(&rx, "initial", |s| records(s) == 4);
    let big = "x".repeat(20 << 20);
    let line = rec("tool", &big);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("context.jsonl"))
        .unwrap();
    let bytes = line.as_bytes();
    let piece = 1 << 20;
    for chunk in bytes.chunks(piece) {
        f.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    let done = seen.until_snapshot(&rx, "the big record", |s| records(s) == 5);
    assert_eq!(
        done.main().files[0].records[4].len() as usize,
        bytes.len() - 1
    );
    drop(h);
    seen.events.extend(rx.try_iter());
    // While it was arriving no half line was taken for a record or a warning.
    for s in seen.snapshots() {
        assert!(records(s) == 4 || records(s) == 5);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }
}

#[test]
fn truncated_and_replaced_files_are_read_again_native() {
    truncate_and_replace(false);
}

#[test]
fn truncated_and_replaced_files_are_read_again_poll() {
    truncate_and_replace(true);
}

#[test]
fn a_deleted_session_says_so_native() {
    deleted(false);
}

#[test]
fn a_deleted_session_says_so_poll() {
    deleted(true);
}

#[test]
fn a_20mb_line_waits_until_complete_native() {
    huge_line_in_pieces(false);
}

#[test]
fn a_20mb_line_waits_until_complete_poll() {
    huge_line_in_pieces(true);
}
