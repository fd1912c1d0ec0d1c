//! Helpers for the live unit tests.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use crate::sources::Follower;
use crate::worldline::Session;

/// Appends `text` (any bytes: a piece may cut a character) to a file,
/// creating it.
pub fn append(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_ref())
        .unwrap();
}

/// Seeded cuts: 1 to `max` bytes.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self, max: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        1 + (self.0 % max as u64) as usize
    }
}

/// Where a follower's snapshot first differs from a whole read, with
/// the lines around it.
pub fn first_diff(a: &Session, b: &Session) -> String {
    let (a, b) = (format!("{a:#?}"), format!("{b:#?}"));
    let at = a
        .lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .unwrap_or(0);
    let show = |s: &str| {
        s.lines()
            .skip(at.saturating_sub(6))
            .take(14)
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "at line {at}:\n--- follower\n{}\n--- whole\n{}",
        show(&a),
        show(&b)
    )
}

/// Every `.jsonl` file under `fixtures/<agent>`, in path order.
pub fn fixture_files(agent: &str) -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(agent);
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every line of every `.jsonl` file under `fixtures/<agent>` (what a fast
/// line reader is checked against serde on).
pub fn fixture_lines(agent: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for p in fixture_files(agent) {
        let bytes = std::fs::read(&p).unwrap();
        out.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
    }
    out
}

/// Writes each of `files` in order, in seeded pieces of 1 to `max` bytes
/// (lines cut anywhere). After each piece the follower sees, its snapshot
/// (built from the last one) must be `whole()`, the session read whole,
/// wherever `comparable(file's bytes, bytes written)` says a whole read
/// agrees. Returns how many snapshots were compared.
pub fn follow_in_pieces(
    f: &mut dyn Follower,
    files: &[(&Path, &[u8])],
    seed: u64,
    max: usize,
    whole: &dyn Fn() -> Session,
    comparable: &dyn Fn(&[u8], usize) -> bool,
) -> usize {
    let mut rng = Rng(seed);
    let mut prev: Option<Session> = None;
    let mut n = 0;
    for &(path, bytes) in files {
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + rng.next(max)).min(bytes.len());
            append(path, &bytes[at..end]);
            at = end;
            // The stamp may not see a change within one mtime tick: the
            // length changes, so it does.
            let mut errors = Vec::new();
            if !f.refresh(Instant::now(), &mut errors).changed {
                continue;
            }
            assert!(errors.is_empty(), "{errors:?}");
            let (parts, fresh) = f.parts().unwrap();
            let live = Session::build_from(parts, prev.as_ref().filter(|_| !fresh));
            if comparable(bytes, at) {
                let whole = whole();
                assert!(
                    live == whole,
                    "{} after {at} of {} bytes: {}",
                    path.display(),
                    bytes.len(),
                    first_diff(&live, &whole)
                );
                n += 1;
            }
            prev = Some(live);
        }
    }
    n
}

/// Copies the tree `from` to `to`, leaving out `skip` (a file a test then
/// writes itself).
pub fn copy_dir(from: &Path, to: &Path, skip: Option<&Path>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if Some(p.as_path()) == skip {
            continue;
        }
        let dst = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dst, skip);
        } else {
            std::fs::copy(&p, &dst).unwrap();
        }
    }
}
