//! Following a Kimi Code session: one wire tail per agent (`agents/<id>/`),
//! `state.json` by its stamp, and the sessions forked from it beside it.
//! A wire that shrank or was replaced (a repair, a protocol rewrite) is
//! read again from its start by its tail; appends read only new bytes.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::{home, parts, AgentWire, CodeSession, ForkLink, SessionState, WireIndex};
use crate::read::{Follow, TailChange};
use crate::sources::follow::{Follower, Refresh};
use crate::sources::SessionParts;

type Stamp = (u64, Option<SystemTime>, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok(), m.ino()))
}

/// How often sessions forked from this one are looked for: a `/fork` writes
/// nothing into its source.
const FORK_SCAN: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct CodeState {
    dir: PathBuf,
    wires: BTreeMap<String, Follow<WireIndex>>,
    state_stamp: Option<Stamp>,
    state: SessionState,
    forks: Vec<ForkLink>,
    fork_lines: HashMap<String, Option<u32>>,
    last_fork_scan: Option<Instant>,
    dirs: Vec<PathBuf>,
}

impl CodeState {
    pub fn new(dir: &Path) -> CodeState {
        CodeState {
            dir: dir.to_path_buf(),
            wires: BTreeMap::new(),
            state_stamp: None,
            state: SessionState::default(),
            forks: Vec::new(),
            fork_lines: HashMap::new(),
            last_fork_scan: None,
            dirs: vec![dir.to_path_buf()],
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh {
        if !self.dir.is_dir() {
            return Refresh {
                changed: false,
                deleted: true,
            };
        }
        let mut changed = false;
        let ids = home::agent_ids(&self.dir);
        let before = self.wires.len();
        self.wires.retain(|id, _| ids.contains(id));
        changed |= before != self.wires.len();
        let mut dirs = vec![self.dir.clone(), home::agents_dir(&self.dir)];
        for id in &ids {
            let agent_dir = home::agent_dir(&self.dir, id);
            dirs.push(agent_dir.clone());
            let tail = self.wires.entry(id.clone()).or_insert_with(|| {
                let path = home::agent_wire(&self.dir, id);
                Follow::with_sink(
                    path.clone(),
                    WireIndex::new(home::agent_wire_name(id), path),
                )
            });
            match tail.poll() {
                Ok(TailChange::Appended(_)) | Ok(TailChange::Reset) => changed = true,
                Ok(_) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
        let st = stamp(&self.dir.join("state.json"));
        if st != self.state_stamp {
            self.state_stamp = st;
            self.state = SessionState::read(&self.dir);
            changed = true;
        }
        if self
            .last_fork_scan
            .is_none_or(|t| now.duration_since(t) >= FORK_SCAN)
        {
            self.last_fork_scan = Some(now);
            let forks = self.scan_forks();
            if forks != self.forks {
                self.forks = forks;
                changed = true;
            }
        }
        self.dirs = dirs;
        Refresh {
            changed,
            deleted: false,
        }
    }

    /// Sessions forked from this one; each fork's `forked` line is read once.
    fn scan_forks(&mut self) -> Vec<ForkLink> {
        let cs = CodeSession::from_parts(&self.dir, self.state.clone(), Vec::new());
        let mut found = cs.fork_candidates();
        for f in &mut found {
            let line = *self
                .fork_lines
                .entry(f.session.clone())
                .or_insert_with(|| f.line.take().or_else(|| cs.fork_line_of(&f.session)));
            f.line = line;
        }
        found
    }

    /// What a snapshot is built from. Any previous snapshot may be built
    /// from: a branch's records are compared with its old ones (they are
    /// read anew from the wire each time) and times come with the records.
    pub fn parts(&self) -> Option<SessionParts> {
        let main = self.wires.get("main")?;
        if main.read_to() == 0 {
            return None;
        }
        let agents: Vec<AgentWire> = home::agent_ids(&self.dir)
            .into_iter()
            .filter_map(|id| {
                let w = self.wires.get(&id)?;
                Some(AgentWire::from_wire(
                    &id,
                    home::agent_dir(&self.dir, &id),
                    w.sink().clone(),
                ))
            })
            .collect();
        let cs = CodeSession::from_parts(&self.dir, self.state.clone(), agents);
        Some(parts::session_parts(&cs, self.forks.clone()))
    }
}

impl Follower for CodeState {
    fn refresh(&mut self, now: Instant, errors: &mut Vec<String>) -> Refresh {
        CodeState::refresh(self, now, errors)
    }

    fn parts(&mut self) -> Option<(SessionParts, bool)> {
        CodeState::parts(self).map(|p| (p, false))
    }

    fn dirs(&self) -> &[PathBuf] {
        CodeState::dirs(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::test_util::append;
    use crate::worldline::Session;

    impl CodeState {
        fn snapshot(&mut self) -> Option<Session> {
            Some(Session::build(CodeState::parts(self)?))
        }
    }

    const HEAD: &str = "{\"type\":\"metadata\",\"protocol_version\":\"1.5\"}\n{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}\n{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}}\n";

    #[test]
    fn appends_an_edge_a_half_line_and_a_repair() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("session_x");
        let agents = dir.join("agents/main");
        std::fs::create_dir_all(&agents).unwrap();
        let wire = agents.join("wire.jsonl");
        append(&wire, HEAD);
        let mut st = CodeState::new(&dir);
        let mut errs = Vec::new();
        let t = Instant::now();
        assert!(st.refresh(t, &mut errs).changed);
        let s = st.snapshot().unwrap();
        assert_eq!(s.main().lines.len(), 1);
        assert_eq!(s.main().files[0].records.len(), 2);
        // An undo edge and half of the next line: the branch, not the half.
        append(&wire, "{\"type\":\"agent.switched\",\"branch\":\"b1\",\"reason\":\"undo\",\"base\":{\"branch\":\"main\",\"line\":2},\"turns\":1}\n{\"type\":\"context.append_message\",\"message\":{\"role\":\"user\",");
        assert!(st.refresh(t, &mut errs).changed);
        let s = st.snapshot().unwrap();
        assert_eq!(s.main().lines.len(), 2);
        assert_eq!(s.main().lines[1].shared, 1);
        assert_eq!(s.main().files[1].records.len(), 1);
        append(
            &wire,
            "\"content\":[{\"type\":\"text\",\"text\":\"c\"}]}}\n",
        );
        st.refresh(t, &mut errs);
        let s = st.snapshot().unwrap();
        assert_eq!(s.main().files[1].records.len(), 2);
        assert!(s.main().lines[1].current);
        // A repair truncates to the valid prefix: read again from the start.
        let bytes = std::fs::read(&wire).unwrap();
        std::fs::write(&wire, &bytes[..HEAD.len()]).unwrap();
        assert!(st.refresh(t, &mut errs).changed);
        let s = st.snapshot().unwrap();
        assert_eq!(s.main().lines.len(), 1);
        assert_eq!(s.main().files[0].records.len(), 2);
        // A rewrite (same lines, new file renamed over): replaced, read anew.
        let tmpw = agents.join("wire.jsonl.tmp");
        std::fs::write(&tmpw, HEAD.replace("\"b\"", "\"B\"")).unwrap();
        std::fs::rename(&tmpw, &wire).unwrap();
        assert!(st.refresh(t, &mut errs).changed);
        let s = st.snapshot().unwrap();
        let body = s
            .body(crate::worldline::RecordRef {
                agent: 0,
                line: 0,
                record: 1,
            })
            .unwrap();
        assert_eq!(body.text(), "B");
        assert!(errs.is_empty(), "{errs:?}");
    }
}
