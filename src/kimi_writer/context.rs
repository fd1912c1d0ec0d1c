//! `SessionWriter`: appends to one agent's `context.jsonl` and rotates it the
//! way kimi-cli's `Context` does (D-Mail revert, clear, compaction).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::record::{self, Message};
use super::WriteError;

/// What a rotation did: where the old `context.jsonl` went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotation {
    /// `context_N.jsonl`, now holding the old world line.
    pub rotated_to: PathBuf,
    pub index: u32,
}

/// Writes one agent directory's context files (a main session dir or
/// `subagents/<id>/`). Each record is one `write` of the whole line.
#[derive(Debug)]
pub struct SessionWriter {
    dir: PathBuf,
    checkpoint_messages: bool,
    next_checkpoint: i64,
    token_count: u64,
    file: Option<File>,
}

impl SessionWriter {
    /// A writer for `dir/context.jsonl`, creating `dir` if needed. With
    /// `checkpoint_messages` (kimi does this when SendDMail is loaded) every
    /// checkpoint is followed by a `<system>CHECKPOINT N</system>` message.
    pub fn create(dir: impl Into<PathBuf>, checkpoint_messages: bool) -> Result<Self, WriteError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| WriteError::io(&dir, e))?;
        Ok(SessionWriter {
            dir,
            checkpoint_messages,
            next_checkpoint: 0,
            token_count: 0,
            file: None,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn context_path(&self) -> PathBuf {
        self.dir.join("context.jsonl")
    }

    /// The id the next checkpoint gets (kimi's `n_checkpoints`).
    pub fn n_checkpoints(&self) -> i64 {
        self.next_checkpoint
    }

    /// The last `_usage` written or restored.
    pub fn token_count(&self) -> u64 {
        self.token_count
    }

    /// Appends one pre-rendered line (must end with `\n`) in a single write.
    pub fn write_line(&mut self, line: &str) -> Result<(), WriteError> {
        let path = self.context_path();
        if self.file.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| WriteError::io(&path, e))?;
            self.file = Some(f);
        }
        if let Some(f) = self.file.as_mut() {
            f.write_all(line.as_bytes())
                .and_then(|()| f.flush())
                .map_err(|e| WriteError::io(&path, e))?;
        }
        Ok(())
    }

    pub fn system_prompt(&mut self, prompt: &str) -> Result<(), WriteError> {
        self.write_line(&record::system_prompt_line(prompt))
    }

    /// Writes the next `_checkpoint` (and its message if enabled); returns its id.
    pub fn checkpoint(&mut self) -> Result<i64, WriteError> {
        let id = self.next_checkpoint;
        self.write_line(&record::checkpoint_line(id))?;
        self.next_checkpoint += 1;
        if self.checkpoint_messages {
            self.message(&record::checkpoint_message(id))?;
        }
        Ok(id)
    }

    pub fn usage(&mut self, token_count: u64) -> Result<(), WriteError> {
        self.write_line(&record::usage_line(token_count))?;
        self.token_count = token_count;
        Ok(())
    }

    pub fn message(&mut self, message: &Message) -> Result<(), WriteError> {
        self.write_line(&record::message_line(message))
    }

    /// D-Mail revert, as kimi-cli: rotate, copy every valid line before
    /// `_checkpoint c` verbatim, write checkpoint `c` again (with its message)
    /// and then the D-Mail injection message.
    pub fn revert_to_checkpoint(&mut self, c: i64, dmail: &str) -> Result<Rotation, WriteError> {
        if c < 0 || c >= self.next_checkpoint {
            return Err(WriteError::NoSuchCheckpoint {
                id: c,
                n_checkpoints: self.next_checkpoint,
            });
        }
        let rotation = self.rotate()?;
        let prefix = read_prefix(&rotation.rotated_to, c)?;
        let new_path = self.context_path();
        let mut out = File::create(&new_path).map_err(|e| WriteError::io(&new_path, e))?;
        out.write_all(prefix.text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| WriteError::io(&new_path, e))?;
        self.file = Some(out);
        self.next_checkpoint = prefix.next_checkpoint;
        self.token_count = prefix.token_count;
        self.checkpoint()?;
        self.message(&record::dmail_injection_message(dmail))?;
        Ok(rotation)
    }

    /// `/clear`: rotate and leave an empty `context.jsonl`.
    pub fn clear(&mut self) -> Result<Rotation, WriteError> {
        let rotation = self.rotate()?;
        let path = self.context_path();
        self.file = Some(File::create(&path).map_err(|e| WriteError::io(&path, e))?);
        self.next_checkpoint = 0;
        self.token_count = 0;
        Ok(rotation)
    }

    /// Compaction: clear, then the system prompt, checkpoint 0, the compacted
    /// summary message, the preserved messages and the new token count.
    pub fn compact(
        &mut self,
        system_prompt: &str,
        summary: &str,
        preserved: &[Message],
        token_count: Option<u64>,
    ) -> Result<Rotation, WriteError> {
        let rotation = self.clear()?;
        self.system_prompt(system_prompt)?;
        self.checkpoint()?;
        self.message(&record::compaction_message(summary))?;
        for m in preserved {
            self.message(m)?;
        }
        if let Some(n) = token_count {
            self.usage(n)?;
        }
        Ok(rotation)
    }

    /// Reserves `context_{max N + 1}.jsonl` as an empty file (O_EXCL, 0600,
    /// counting up past any taken name) and renames `context.jsonl` onto it.
    fn rotate(&mut self) -> Result<Rotation, WriteError> {
        self.file = None;
        let mut index = max_rotation_index(&self.dir)? + 1;
        let rotated_to = loop {
            let candidate = self.dir.join(format!("context_{index}.jsonl"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&candidate)
            {
                Ok(_) => break candidate,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => index += 1,
                Err(e) => return Err(WriteError::io(&candidate, e)),
            }
        };
        let current = self.context_path();
        fs::rename(&current, &rotated_to).map_err(|e| WriteError::io(&current, e))?;
        Ok(Rotation { rotated_to, index })
    }
}

/// The largest N among `context_N.jsonl` in `dir`, 0 if none.
pub fn max_rotation_index(dir: &Path) -> Result<u32, WriteError> {
    let entries = fs::read_dir(dir).map_err(|e| WriteError::io(dir, e))?;
    let mut max = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let n = name
            .strip_prefix("context_")
            .and_then(|rest| rest.strip_suffix(".jsonl"))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u32>().ok());
        if let Some(n) = n {
            max = max.max(n);
        }
    }
    Ok(max)
}

struct Prefix {
    text: String,
    next_checkpoint: i64,
    token_count: u64,
}

/// Every valid line of `path` before `_checkpoint c`, byte for byte, plus the
/// state kimi restores from them.
fn read_prefix(path: &Path, c: i64) -> Result<Prefix, WriteError> {
    let file = File::open(path).map_err(|e| WriteError::io(path, e))?;
    let mut reader = BufReader::new(file);
    let mut prefix = Prefix {
        text: String::new(),
        next_checkpoint: 0,
        token_count: 0,
    };
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| WriteError::io(path, e))?;
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&raw);
        if line.trim().is_empty() {
            continue;
        }
        // kimi parses with strict=False: raw control characters are fine.
        let lenient: String = line
            .chars()
            .map(|ch| if ch < ' ' { ' ' } else { ch })
            .collect();
        let Ok(serde_json::Value::Object(obj)) =
            serde_json::from_str::<serde_json::Value>(&lenient)
        else {
            continue; // kimi skips malformed lines
        };
        let Some(role) = obj.get("role").and_then(|r| r.as_str()) else {
            continue;
        };
        let id = obj.get("id").and_then(|v| v.as_i64());
        if role == "_checkpoint" && id == Some(c) {
            break;
        }
        match role {
            "_checkpoint" => prefix.next_checkpoint = id.map_or(prefix.next_checkpoint, |i| i + 1),
            "_usage" => {
                if let Some(t) = obj.get("token_count").and_then(|v| v.as_u64()) {
                    prefix.token_count = t;
                }
            }
            _ => {}
        }
        prefix.text.push_str(&line);
        if !line.ends_with('\n') {
            prefix.text.push('\n');
        }
    }
    Ok(prefix)
}
