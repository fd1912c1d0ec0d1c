//! Reading a big rollout in two halves at once: the second half from the
//! first line start past the middle, on a thread of its own, then joined
//! after the first ([`Rollout::join`]) as one read in order would have
//! made it. Anything only an in-order read can judge (a `session_meta` or
//! a read error in the second half) reads the file again in order.

use std::fs::File;
use std::path::Path;

use super::rollout::{Feeder, Rollout};

/// Files smaller than this are read in one go.
const MIN: u64 = 16 << 20;

/// The rollout `file` (`len` bytes) read in two halves, or `None`: read
/// it in order (small, one core, or the halves don't join).
pub fn read(file: &File, len: u64, path: &Path, name: &str) -> Option<Rollout> {
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    if len < MIN || !two {
        return None;
    }
    let cut = crate::read::next_line_start(file, len / 2, len).ok()??;
    let (first, second) = std::thread::scope(|t| {
        let h = t.spawn(|| {
            let mut r = Rollout::new(path, name);
            r.reserve(len - cut);
            r.bytes = cut;
            let mut f = Feeder::default();
            feed(file, cut, len, &mut r, &mut f).ok()?;
            f.finish(&mut r);
            Some(r)
        });
        let mut r = Rollout::new(path, name);
        r.reserve(len);
        let mut f = Feeder::default();
        let first = feed(file, 0, cut, &mut r, &mut f).ok().map(|()| (r, f));
        (first, h.join().ok().flatten())
    });
    let ((mut r, f), rest) = (first?, second?);
    // The first half ends at a line end: nothing is pending.
    if f.pending_len() != 0 || r.bytes != cut {
        return None;
    }
    r.join(rest, f.lines).then_some(r)
}

/// Feeds bytes `from..to` of `file`; the file ending before `to` is an
/// error.
fn feed(file: &File, from: u64, to: u64, r: &mut Rollout, f: &mut Feeder) -> std::io::Result<()> {
    let read = crate::read::read_range(file, from, to, 1 << 20, |b| {
        f.feed(r, b);
    })?;
    if read < to - from {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The halves joined are the file read in order, whatever the seam
    /// falls on: ordinal gaps, bad lines, prompts, turns, blank lines.
    #[test]
    fn halves_joined_read_as_one() {
        let mut text =
            String::from("{\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{\"id\":\"t\"}}\n");
        let mut o = 1;
        for k in 0..600 {
            let line = match k % 9 {
                0 => format!("{{\"ordinal\":{o},\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_started\"}}}}"),
                1 => format!("{{\"ordinal\":{o},\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":\"p{k}\"}}}}"),
                2 => "not json".to_string(),
                3 => String::new(),
                4 => format!("{{\"ordinal\":{},\"type\":\"x\",\"payload\":{{}}}}", o + 3),
                5 => format!("{{\"ordinal\":{o},\"type\":\"event_msg\",\"payload\":{{\"type\":\"item_completed\",\"item\":{{\"type\":\"CollabAgentToolCall\",\"tool\":\"spawn_agent\",\"id\":\"s{k}\",\"receiver_thread_ids\":[\"a\"]}}}}}}"),
                _ => format!("{{\"ordinal\":{o},\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_complete\"}}}}"),
            };
            text += &line;
            text.push('\n');
            o += if k % 9 == 4 { 4 } else { 1 };
        }
        let whole = Rollout::parse(Path::new("/x"), "x", text.as_bytes());
        // Past the warnings kept: the rest counted.
        assert!(whole.dropped_warnings > 0);
        let cuts: Vec<usize> = text
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .filter(|&i| i < text.len())
            .collect();
        for cut in cuts {
            let (a, b) = text.as_bytes().split_at(cut);
            let mut first = Rollout::new(Path::new("/x"), "x");
            let mut f = Feeder::default();
            f.feed(&mut first, a);
            let mut rest = Rollout::new(Path::new("/x"), "x");
            rest.bytes = cut as u64;
            let mut g = Feeder::default();
            g.feed(&mut rest, b);
            g.finish(&mut rest);
            assert!(first.join(rest, f.lines), "cut {cut}");
            assert_eq!(first.records, whole.records, "cut {cut}");
            assert_eq!(first.entries, whole.entries, "cut {cut}");
            assert_eq!(first.warnings, whole.warnings, "cut {cut}");
            assert_eq!(first.dropped_warnings, whole.dropped_warnings, "cut {cut}");
            assert_eq!(first.bytes, whole.bytes);
            let prompts = |r: &Rollout| -> Vec<String> {
                r.entries
                    .iter()
                    .filter_map(|e| r.prompt(e).map(str::to_string))
                    .collect()
            };
            assert_eq!(prompts(&first), prompts(&whole));
            assert_eq!(first.spawns(), whole.spawns());
        }
    }

    #[test]
    fn a_big_file_reads_the_same_in_halves() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r.jsonl");
        let mut text =
            String::from("{\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{\"id\":\"t\"}}\n");
        let pad = "x".repeat(1000);
        let mut o = 1;
        while text.len() < (MIN as usize) + 4096 {
            text += &format!("{{\"ordinal\":{o},\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_started\",\"pad\":\"{pad}\"}}}}\n");
            o += 1;
        }
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        let halves = read(&file, text.len() as u64, &path, "r.jsonl");
        let whole = Rollout::parse(&path, "r.jsonl", text.as_bytes());
        if let Some(h) = halves {
            assert_eq!(h.records, whole.records);
            assert_eq!(h.entries, whole.entries);
            assert_eq!(h.warnings, whole.warnings);
        }
        // A second session_meta past the middle: read in order.
        let mut again = text.clone();
        again += "{\"ordinal\":1,\"type\":\"session_meta\",\"payload\":{\"id\":\"u\"}}\n";
        std::fs::write(&path, &again).unwrap();
        let file = File::open(&path).unwrap();
        assert!(read(&file, again.len() as u64, &path, "r.jsonl").is_none());
        let r = Rollout::read(&path, "r.jsonl").unwrap();
        assert!(r
            .warnings
            .iter()
            .any(|w| w.message.contains("another session_meta")));
    }
}
