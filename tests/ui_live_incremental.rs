//! Issue #14: a live snapshot that only appends records extends the row
//! model and the map instead of rebuilding them. Equality is the test: every
//! fixture is written in random chunks (kimi-cli's rotations included), and
//! after every snapshot the app that extends and an app that rebuilds
//! everything for each snapshot agree on the row model, the map, the
//! selection, follow mode, the leap and search positions, and draw the same
//! screen; both equal the pure `RowModel::build` / `Map::of_session` of the
//! snapshot. Pure (no terminal: `TestBackend`), plus one run through the
//! real follower.

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Size;
use ratatui::Terminal;
use worldline::ui::app::{App, Live};
use worldline::ui::rows::RowModel;
use worldline::ui::theme::Theme;
use worldline::ui::view;
use worldline::worldline::map::{Appended, Map, Order};
use worldline::worldline::Session;

use common::{kimi_fixtures, scenarios, session_dir, Rng};

/// A file that grows: its final lines, written in order into `path`, and
/// where it goes when it is rotated away (kimi-cli's `context_N.jsonl`).
struct Stream {
    /// (written as, renamed to when done, its lines)
    files: Vec<(PathBuf, Option<PathBuf>, Vec<Vec<u8>>)>,
}

fn lines_of(path: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(path).unwrap();
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// kimi-cli: each agent directory's world lines, oldest first, written as
/// `context.jsonl` and renamed to their final name when the next begins;
/// every `wire.jsonl` grows alongside.
fn kimi_cli_streams(src: &Path, dst: &Path) -> Vec<Stream> {
    let mut streams = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    if let Ok(subs) = fs::read_dir(src.join("subagents")) {
        let mut v: Vec<PathBuf> = subs
            .flatten()
            .map(|e| Path::new("subagents").join(e.file_name()))
            .collect();
        v.sort();
        dirs.extend(v);
    }
    for rel in dirs {
        let mut rotated: Vec<(u32, PathBuf)> = fs::read_dir(src.join(&rel))
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n = name.strip_prefix("context_")?.strip_suffix(".jsonl")?;
                Some((n.parse().ok()?, e.path()))
            })
            .collect();
        rotated.sort();
        let current = dst.join(&rel).join("context.jsonl");
        let mut files: Vec<_> = rotated
            .iter()
            .map(|(_, p)| {
                let to = dst.join(&rel).join(p.file_name().unwrap());
                (current.clone(), Some(to), lines_of(p))
            })
            .collect();
        if src.join(&rel).join("context.jsonl").exists() {
            files.push((
                current.clone(),
                None,
                lines_of(&src.join(&rel).join("context.jsonl")),
            ));
        }
        streams.push(Stream { files });
        let wire = src.join(&rel).join("wire.jsonl");
        if wire.exists() {
            streams.push(Stream {
                files: vec![(dst.join(&rel).join("wire.jsonl"), None, lines_of(&wire))],
            });
        }
    }
    streams
}

/// Kimi Code: every agent's `wire.jsonl` grows.
fn kimi_code_streams(src: &Path, dst: &Path) -> Vec<Stream> {
    let mut v: Vec<PathBuf> = fs::read_dir(src.join("agents"))
        .unwrap()
        .flatten()
        .map(|e| Path::new("agents").join(e.file_name()).join("wire.jsonl"))
        .filter(|p| src.join(p).exists())
        .collect();
    v.sort();
    v.into_iter()
        .map(|rel| Stream {
            files: vec![(dst.join(&rel), None, lines_of(&src.join(&rel)))],
        })
        .collect()
}

/// Copies everything but the streams' files, then writes the streams in
/// random chunks of whole lines, interleaved; `step` runs after each chunk.
fn grow(src: &Path, dst: &Path, code: bool, seed: u64, max_chunk: usize, mut step: impl FnMut()) {
    copy_tree(src, dst);
    let streams = if code {
        kimi_code_streams(src, dst)
    } else {
        kimi_cli_streams(src, dst)
    };
    for s in &streams {
        for (path, to, _) in &s.files {
            let _ = fs::remove_file(path);
            if let Some(to) = to {
                let _ = fs::remove_file(to);
            }
        }
        if let Some((path, _, _)) = s.files.first() {
            fs::File::create(path).unwrap();
        }
    }
    // Position in each stream: (file, line).
    let mut at: Vec<(usize, usize)> = vec![(0, 0); streams.len()];
    let mut rng = Rng::new(seed);
    step();
    loop {
        let open: Vec<usize> = (0..streams.len())
            .filter(|&i| at[i].0 < streams[i].files.len())
            .collect();
        if open.is_empty() {
            break;
        }
        let i = open[rng.range(0, open.len() - 1)];
        let (f, l) = at[i];
        let (path, to, lines) = &streams[i].files[f];
        let mut n = rng.range(1, max_chunk);
        if l == 0 && f > 0 {
            // kimi-cli copies a reverted line's prefix in one quick loop,
            // then writes the checkpoint, its note and the D-Mail.
            let before = &streams[i].files[f - 1].2;
            let common = lines.iter().zip(before).take_while(|(a, b)| a == b).count();
            n = common + rng.range(1, 3);
        }
        let n = n.min(lines.len() - l);
        let mut out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for line in &lines[l..l + n] {
            out.write_all(line).unwrap();
        }
        drop(out);
        at[i].1 += n;
        step();
        if at[i].1 >= lines.len() {
            // This world line is done: rotate it away, begin the next.
            if let Some(to) = to {
                fs::rename(path, to).unwrap();
            }
            at[i] = (f + 1, 0);
            if let Some((next, _, _)) = streams[i].files.get(f + 1) {
                fs::File::create(next).unwrap();
            }
        }
    }
}

fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            fs::copy(e.path(), &to).unwrap();
        }
    }
}

const W: u16 = 100;
const H: u16 = 30;

fn draw(app: &mut App) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(W, H)).unwrap();
    app.prepare();
    t.draw(|f| view::draw(f, app)).unwrap();
    t.backend().buffer().clone()
}

/// The two apps agree, and each equals the snapshot built from scratch.
fn same(inc: &mut App, full: &mut App, s: &Session, what: &str) {
    let fam = s.agents.get(inc.agent()).map(|a| &a.family);
    // The lazy parts (`]` marks, the filter menu's tools) compared forced.
    let force = |m: &RowModel| {
        let m = m.clone();
        if let Some(f) = fam {
            m.marks(f);
            m.tools(f);
        }
        m
    };
    let built = RowModel::build(s, inc.agent(), inc.filter());
    assert_eq!(force(inc.rows()), force(&built), "{what}: rows vs built");
    assert_eq!(force(inc.rows()), force(full.rows()), "{what}: rows");
    let map = if inc.agent() == 0 {
        Map::of_session(s)
    } else {
        let f = &s.agents[inc.agent()].family;
        Map::of_family(f, &Order::of(f))
    };
    assert_eq!(inc.map(), &map, "{what}: map vs built");
    assert_eq!(inc.map(), full.map(), "{what}: map");
    let state = |a: &App| {
        (
            a.cursor(),
            a.scroll(),
            a.focus(),
            a.follow(),
            a.live(),
            a.leap().map(|l| l.line),
            a.status().map(str::to_string),
            a.selected(),
            a.search().at,
            a.search().hits.clone(),
        )
    };
    assert_eq!(state(inc), state(full), "{what}: state");
    assert_eq!(draw(inc), draw(full), "{what}: screen");
}

/// What a user might do between snapshots, on both apps alike.
fn act(apps: [&mut App; 2], rng: &mut Rng) {
    let keys: &[&[KeyCode]] = &[
        &[],
        &[],
        &[KeyCode::Char('k')],
        &[KeyCode::Char('j'), KeyCode::Char('j')],
        &[KeyCode::Enter],
        &[KeyCode::Char(']')],
        &[KeyCode::Char('a')],
        &[KeyCode::Char('G')],
        &[KeyCode::Char('F')],
        &[KeyCode::Char('l')],
    ];
    let pick = keys[rng.range(0, keys.len() - 1)];
    for app in apps {
        for &k in pick {
            common::ui::press_code(app, k);
        }
    }
}

fn follow_grown(src: &Path, code: bool, seed: u64, max_chunk: usize, follow: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(src.file_name().unwrap());
    let size = Size::new(W, H);
    let mut inc = App::new(Theme { color: true }, follow, size);
    let mut full = App::new(Theme { color: true }, follow, size);
    full.set_incremental(false);
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut n = 0;
    let mut extended = 0;
    let mut prev: Option<Arc<Session>> = None;
    let name = src.display().to_string();
    grow(src, &dst, code, seed, max_chunk, || {
        let Ok(s) = Session::load(&dst) else { return };
        let s = Arc::new(s);
        n += 1;
        if let Some(p) = &prev {
            let grew = p.agents.first().zip(s.agents.first());
            if grew.is_some_and(|(a, b)| Appended::between(&a.family, &b.family).is_some()) {
                extended += 1;
            }
        }
        inc.update(Live::Snapshot(s.clone()));
        full.update(Live::Snapshot(s.clone()));
        same(&mut inc, &mut full, &s, &format!("{name} snapshot {n}"));
        act([&mut inc, &mut full], &mut rng);
        same(&mut inc, &mut full, &s, &format!("{name} after keys {n}"));
        prev = Some(s);
    });
    assert!(n > 1, "{name}: snapshots");
    // Most snapshots only append: the test must exercise the extension.
    assert!(extended > 0, "{name}: no snapshot extended the last");
}

fn code_sessions() -> Vec<PathBuf> {
    scenarios("kimi-code")
        .iter()
        .filter_map(|s| {
            let sessions = s.join("home/sessions");
            let wd = fs::read_dir(sessions).ok()?.flatten().next()?.path();
            let mut v: Vec<PathBuf> = fs::read_dir(wd).ok()?.flatten().map(|e| e.path()).collect();
            v.sort();
            v.into_iter().next()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn kimi_cli_fixtures_grown_in_chunks_extend_as_rebuilt(
        seed in any::<u64>(),
        max_chunk in 1usize..6,
        follow in any::<bool>(),
    ) {
        for scenario in kimi_fixtures() {
            follow_grown(&session_dir(&scenario), false, seed, max_chunk, follow);
        }
    }

    #[test]
    fn kimi_code_fixtures_grown_in_chunks_extend_as_rebuilt(
        seed in any::<u64>(),
        max_chunk in 1usize..6,
        follow in any::<bool>(),
    ) {
        for dir in code_sessions() {
            follow_grown(&dir, true, seed, max_chunk, follow);
        }
    }
}

/// The pure extension on its own: a model of each prefix extended to the
/// next equals the model built on the next.
#[test]
fn row_model_and_map_extend_equal_built_along_a_growing_session() {
    let src = session_dir(&kimi_fixtures()[0]);
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("s");
    let mut prev: Option<(Session, RowModel, Map)> = None;
    let mut extended = 0;
    let mut added = 0;
    grow(&src, &dst, false, 7, 2, || {
        let Ok(s) = Session::load(&dst) else { return };
        let filter = Default::default();
        if let Some((old, mut rows, mut map)) = prev.take() {
            if let Some(g) = Appended::between(old.main(), s.main()) {
                if rows.extend(&s, g, &filter) {
                    map.extend(&old, &s, 0, g, rows.mark);
                    assert_eq!(rows, RowModel::build(&s, 0, &filter));
                    assert_eq!(map, Map::of_session(&s));
                    extended += 1;
                    added += usize::from(g.added);
                }
            }
        }
        let rows = RowModel::build(&s, 0, &filter);
        let map = Map::of_session(&s);
        prev = Some((s, rows, map));
    });
    assert!(extended > 3, "{extended} extensions");
    assert!(added > 0, "no snapshot added a world line by extension");
}

/// The same through the real follower: replayed fixtures (lines split
/// across writes, rotations as kimi-cli makes them), every snapshot it
/// hands over applied to both apps.
#[test]
fn follower_snapshots_extend_as_rebuilt() {
    use std::time::Duration;
    use worldline::live::{self, LiveOptions};
    for (k, scenario) in kimi_fixtures().iter().enumerate() {
        let src = session_dir(scenario);
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join(src.file_name().unwrap());
        fs::create_dir(&dst).unwrap();
        let opts = LiveOptions {
            poll: true,
            poll_interval: Duration::from_millis(5),
        };
        let (rx, handle) = live::spawn(dst.clone(), opts).unwrap();
        common::replay::replay(&src, &dst, 40 + k as u64);
        let want = worldline::export::json::session_json(&Session::load(&dst).unwrap());
        let mut seen = common::Seen::default();
        seen.until_snapshot(&rx, "the final state", |s| {
            worldline::export::json::session_json(s) == want
        });
        drop(handle);
        let size = Size::new(W, H);
        let mut inc = App::new(Theme { color: true }, true, size);
        let mut full = App::new(Theme { color: true }, true, size);
        full.set_incremental(false);
        for (n, s) in seen.snapshots().enumerate() {
            inc.update(Live::Snapshot(s.clone()));
            full.update(Live::Snapshot(s.clone()));
            same(
                &mut inc,
                &mut full,
                s,
                &format!("{} snapshot {n}", src.display()),
            );
        }
    }
}

/// What was read for the rows on screen stays read when records are only
/// appended or a world line added (nothing it shows changed); a
/// truncation starts afresh.
#[test]
fn previews_survive_an_append_and_a_new_world_line_not_a_truncation() {
    use common::{assistant, revert, sys, turn, write};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut lines = vec![sys()];
    for n in 0..3 {
        lines.extend(turn(n, &format!("question {n}"), &format!("answer {n}")));
    }
    write(dir, "context.jsonl", &lines);
    let mut app = App::new(Theme { color: true }, true, Size::new(W, H));
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    app.prepare();
    let first = worldline::worldline::RecordRef {
        agent: 0,
        line: 0,
        record: 4,
    };
    assert!(
        app.cache().get_preview(first).is_some(),
        "the first answer is on screen"
    );

    lines.push(assistant("more"));
    write(dir, "context.jsonl", &lines);
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    assert_eq!(
        app.cache().get_preview(first),
        Some("answer 0"),
        "kept across an append, before any prepare"
    );

    fs::rename(dir.join("context.jsonl"), dir.join("context_1.jsonl")).unwrap();
    write(dir, "context.jsonl", &revert(&lines, 1, "go back"));
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    assert_eq!(app.family().unwrap().lines.len(), 2);
    assert_eq!(
        app.cache().get_preview(first),
        Some("answer 0"),
        "a new world line keeps the old lines' records"
    );

    // A rewritten (shorter) file is not an extension: read again.
    fs::remove_file(dir.join("context.jsonl")).unwrap();
    write(dir, "context_1.jsonl", &lines[..6]);
    app.update(Live::Snapshot(Arc::new(Session::load(dir).unwrap())));
    assert_eq!(
        app.cache().get_preview(first),
        None,
        "a truncation reads again"
    );
}
