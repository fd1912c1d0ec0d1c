//! A scripted subagent run: its own directory, context and wire, advanced one
//! beat at a time by the parent, which relays each event in its own wire.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::kimi_writer::{
    payload, subagent_dir, write_subagent_meta, write_subagent_prompt, Json, Message, Part,
    SessionWriter, SubagentMeta, ToolCall, WireWriter, WriteError,
};

use super::script::{SubTask, ToolSpec};

/// kimi-cli's subagent wire.jsonl carries this older protocol version.
const SUBAGENT_WIRE_VERSION: &str = "1.1";

enum Beat {
    Start,
    Call(usize),
    Result(usize),
    Summary,
}

pub struct SubagentRun {
    pub agent_id: String,
    pub dir: PathBuf,
    task: SubTask,
    context: SessionWriter,
    wire: WireWriter,
    meta: SubagentMeta,
    beats: VecDeque<Beat>,
    calls: Vec<ToolCall>,
    tokens: u64,
}

/// One event the parent must relay as a `SubagentEvent`.
pub struct Relay {
    pub kind: &'static str,
    pub payload: Json,
}

impl SubagentRun {
    pub fn start(
        session_dir: &Path,
        agent_id: String,
        task: SubTask,
        now: f64,
    ) -> Result<Self, WriteError> {
        let dir = subagent_dir(session_dir, &agent_id);
        let meta = SubagentMeta {
            agent_id: agent_id.clone(),
            subagent_type: task.subagent_type.into(),
            status: "running".into(),
            description: task.description.into(),
            created_at: now,
            updated_at: now,
        };
        write_subagent_meta(&dir, &meta)?;
        write_subagent_prompt(&dir, task.prompt)?;
        // Subagents have no SendDMail, so no CHECKPOINT messages.
        let context = SessionWriter::create(&dir, false)?;
        let wire = WireWriter::create(dir.join("wire.jsonl"), SUBAGENT_WIRE_VERSION)?;
        let mut beats = VecDeque::from([Beat::Start]);
        for i in 0..task.steps.len() {
            beats.push_back(Beat::Call(i));
            beats.push_back(Beat::Result(i));
        }
        beats.push_back(Beat::Summary);
        Ok(SubagentRun {
            agent_id,
            dir,
            task,
            context,
            wire,
            meta,
            beats,
            calls: Vec::new(),
            tokens: 2400,
        })
    }

    pub fn is_done(&self) -> bool {
        self.beats.is_empty()
    }

    pub fn subagent_type(&self) -> &'static str {
        self.task.subagent_type
    }

    /// The parent's tool result text for its `Agent` call.
    pub fn result_text(&self) -> String {
        format!(
            "agent_id: {}\nresumed: false\nactual_subagent_type: {}\nstatus: completed\n\n[summary]\n{}",
            self.agent_id, self.task.subagent_type, self.task.summary
        )
    }

    /// Runs the next beat; returns the events to relay.
    pub fn beat(
        &mut self,
        now: f64,
        system_prompt: &str,
        next_call_id: &mut dyn FnMut() -> String,
    ) -> Result<Vec<Relay>, WriteError> {
        let mut relays = Vec::new();
        let Some(beat) = self.beats.pop_front() else {
            return Ok(relays);
        };
        let mut t = now;
        let mut emit =
            |wire: &mut WireWriter, kind: &'static str, p: Json| -> Result<(), WriteError> {
                t += 0.002;
                wire.event_at(t, kind, p.clone())?;
                relays.push(Relay { kind, payload: p });
                Ok(())
            };
        match beat {
            Beat::Start => {
                emit(
                    &mut self.wire,
                    "TurnBegin",
                    payload::turn_begin(self.task.prompt),
                )?;
                self.context.system_prompt(system_prompt)?;
                self.context.checkpoint()?;
                self.context.message(&Message::user(self.task.prompt))?;
            }
            Beat::Call(i) => {
                let (text, tool) = &self.task.steps[i];
                let call = match tool {
                    ToolSpec::Call { name, args, .. } => ToolCall::new(next_call_id(), *name, args),
                    _ => ToolCall::new(
                        next_call_id(),
                        "Glob",
                        &Json::obj([("pattern", Json::str("**/*"))]),
                    ),
                };
                emit(
                    &mut self.wire,
                    "StepBegin",
                    payload::step_begin(i as i64 + 1),
                )?;
                self.context.checkpoint()?;
                emit(
                    &mut self.wire,
                    "ContentPart",
                    payload::content_part(&Part::text(text.as_str())),
                )?;
                emit(&mut self.wire, "ToolCall", payload::tool_call(&call))?;
                self.context.usage(self.tokens)?;
                emit(&mut self.wire, "StatusUpdate", payload::status_update(None))?;
                self.calls.push(call);
            }
            Beat::Result(i) => {
                let (text, tool) = &self.task.steps[i];
                let result = match tool {
                    ToolSpec::Call { result, .. } => result.clone(),
                    _ => Default::default(),
                };
                let Some(call) = self.calls.get(i).cloned() else {
                    return Ok(relays);
                };
                emit(
                    &mut self.wire,
                    "ToolResult",
                    payload::tool_result(&call.id, &result),
                )?;
                self.context.message(
                    &Message::assistant(text.as_str()).with_tool_calls(vec![call.clone()]),
                )?;
                self.tokens += 40;
                self.context.usage(self.tokens)?;
                self.context
                    .message(&Message::tool_result(call.id, &result))?;
                self.tokens += (result.output.len() / 4) as u64 + 20;
            }
            Beat::Summary => {
                let n = self.task.steps.len() as i64 + 1;
                emit(&mut self.wire, "StepBegin", payload::step_begin(n))?;
                self.context.checkpoint()?;
                emit(
                    &mut self.wire,
                    "ContentPart",
                    payload::content_part(&Part::text(self.task.summary.as_str())),
                )?;
                self.context.usage(self.tokens)?;
                self.context
                    .message(&Message::assistant(self.task.summary.as_str()))?;
                self.tokens += (self.task.summary.len() / 4) as u64;
                self.context.usage(self.tokens)?;
                emit(&mut self.wire, "StatusUpdate", payload::status_update(None))?;
                emit(&mut self.wire, "TurnEnd", payload::empty())?;
                self.meta.status = "idle".into();
                self.meta.updated_at = t;
                write_subagent_meta(&self.dir, &self.meta)?;
                let output = format!("[summary]\n{}\n", self.task.summary);
                let path = self.dir.join("output");
                std::fs::write(&path, output).map_err(|e| WriteError::io(&path, e))?;
            }
        }
        Ok(relays)
    }
}
