//! kimi-cli's on-disk contract, every release from 0.35 to 1.52: the share
//! dir and lookup (`share`), which files form a session and in which order
//! (`layout`), side files (`meta`), and sessions made from sessions by
//! `/fork` and `/undo` (`lineage`). Loading hands the world-line builder a
//! [`SessionParts`]; the live tail (`crate::live`) asks the same rules.

pub mod layout;
pub mod lineage;
pub mod meta;
pub mod share;
pub mod wire;

use std::path::{Path, PathBuf};

pub use layout::{AgentSpec, Layout};
pub use share::{list, modified, resolve, sessions_in, Locator, SessionSummary};

use super::{AgentParts, SessionParts, WireLog};
use crate::error::{Error, Result};
use crate::read;

/// One context file of a family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub name: String,
    pub path: PathBuf,
    /// `N` of `<stem>_N.jsonl`; `None` for the current `<stem>.jsonl`.
    pub rotation: Option<u64>,
    pub len: u64,
}

/// A family's world-line files, oldest first (see [`layout::world_line_files`]).
pub fn family_files(dir: &Path, stem: &str) -> Result<Vec<ContextFile>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rotation) = layout::rotation_of(&name, stem) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        files.push(ContextFile {
            name,
            path: entry.path(),
            rotation,
            len: meta.len(),
        });
    }
    files.sort_by_key(|f| layout::family_order(f.rotation));
    let keep = layout::world_line_files(&files, |f| f.rotation, |f| f.len == 0);
    Ok(keep.into_iter().map(|i| files[i].clone()).collect())
}

/// Does this path name a session (a main world line exists)?
pub fn is_session(path: &Path) -> bool {
    let l = Layout::of(path);
    family_files(l.folder(), l.stem()).is_ok_and(|f| !f.is_empty())
}

/// Indexes one agent's family. File names carry the spec's prefix so
/// warnings from subagents say where they are.
pub fn read_agent(spec: &AgentSpec) -> Result<AgentParts> {
    let mut files = Vec::new();
    for cf in family_files(&spec.dir, &spec.stem)? {
        files.push(read::index_file(
            &cf.path,
            &format!("{}{}", spec.prefix, cf.name),
        )?);
    }
    Ok(AgentParts {
        dir: spec.dir.clone(),
        files,
        forks: Vec::new(),
        wire: spec.wire.as_deref().and_then(WireLog::read),
        meta: meta::read_meta(&spec.meta),
        link: spec.link.clone(),
        ..AgentParts::default()
    })
}

/// Everything about one session, read from disk.
pub fn parts(path: &Path) -> Result<SessionParts> {
    let layout = Layout::of(path);
    let main = read_agent(&layout.main())?;
    if main.files.is_empty() {
        return Err(Error::NoContextFile {
            path: path.to_path_buf(),
        });
    }
    let (specs, _) = layout::subagents(&layout);
    let mut subs = Vec::with_capacity(specs.len());
    for spec in &specs {
        subs.push((spec, read_agent(spec)?));
    }
    layout::sort_subagents(&mut subs, |(s, a)| {
        (*s, a.meta.as_ref().and_then(|m| m.created_at))
    });
    let title = layout
        .side_file(layout::STATE)
        .and_then(|p| meta::title(&p));
    let lineage = lineage::of(&layout, title.as_deref(), &main.files);
    Ok(SessionParts {
        dir: layout.path(),
        id: layout.id(),
        title,
        agents: std::iter::once(main)
            .chain(subs.into_iter().map(|(_, a)| a))
            .collect(),
        lineage,
        tool: super::Tool::KimiCli,
    })
}
