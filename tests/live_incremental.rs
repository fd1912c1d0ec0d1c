//! The follower builds each snapshot from the previous one
//! (`Session::build_from`); at every step of following a fixture as it is
//! written in random chunks, that snapshot equals one built from scratch
//! from the same parts (`Session::build`), field by field, and the last
//! one equals a fresh load of the final files.

mod common;

use std::path::{Path, PathBuf};

use common::{kimi_fixtures, replay::replay_steps, scenarios, session_dir, Rng};
use worldline::export::json::session_json;
use worldline::live::Reader;
use worldline::worldline::Session;

/// Refreshes and checks one step; returns how many snapshots were built.
fn step(reader: &mut Reader, what: &str, n: &mut usize) {
    let mut errors = Vec::new();
    if !reader.refresh(&mut errors) {
        return;
    }
    if let Some((incremental, full)) = reader.snapshot_and_full() {
        *n += 1;
        if *incremental != full {
            let (a, b) = (format!("{incremental:#?}"), format!("{full:#?}"));
            let at = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            let show = |s: &str| {
                s.lines()
                    .skip(at.saturating_sub(8))
                    .take(16)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            panic!(
                "{what}: snapshot {n} differs from a full build at line {at}:\n--- incremental\n{}\n--- full\n{}",
                show(&a),
                show(&b)
            );
        }
    }
}

#[test]
fn kimi_cli_fixtures_followed_in_chunks_build_as_from_scratch() {
    for scenario in kimi_fixtures() {
        let src = session_dir(&scenario);
        for seed in [1, 7, 42] {
            let tmp = tempfile::tempdir().unwrap();
            let dst = tmp.path().join(src.file_name().unwrap());
            std::fs::create_dir(&dst).unwrap();
            let what = format!("{} seed {seed}", scenario.display());
            let mut reader = Reader::new(&dst);
            let mut n = 0;
            replay_steps(&src, &dst, seed, || step(&mut reader, &what, &mut n));
            step(&mut reader, &what, &mut n);
            assert!(n > 10, "{what}: only {n} snapshots");
            let last = reader.snapshot().unwrap();
            let fin = Session::load(&dst).unwrap();
            assert_eq!(session_json(&last), session_json(&fin), "{what}");
        }
    }
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

/// Copies `dir` to `to`, leaving out (and returning) the wire files of the
/// session at `session`.
fn copy_but_wires(dir: &Path, to: &Path, session: &Path, wires: &mut Vec<(PathBuf, Vec<u8>)>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let t = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_but_wires(&p, &t, session, wires);
        } else if p.starts_with(session) && p.file_name().unwrap() == "wire.jsonl" {
            wires.push((t, std::fs::read(&p).unwrap()));
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

#[test]
fn kimi_code_fixtures_followed_in_chunks_build_as_from_scratch() {
    for scenario in scenarios("kimi-code") {
        let home = scenario.join("home");
        let src = session_dir(&home);
        for seed in [3, 11] {
            let tmp = tempfile::tempdir().unwrap();
            let mut wires = Vec::new();
            copy_but_wires(&home, &tmp.path().join("home"), &src, &mut wires);
            let dst = tmp
                .path()
                .join("home")
                .join(src.strip_prefix(&home).unwrap());
            let what = format!("{} seed {seed}", scenario.display());
            // Told apart from a kimi-cli session by its main wire: made
            // once that exists.
            let mut reader: Option<Reader> = None;
            let mut rng = Rng::new(seed);
            let mut at = vec![0; wires.len()];
            let mut n = 0;
            // The main wire first a little, then every wire in turns.
            while let Some(k) = (0..wires.len())
                .filter(|&k| at[k] < wires[k].1.len())
                .min_by_key(|&k| {
                    (
                        at[k] > 0 || !wires[k].0.ends_with("main/wire.jsonl"),
                        rng.range(0, 4),
                    )
                })
            {
                let (path, bytes) = &wires[k];
                let end = (at[k] + rng.range(1, 120)).min(bytes.len());
                append(path, &bytes[at[k]..end]);
                at[k] = end;
                let r = reader.get_or_insert_with(|| Reader::new(&dst));
                step(r, &what, &mut n);
            }
            assert!(n > 3, "{what}: only {n} snapshots");
            let last = reader.unwrap().snapshot().unwrap();
            let fin = Session::load(&dst).unwrap();
            assert_eq!(session_json(&last), session_json(&fin), "{what}");
        }
    }
}
