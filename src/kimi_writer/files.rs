//! The share-dir layout around context files: `kimi.json`, session paths,
//! `state.json` and a subagent's `meta.json`/`prompt.txt`/`output`.

use std::fs;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use super::pyjson::Json;
use super::WriteError;

/// md5 hex of the work-dir path (UTF-8), the name of its sessions folder.
pub fn work_dir_hash(work_dir: &Path) -> String {
    let digest = Md5::digest(work_dir.to_string_lossy().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<share>/sessions/<md5(work_dir)>/<session_id>/`.
pub fn session_dir(share_dir: &Path, work_dir: &Path, session_id: &str) -> PathBuf {
    share_dir
        .join("sessions")
        .join(work_dir_hash(work_dir))
        .join(session_id)
}

/// Writes `path` via a temp file and rename, so readers never see half a file.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), WriteError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, text).map_err(|e| WriteError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| WriteError::io(path, e))
}

/// A session's `state.json` as kimi-cli writes it, titled `custom_title`.
pub fn write_state_json(session_dir: &Path, custom_title: &str) -> Result<(), WriteError> {
    let state = Json::obj([
        ("version", Json::Int(1)),
        (
            "approval",
            Json::obj([
                ("yolo", Json::Bool(false)),
                ("afk", Json::Bool(false)),
                ("auto_approve_actions", Json::Array(vec![])),
            ]),
        ),
        ("additional_dirs", Json::Array(vec![])),
        ("custom_title", Json::str(custom_title)),
        ("title_generated", Json::Bool(false)),
        ("title_generate_attempts", Json::Int(0)),
        ("plan_mode", Json::Bool(false)),
        ("plan_session_id", Json::Null),
        ("plan_slug", Json::Null),
        ("wire_mtime", Json::Null),
        ("archived", Json::Bool(false)),
        ("archived_at", Json::Null),
        ("auto_archive_exempt", Json::Bool(false)),
        ("todos", Json::Array(vec![])),
    ]);
    write_atomic(&session_dir.join("state.json"), &state.to_python_pretty())
}

/// A subagent's `meta.json` fields.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentMeta {
    pub agent_id: String,
    pub subagent_type: String,
    pub status: String,
    pub description: String,
    pub created_at: f64,
    pub updated_at: f64,
}

impl SubagentMeta {
    pub fn to_json(&self) -> Json {
        Json::obj([
            ("agent_id", Json::str(self.agent_id.as_str())),
            ("subagent_type", Json::str(self.subagent_type.as_str())),
            ("status", Json::str(self.status.as_str())),
            ("description", Json::str(self.description.as_str())),
            ("created_at", Json::Float(self.created_at)),
            ("updated_at", Json::Float(self.updated_at)),
            ("last_task_id", Json::Null),
            (
                "launch_spec",
                Json::obj([
                    ("agent_id", Json::str(self.agent_id.as_str())),
                    ("subagent_type", Json::str(self.subagent_type.as_str())),
                    ("model_override", Json::Null),
                    ("effective_model", Json::Null),
                    ("created_at", Json::Float(self.created_at)),
                ]),
            ),
        ])
    }
}

/// `subagents/<agent_id>/` under a session directory.
pub fn subagent_dir(session_dir: &Path, agent_id: &str) -> PathBuf {
    session_dir.join("subagents").join(agent_id)
}

/// Writes (or rewrites) `meta.json` in a subagent directory, creating it.
pub fn write_subagent_meta(agent_dir: &Path, meta: &SubagentMeta) -> Result<(), WriteError> {
    fs::create_dir_all(agent_dir).map_err(|e| WriteError::io(agent_dir, e))?;
    write_atomic(
        &agent_dir.join("meta.json"),
        &meta.to_json().to_python_pretty(),
    )
}

/// The subagent's task prompt, `prompt.txt`.
pub fn write_subagent_prompt(agent_dir: &Path, prompt: &str) -> Result<(), WriteError> {
    fs::create_dir_all(agent_dir).map_err(|e| WriteError::io(agent_dir, e))?;
    let path = agent_dir.join("prompt.txt");
    fs::write(&path, prompt).map_err(|e| WriteError::io(&path, e))
}

/// Registers `work_dir` in `<share>/kimi.json` with `last_session_id`,
/// keeping every other entry and field already there.
pub fn register_work_dir(
    share_dir: &Path,
    work_dir: &Path,
    session_id: &str,
) -> Result<(), WriteError> {
    fs::create_dir_all(share_dir).map_err(|e| WriteError::io(share_dir, e))?;
    let path = share_dir.join("kimi.json");
    let existing = match fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text).ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(WriteError::io(&path, e)),
    };
    let work_dir = work_dir.to_string_lossy().into_owned();
    let mut root = match existing.map(|v| Json::from_value(&v)) {
        Some(Json::Object(pairs)) => pairs,
        _ => Vec::new(),
    };
    let entry = Json::obj([
        ("path", Json::str(work_dir.as_str())),
        ("kaos", Json::str("local")),
        ("last_session_id", Json::str(session_id)),
    ]);
    let mut dirs = match root.iter().position(|(k, _)| k == "work_dirs") {
        Some(i) => match root.remove(i).1 {
            Json::Array(items) => items,
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    let same_path = |d: &Json| match d {
        Json::Object(pairs) => pairs
            .iter()
            .any(|(k, v)| k == "path" && *v == Json::str(work_dir.as_str())),
        _ => false,
    };
    match dirs.iter_mut().find(|d| same_path(d)) {
        Some(Json::Object(pairs)) => match pairs.iter_mut().find(|(k, _)| k == "last_session_id") {
            Some((_, v)) => *v = Json::str(session_id),
            None => pairs.push(("last_session_id".into(), Json::str(session_id))),
        },
        _ => dirs.push(entry),
    }
    root.insert(0, ("work_dirs".into(), Json::Array(dirs)));
    write_atomic(&path, &Json::Object(root).to_python_pretty())
}
