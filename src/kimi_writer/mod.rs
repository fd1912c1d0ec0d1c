//! Writing kimi-format session files exactly as kimi-cli does: context files
//! with their rotations, wire.jsonl, state.json, subagent metadata and the
//! share dir's kimi.json. Used by the demo agent, test replayers and
//! benchmark generators; worldline itself never writes a real session.

mod context;
mod files;
mod pyjson;
mod record;
mod wire;

use std::path::{Path, PathBuf};

pub use context::{max_rotation_index, Rotation, SessionWriter};
pub use files::{
    register_work_dir, session_dir, subagent_dir, work_dir_hash, write_atomic, write_state_json,
    write_subagent_meta, write_subagent_prompt, SubagentMeta,
};
pub use pyjson::{py_float_repr, Json};
pub use record::{
    checkpoint_line, checkpoint_message, compaction_message, dmail_injection_message,
    dmail_injection_text, message_line, system_prompt_line, usage_line, Content, Message, Part,
    ToolCall, ToolOutput, COMPACTION_HEADER, DMAIL_INJECTION_PREFIX, DMAIL_INJECTION_SUFFIX,
    SEND_DMAIL_ACCEPTED, SEND_DMAIL_NAME,
};
pub use wire::{
    event_line, metadata_line, payload, unix_now, Usage, WireWriter, WIRE_PROTOCOL_VERSION,
};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot revert to checkpoint {id}: there are {n_checkpoints} checkpoints")]
    NoSuchCheckpoint { id: i64, n_checkpoints: i64 },
}

impl WriteError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        WriteError::Io {
            path: path.to_owned(),
            source,
        }
    }
}
