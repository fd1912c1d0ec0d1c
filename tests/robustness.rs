//! Whatever a file holds, reading and rebuilding never panic.

mod common;

use proptest::prelude::*;
use worldline::export::{self, json::session_json};
use worldline::read::{FileIndex, Indexer};
use worldline::worldline::{AgentFiles, Session};

fn index_in_chunks(name: &str, bytes: &[u8], cuts: &[usize]) -> FileIndex {
    let mut ix = Indexer::new(name, "/nonexistent");
    let mut start = 0;
    for &c in cuts {
        let end = (start + c).min(bytes.len());
        ix.push(&bytes[start..end]);
        start = end;
    }
    ix.push(&bytes[start..]);
    ix.finish();
    ix.into_index()
}

/// Builds the files as kimi-cli's rotations: its source says where each
/// forks.
fn build(files: Vec<FileIndex>) -> Session {
    let (forks, lines) = worldline::sources::kimi_cli::forks::infer(&files);
    let s = Session::from_parts(
        std::path::Path::new("/nonexistent"),
        None,
        AgentFiles {
            files,
            forks,
            lines,
            ..AgentFiles::default()
        },
        Vec::new(),
    );
    // Every printer must cope with whatever was built.
    let _ = session_json(&s).to_string();
    let _ = export::text_tree(&s);
    let _ = export::dot(&s);
    let _ = export::mermaid(&s);
    s
}

fn fixture_lines() -> Vec<Vec<u8>> {
    let session = common::fixture_session("kimi-cli", "dmail_twice");
    let text = std::fs::read(session.join("context_1.jsonl")).unwrap();
    text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Duplicate(usize),
    Truncate(usize, usize),
    InsertBytes(usize, Vec<u8>),
    FlipByte(usize, usize, u8),
    Swap(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Truncate(a, b)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(a, b)| Edit::InsertBytes(a, b)),
        (any::<usize>(), any::<usize>(), any::<u8>()).prop_map(|(a, b, c)| Edit::FlipByte(a, b, c)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
    ]
}

fn apply(lines: &mut Vec<Vec<u8>>, e: &Edit) {
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    match e {
        Edit::Delete(i) => {
            lines.remove(i % n);
        }
        Edit::Duplicate(i) => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Edit::Truncate(i, at) => {
            let l = &mut lines[i % n];
            let len = l.len();
            l.truncate(at % (len + 1));
        }
        Edit::InsertBytes(i, bytes) => {
            let l = &mut lines[i % n];
            let at = bytes.len() % (l.len() + 1);
            l.splice(at..at, bytes.iter().copied());
        }
        Edit::FlipByte(i, at, b) => {
            let l = &mut lines[i % n];
            if !l.is_empty() {
                let at = at % l.len();
                l[at] = *b;
            }
        }
        Edit::Swap(a, b) => lines.swap(a % n, b % n),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_bytes_never_panic(
        a in proptest::collection::vec(any::<u8>(), 0..2000),
        b in proptest::collection::vec(any::<u8>(), 0..2000),
        cuts in proptest::collection::vec(0usize..300, 0..10),
    ) {
        let fa = index_in_chunks("context_1.jsonl", &a, &cuts);
        let whole = index_in_chunks("context_1.jsonl", &a, &[]);
        // Chunking never changes what is read.
        prop_assert_eq!(&fa, &whole);
        let fb = index_in_chunks("context.jsonl", &b, &cuts);
        build(vec![fa, fb]);
    }

    #[test]
    fn random_line_edits_never_panic(edits_a in proptest::collection::vec(edit(), 0..8),
                                     edits_b in proptest::collection::vec(edit(), 0..8)) {
        let base = fixture_lines();
        let mut a = base.clone();
        let mut b = base;
        for e in &edits_a { apply(&mut a, e); }
        for e in &edits_b { apply(&mut b, e); }
        let fa = index_in_chunks("context_1.jsonl", &a.join(&b'\n'), &[]);
        let fb = index_in_chunks("context.jsonl", &b.join(&b'\n'), &[]);
        let s = build(vec![fa, fb]);
        let main = s.main();
        // The shared prefix never exceeds either file.
        prop_assert!(main.lines[1].shared <= main.files[0].records.len().min(main.files[1].records.len()));
        // Every record has an owner: its own world line from `shared` on.
        for r in 0..main.files[1].records.len() {
            let o = main.owner(1, r).unwrap();
            prop_assert_eq!(o.line, if r < main.lines[1].shared { 0 } else { 1 });
        }
    }
}
