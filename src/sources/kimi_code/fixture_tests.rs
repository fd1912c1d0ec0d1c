//! Every Kimi Code fixture against its `expected.json`, at the source level
//! (branches, ranges, marks, links), independent of the world-line builder.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{CodeSession, Home};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code");
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    out.sort();
    out
}

/// The expected.json shape of one session, computed by worldline.
pub fn structure(s: &CodeSession) -> Value {
    let mut agents = serde_json::Map::new();
    for a in &s.agents {
        let t = &a.tree;
        let name = |i: usize| t.branches[i].name.clone();
        let link = (a.id != "main").then(|| s.spawn_link(&a.id)).flatten();
        let branches: Vec<Value> = t
            .branches
            .iter()
            .map(|b| {
                json!({
                    "name": b.name, "parent": b.parent.map(name), "fork_line": b.fork_line,
                    "reason": b.reason, "turns": b.turns, "edge_line": b.edge_line,
                    "inferred": b.inferred,
                })
            })
            .collect();
        agents.insert(
            a.id.clone(),
            json!({
                "parent_agent": s.state.agent(&a.id).and_then(|x| x.parent_agent.clone()),
                "parent_tool_call_id": link.as_ref().and_then(|l| l.tool_call_id.clone()),
                "parent_line": link.as_ref().and_then(|l| l.line),
                "branches": branches,
                "active": name(t.active),
                "compactions": t.compactions.iter().map(|m| json!({"branch": name(m.branch), "line": m.line})).collect::<Vec<_>>(),
                "folded_undos": t.folded_undos.iter().map(|f| json!({"branch": name(f.branch), "line": f.line, "count": f.count})).collect::<Vec<_>>(),
                "active_ranges": t.chain(t.active).iter().map(|&(a, z)| json!([a, z])).collect::<Vec<_>>(),
                "line_count": t.line_count,
            }),
        );
    }
    json!({
        "title": s.state.title,
        "forked_from": s.forked_from().map(|f| json!({"session": f.session, "line": f.line})),
        "agents": agents,
    })
}

#[test]
fn every_fixture_matches_its_expected_structure() {
    let cases = cases();
    assert!(cases.len() >= 8, "fixtures missing: {cases:?}");
    for case in cases {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        let home = Home {
            dir: case.join("home"),
        };
        for (id, want) in expected["sessions"].as_object().unwrap() {
            let dir = home
                .find(id)
                .unwrap_or_else(|| panic!("{}: no session {id}", case.display()));
            let s = CodeSession::read(&dir).unwrap();
            let got = structure(&s);
            assert_eq!(&got, want, "{} {id}", case.display());
        }
    }
}

#[test]
fn the_fork_source_lists_its_fork() {
    let home = Home {
        dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kimi-code/f_fork/home"),
    };
    let src = CodeSession::read(
        &home
            .find("session_4e021896-67ef-4507-b8b1-5fa40033df94")
            .unwrap(),
    )
    .unwrap();
    let forks = src.forks();
    assert_eq!(forks.len(), 1);
    assert_eq!(
        forks[0].session,
        "session_1a3e18d6-5ebd-4b84-926f-58eebc6be33d"
    );
    assert_eq!(forks[0].line, Some(80));
    assert!(src.forked_from().is_none());
}

#[test]
fn branch_views_share_their_base_and_equal_whole_views_in_every_fixture() {
    for case in cases() {
        let sessions = case.join("home/sessions");
        for bucket in std::fs::read_dir(&sessions).unwrap().flatten() {
            for dir in std::fs::read_dir(bucket.path()).unwrap().flatten() {
                let Ok(s) = CodeSession::read(&dir.path()) else {
                    continue;
                };
                let parts = crate::sources::source_of(crate::sources::Tool::KimiCode)
                    .parts(&dir.path(), crate::sources::Reading::default())
                    .unwrap();
                for (a, ap) in s.agents.iter().zip(&parts.agents) {
                    for (b, f) in ap.files.iter().enumerate() {
                        let (whole, _) = super::records::branch_index(&a.wire, &a.tree, b);
                        assert_eq!(f.records, whole.records, "{:?} {} {b}", dir.path(), a.id);
                    }
                }
            }
        }
    }
}
