//! `DemoAgent`: a scripted kimi-cli agent loop. Each `step()` call does one
//! small piece of work (one "beat") and says how long to wait before the
//! next, so a runner can pace it for people and tests can run it flat out.
//! The script is finite: after its epilogue the agent only waits for a
//! D-Mail, which sends it back into the story.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::denwa::{DMail, DenwaRenji};
use crate::kimi_writer::{
    payload, register_work_dir, session_dir, write_state_json, Json, Message, Part, SessionWriter,
    ToolCall, ToolOutput, Usage, WireWriter, WriteError, SEND_DMAIL_NAME, WIRE_PROTOCOL_VERSION,
};

use super::clock::Clock;
use super::react::{self, Disk};
use super::rng::Rng;
use super::script::{self, DMailId, Item, ItemKind, StepSpec, ToolSpec};
use super::subagent::SubagentRun;

const MAX_CONTEXT_TOKENS: u64 = 262_144;

/// Seconds per unit of a beat's base pause at speed 1: the whole story takes
/// about five minutes at speed 1, so two and a half at the default speed 2.
const PACE: f64 = 2.6;

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Where and as whom the demo writes.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The share dir (`KIMI_SHARE_DIR`); `kimi.json` and `sessions/` go here.
    pub share_dir: PathBuf,
    /// The work dir the session belongs to (hashed into the sessions path).
    pub work_dir: PathBuf,
    pub session_id: String,
    /// Seeds tool-call ids, subagent ids and pacing jitter.
    pub seed: u64,
}

/// What the demo did that a viewer can check against the files.
#[derive(Debug, Clone, PartialEq)]
pub enum DemoEvent {
    TurnBegan {
        user_input: String,
    },
    /// The agent's own SendDMail call and whether DenwaRenji took it.
    DMailSent {
        checkpoint_id: i64,
        message: String,
        accepted: bool,
    },
    /// A revert: the old world line now lives in `rotated_to`.
    WorldLine {
        rotated_to: PathBuf,
        checkpoint_id: i64,
        message: String,
        own: bool,
    },
    SubagentStarted {
        agent_id: String,
        dir: PathBuf,
    },
    TurnEnded,
}

enum Op {
    TurnBegin(String),
    TurnEnd,
    StepBegin,
    Think(String),
    Text(String),
    Calls,
    Subagent,
    Finish,
}

struct StepState {
    spec: StepSpec,
    parts: Vec<Part>,
    calls: Vec<ToolCall>,
    /// Target checkpoint of a SendDMail call, by call index.
    dmail_targets: Vec<Option<(DMailId, i64)>>,
    sub: Option<SubagentRun>,
    tokens_in: u64,
}

pub struct DemoAgent {
    session_dir: PathBuf,
    system_prompt: String,
    context: SessionWriter,
    wire: WireWriter,
    renji: Arc<Mutex<DenwaRenji>>,
    clock: Box<dyn Clock>,
    rng: Rng,
    script: Vec<Item>,
    cursor: usize,
    /// Script index of the item running now.
    current_item: usize,
    /// Script index behind each checkpoint of the current world line.
    checkpoint_items: Vec<usize>,
    /// Lessons the current world line has learnt, with the checkpoint its
    /// D-Mail landed after (a revert to it or before forgets the lesson).
    known: Vec<(DMailId, i64)>,
    own_pending: Option<(DMailId, DMail)>,
    /// Steps taking up a user's D-Mail, run before the script goes on.
    inject: VecDeque<StepSpec>,
    /// Side effects so far; reverts never undo them.
    disk: Disk,
    ops: VecDeque<Op>,
    step: Option<StepState>,
    in_turn: bool,
    step_no: i64,
    tokens: u64,
    /// The epilogue was written; the agent waits for a D-Mail.
    finished: bool,
    events: Vec<DemoEvent>,
}

fn lock(renji: &Mutex<DenwaRenji>) -> MutexGuard<'_, DenwaRenji> {
    // A panic elsewhere must not stop the demo; DenwaRenji's state stays valid.
    renji.lock().unwrap_or_else(|e| e.into_inner())
}

impl DemoAgent {
    /// Creates the session directory, registers it in `kimi.json` and writes
    /// `state.json`, the system prompt and the wire metadata.
    pub fn create(
        cfg: &DemoConfig,
        renji: Arc<Mutex<DenwaRenji>>,
        clock: Box<dyn Clock>,
    ) -> Result<Self, DemoError> {
        let dir = session_dir(&cfg.share_dir, &cfg.work_dir, &cfg.session_id);
        let context = SessionWriter::create(&dir, true)?;
        register_work_dir(&cfg.share_dir, &cfg.work_dir, &cfg.session_id)?;
        write_state_json(&dir, "Fix tally sum crash on CSV header rows")?;
        let wire = WireWriter::create(dir.join("wire.jsonl"), WIRE_PROTOCOL_VERSION)?;
        let system_prompt = system_prompt(&cfg.work_dir);
        let mut agent = DemoAgent {
            session_dir: dir,
            system_prompt,
            context,
            wire,
            renji,
            clock,
            rng: Rng::new(cfg.seed),
            script: script::main_script(),
            cursor: 0,
            current_item: 0,
            checkpoint_items: Vec::new(),
            known: Vec::new(),
            own_pending: None,
            inject: VecDeque::new(),
            disk: Disk::default(),
            ops: VecDeque::new(),
            step: None,
            in_turn: false,
            step_no: 0,
            tokens: 0,
            finished: false,
            events: Vec::new(),
        };
        let prompt = agent.system_prompt.clone();
        agent.context.system_prompt(&prompt)?;
        agent.tokens = 3000 + (prompt.len() / 4) as u64;
        Ok(agent)
    }

    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    pub fn renji(&self) -> &Arc<Mutex<DenwaRenji>> {
        &self.renji
    }

    pub fn events(&self) -> &[DemoEvent] {
        &self.events
    }

    /// True once the story has ended (its epilogue is written) and no D-Mail
    /// has sent the agent back into it since.
    pub fn finished(&self) -> bool {
        self.finished && self.ops.is_empty()
    }

    /// World lines of the session so far: one more than the reverts.
    pub fn world_lines(&self) -> usize {
        1 + self
            .events
            .iter()
            .filter(|e| matches!(e, DemoEvent::WorldLine { .. }))
            .count()
    }

    /// Does one beat of work; returns the pause before the next at speed 1.
    /// After the end a beat only looks for a D-Mail to act on.
    pub fn step(&mut self) -> Result<Duration, DemoError> {
        if self.ops.is_empty() && self.finished {
            let pending = lock(&self.renji).fetch_pending_dmail();
            if let Some(dmail) = pending {
                self.finished = false;
                self.revert(dmail)?;
                return Ok(Duration::from_millis(1500));
            }
            return Ok(Duration::from_millis(500));
        }
        if self.ops.is_empty() {
            self.plan_next();
        }
        let Some(op) = self.ops.pop_front() else {
            return Ok(Duration::from_millis(500));
        };
        let base = match op {
            Op::TurnBegin(user) => self.turn_begin(user)?,
            Op::TurnEnd => self.turn_end()?,
            Op::StepBegin => self.step_begin()?,
            Op::Think(t) => self.content(Part::think(t), 1.3)?,
            Op::Text(t) => self.content(Part::text(t), 0.9)?,
            Op::Calls => self.calls()?,
            Op::Subagent => self.subagent_beat()?,
            Op::Finish => self.finish()?,
        };
        let jitter = 0.7 + 0.6 * self.rng.unit();
        Ok(Duration::from_secs_f64(PACE * base * jitter))
    }

    fn knows(&self, id: DMailId) -> bool {
        self.known.iter().any(|(k, _)| *k == id)
    }

    fn gate_open(&self, item: &Item) -> bool {
        item.before.iter().all(|id| !self.knows(*id)) && item.after.iter().all(|id| self.knows(*id))
    }

    /// The newest checkpoint of this world line made at the labelled item.
    fn checkpoint_at_label(&self, label: &str) -> Option<i64> {
        let idx = self.script.iter().position(|i| i.label == Some(label))?;
        let c = self.checkpoint_items.iter().rposition(|&i| i == idx)?;
        i64::try_from(c).ok()
    }

    fn plan_next(&mut self) {
        if let Some(spec) = self.inject.pop_front() {
            self.plan_step(spec, Vec::new());
            return;
        }
        while let Some(item) = self.script.get(self.cursor).cloned() {
            let idx = self.cursor;
            self.cursor += 1;
            if !self.gate_open(&item) {
                continue;
            }
            match item.kind {
                ItemKind::Turn { user } => {
                    if self.in_turn {
                        self.ops.push_back(Op::TurnEnd);
                    }
                    self.current_item = idx;
                    self.ops.push_back(Op::TurnBegin(user));
                }
                ItemKind::Step(spec) => {
                    let mut dmail_targets = Vec::new();
                    for tool in &spec.tools {
                        dmail_targets.push(match tool {
                            ToolSpec::DMail { id, target, .. } => {
                                match self.checkpoint_at_label(target) {
                                    Some(c) => Some((*id, c)),
                                    None => break,
                                }
                            }
                            _ => None,
                        });
                    }
                    if dmail_targets.len() < spec.tools.len() {
                        continue; // its D-Mail target is not on this world line
                    }
                    self.current_item = idx;
                    self.plan_step(spec, dmail_targets);
                }
                ItemKind::Epilogue => {
                    self.current_item = idx;
                    let spec = StepSpec {
                        think: None,
                        text: self.epilogue(),
                        tools: Vec::new(),
                    };
                    self.plan_step(spec, Vec::new());
                    self.finished = true;
                }
            }
            return;
        }
        // Past the end without an epilogue (a D-Mail to after it): close
        // the turn and wait.
        if self.in_turn {
            self.ops.push_back(Op::TurnEnd);
        }
        self.finished = true;
    }

    fn plan_step(&mut self, spec: StepSpec, dmail_targets: Vec<Option<(DMailId, i64)>>) {
        self.ops.push_back(Op::StepBegin);
        if let Some(t) = &spec.think {
            self.ops.push_back(Op::Think(t.clone()));
        }
        self.ops.push_back(Op::Text(spec.text.clone()));
        if !spec.tools.is_empty() {
            self.ops.push_back(Op::Calls);
        }
        if spec
            .tools
            .iter()
            .any(|t| matches!(t, ToolSpec::Subagent(_)))
        {
            self.ops.push_back(Op::Subagent);
        }
        self.ops.push_back(Op::Finish);
        self.step = Some(StepState {
            spec,
            parts: Vec::new(),
            calls: Vec::new(),
            dmail_targets,
            sub: None,
            tokens_in: 0,
        });
    }

    /// The agent's closing words: what each world line of this session was.
    fn epilogue(&self) -> String {
        let made: Vec<(i64, bool)> = self
            .events
            .iter()
            .filter_map(|e| match e {
                DemoEvent::WorldLine {
                    checkpoint_id, own, ..
                } => Some((*checkpoint_id, *own)),
                _ => None,
            })
            .collect();
        let by = |own: bool| if own { "my own D-Mail" } else { "your D-Mail" };
        let n = made.len() + 1;
        let names: Vec<String> = (0..n).map(crate::worldline::names::line_name).collect();
        // The ending and the keys come first: a small screen shows the top.
        let mut out = format!(
            "Done: README.md now shows `--header` and `--skip-blank`. That is the end of \
             the demo: {n} world line{} ({}).\n\n{TRY_KEYS}\n\n",
            if n == 1 { "" } else { "s" },
            names.join(" ")
        );
        for (i, name) in names.iter().enumerate() {
            let file = if i == made.len() {
                "context.jsonl".to_string()
            } else {
                format!("context_{}.jsonl", i + 1)
            };
            let began = match i.checked_sub(1).map(|k| made[k]) {
                None => "the first attempt".to_string(),
                Some((c, own)) => format!("began with {} to checkpoint {c}", by(own)),
            };
            let ended = match made.get(i) {
                Some(&(c, own)) => format!("left behind by {} to checkpoint {c}", by(own)),
                None => "the current one, where the work is done".to_string(),
            };
            out.push_str(&format!("- {name} ({file}): {began}; {ended}.\n"));
        }
        out.trim_end().to_string()
    }

    /// A timestamp for the next wire event; the wire keeps them increasing.
    fn ts(&self) -> f64 {
        self.clock.now()
    }

    fn turn_begin(&mut self, user: String) -> Result<f64, DemoError> {
        self.wire
            .event_at(self.ts(), "TurnBegin", payload::turn_begin(&user))?;
        self.context.checkpoint()?;
        self.checkpoint_items.push(self.current_item);
        self.context.message(&Message::user(user.as_str()))?;
        self.tokens += (user.len() / 4) as u64 + 8;
        self.in_turn = true;
        self.step_no = 0;
        self.events.push(DemoEvent::TurnBegan { user_input: user });
        Ok(1.0)
    }

    fn turn_end(&mut self) -> Result<f64, DemoError> {
        self.wire.event_at(self.ts(), "TurnEnd", payload::empty())?;
        self.in_turn = false;
        self.events.push(DemoEvent::TurnEnded);
        // The "user" reads the answer and types the next request.
        Ok(3.0)
    }

    fn step_begin(&mut self) -> Result<f64, DemoError> {
        self.step_no += 1;
        self.wire
            .event_at(self.ts(), "StepBegin", payload::step_begin(self.step_no))?;
        self.context.checkpoint()?;
        self.checkpoint_items.push(self.current_item);
        lock(&self.renji).set_n_checkpoints(self.context.n_checkpoints());
        if let Some(s) = self.step.as_mut() {
            s.tokens_in = self.tokens;
        }
        Ok(0.6)
    }

    fn content(&mut self, part: Part, pause: f64) -> Result<f64, DemoError> {
        self.wire
            .event_at(self.ts(), "ContentPart", payload::content_part(&part))?;
        if let Some(s) = self.step.as_mut() {
            s.parts.push(part);
        }
        Ok(pause)
    }

    fn status(&mut self, tokens_in: u64, output: u64) -> Result<(), DemoError> {
        let usage = Usage {
            context_tokens: tokens_in,
            max_context_tokens: MAX_CONTEXT_TOKENS,
            output,
        };
        self.wire.event_at(
            self.ts(),
            "StatusUpdate",
            payload::status_update(Some(usage)),
        )?;
        Ok(())
    }

    fn output_tokens(step: &StepState) -> u64 {
        let text: usize = step.spec.text.len() + step.spec.think.as_ref().map_or(0, String::len);
        let args: usize = step.calls.iter().map(|c| c.arguments.len()).sum();
        ((text + args) / 4) as u64 + 12
    }

    fn calls(&mut self) -> Result<f64, DemoError> {
        let Some(mut step) = self.step.take() else {
            return Ok(0.1);
        };
        for (i, tool) in step.spec.tools.iter().enumerate() {
            let id = self.rng.tool_call_id();
            let call = match tool {
                ToolSpec::Call { name, args, .. } => ToolCall::new(id, *name, args),
                ToolSpec::Subagent(task) => {
                    let args = Json::obj([
                        ("description", Json::str(task.description)),
                        ("prompt", Json::str(task.prompt)),
                        ("subagent_type", Json::str(task.subagent_type)),
                    ]);
                    ToolCall::new(id, "Agent", &args)
                }
                ToolSpec::DMail { message, .. } => {
                    let c = step
                        .dmail_targets
                        .get(i)
                        .copied()
                        .flatten()
                        .map_or(0, |(_, c)| c);
                    let args = Json::obj([
                        ("message", Json::str(message.as_str())),
                        ("checkpoint_id", Json::Int(c)),
                    ]);
                    ToolCall::new(id, SEND_DMAIL_NAME, &args)
                }
            };
            self.wire
                .event_at(self.ts(), "ToolCall", payload::tool_call(&call))?;
            step.calls.push(call);
        }
        let output = Self::output_tokens(&step);
        self.context.usage(step.tokens_in)?;
        self.status(step.tokens_in, output)?;
        for tool in &step.spec.tools {
            if let ToolSpec::Subagent(task) = tool {
                let agent_id = self.rng.agent_id();
                let run = SubagentRun::start(
                    &self.session_dir,
                    agent_id.clone(),
                    task.clone(),
                    self.ts(),
                )?;
                self.events.push(DemoEvent::SubagentStarted {
                    agent_id,
                    dir: run.dir.clone(),
                });
                step.sub = Some(run);
            }
        }
        self.step = Some(step);
        Ok(1.0)
    }

    fn subagent_beat(&mut self) -> Result<f64, DemoError> {
        let Some(mut step) = self.step.take() else {
            return Ok(0.1);
        };
        let parent_call = step
            .spec
            .tools
            .iter()
            .zip(&step.calls)
            .find(|(t, _)| matches!(t, ToolSpec::Subagent(_)))
            .map(|(_, c)| c.id.clone())
            .unwrap_or_default();
        if let Some(run) = step.sub.as_mut() {
            let rng = &mut self.rng;
            let mut next_id = || rng.tool_call_id();
            let relays = run.beat(self.clock.now(), &self.system_prompt, &mut next_id)?;
            for r in relays {
                let p = payload::subagent_event(
                    &parent_call,
                    &run.agent_id,
                    run.subagent_type(),
                    r.kind,
                    r.payload,
                );
                self.wire.event_at(self.clock.now(), "SubagentEvent", p)?;
            }
            if !run.is_done() {
                self.ops.push_front(Op::Subagent);
            }
        }
        self.step = Some(step);
        Ok(0.8)
    }

    fn run_tool(&mut self, step: &StepState, i: usize) -> ToolOutput {
        match &step.spec.tools[i] {
            ToolSpec::Call { name, args, result } => {
                self.note_disk(name, args);
                result.clone()
            }
            ToolSpec::Subagent(_) => ToolOutput::ok(
                "",
                step.sub
                    .as_ref()
                    .map(SubagentRun::result_text)
                    .unwrap_or_default(),
            ),
            ToolSpec::DMail { message, .. } => {
                let (id, c) = step
                    .dmail_targets
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or((0, 0));
                let dmail = DMail {
                    message: message.clone(),
                    checkpoint_id: c,
                };
                let sent = lock(&self.renji).send_dmail(dmail.clone());
                self.events.push(DemoEvent::DMailSent {
                    checkpoint_id: c,
                    message: message.clone(),
                    accepted: sent.is_ok(),
                });
                if sent.is_ok() {
                    self.own_pending = Some((id, dmail));
                }
                ToolOutput::send_dmail(sent.map_err(|e| e.to_string()))
            }
        }
    }

    /// Remembers the story's two fixes once they are made: no revert
    /// undoes them, and later test runs say so.
    fn note_disk(&mut self, name: &str, args: &Json) {
        if name != "StrReplaceFile" {
            return;
        }
        let field = |j: &'_ Json, k: &str| -> Option<Json> {
            match j {
                Json::Object(pairs) => pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
                _ => None,
            }
        };
        let (Some(Json::Str(path)), Some(Json::Str(new))) = (
            field(args, "path"),
            field(args, "edit").and_then(|e| field(&e, "new")),
        ) else {
            return;
        };
        match path.as_str() {
            "tally/parse.py" if new.contains("next(reader, None)\n        rows = list(reader)") => {
                self.disk.parse_fixed = true;
            }
            "tally/cli.py" if new.contains("skip_header=args.header") => self.disk.cli_fixed = true,
            _ => {}
        }
    }

    fn finish(&mut self) -> Result<f64, DemoError> {
        let Some(step) = self.step.take() else {
            return Ok(0.1);
        };
        let output = Self::output_tokens(&step);
        let results: Vec<ToolOutput> = (0..step.calls.len())
            .map(|i| self.run_tool(&step, i))
            .collect();
        if step.calls.is_empty() {
            self.context.usage(step.tokens_in)?;
            self.status(step.tokens_in, output)?;
        }
        for (call, result) in step.calls.iter().zip(&results) {
            self.wire.event_at(
                self.ts(),
                "ToolResult",
                payload::tool_result(&call.id, result),
            )?;
        }
        let assistant = Message::assistant(step.parts.clone()).with_tool_calls(step.calls.clone());
        self.context.message(&assistant)?;
        self.tokens = step.tokens_in + output;
        // The epilogue stays the last record, so a viewer following the
        // head shows it (kimi-cli writes this count; a reader recomputes).
        if !(self.finished && step.calls.is_empty()) {
            self.context.usage(self.tokens)?;
        }
        for (call, result) in step.calls.iter().zip(&results) {
            self.context
                .message(&Message::tool_result(call.id.as_str(), result))?;
            self.tokens += (result.output.len() + result.message.len()) as u64 / 4 + 6;
        }
        let pending = lock(&self.renji).fetch_pending_dmail();
        if let Some(dmail) = pending {
            self.revert(dmail)?;
            return Ok(1.5);
        }
        if step.calls.is_empty() {
            self.turn_end()?;
            return Ok(3.0);
        }
        Ok(1.0)
    }

    /// kimi-cli's BackToTheFuture: rotate, copy the prefix, checkpoint again,
    /// inject the D-Mail, and carry on from the script item behind it.
    fn revert(&mut self, dmail: DMail) -> Result<(), DemoError> {
        let own = self
            .own_pending
            .take()
            .filter(|(_, d)| *d == dmail)
            .map(|(id, _)| id);
        let c = dmail.checkpoint_id;
        let Some(&item) = usize::try_from(c)
            .ok()
            .and_then(|i| self.checkpoint_items.get(i))
        else {
            return Ok(()); // DenwaRenji never lets this happen
        };
        let resume = if self.script[item].is_turn() {
            item + 1
        } else {
            item
        };
        let rotation = self.context.revert_to_checkpoint(c, &dmail.message)?;
        self.checkpoint_items.truncate(c as usize);
        self.checkpoint_items.push(resume);
        // Lessons whose D-Mail landed at or after ⚑c are gone with their line.
        self.known.retain(|&(_, at)| at < c);
        // Close the window in which a client could aim at a vanished checkpoint.
        lock(&self.renji).set_n_checkpoints(self.context.n_checkpoints());
        self.tokens = self.context.token_count().max(3000) + (dmail.message.len() / 4) as u64 + 60;
        self.step = None;
        self.inject.clear();
        match own {
            Some(id) => self.known.push((id, c)),
            None => {
                // A lesson counts only while the path it opens is still ahead.
                for id in react::lessons_in(&dmail.message) {
                    let ahead = self.script[resume..].iter().any(|i| i.after.contains(&id));
                    if ahead && !self.knows(id) {
                        self.known.push((id, c));
                    }
                }
                self.inject = react::reaction(&dmail.message, self.disk).into();
            }
        }
        self.finished = false;
        self.ops.clear();
        self.cursor = resume;
        self.in_turn = true;
        self.events.push(DemoEvent::WorldLine {
            rotated_to: rotation.rotated_to,
            checkpoint_id: c,
            message: dmail.message,
            own: own.is_some(),
        });
        Ok(())
    }
}

fn system_prompt(work_dir: &Path) -> String {
    format!(
        "You are Kimi Code CLI, an interactive general AI agent running on a user's computer.\n\n\
Your primary goal is to help users with software engineering tasks by taking action \u{2014} use the tools available to you to make real changes on the user's system. You should also answer questions when asked.\n\n\
# Working Environment\n\nThe current working directory is `{}`. Use relative paths for files inside it.\n\n\
# Tools\n\nReadFile, WriteFile, StrReplaceFile, Grep, Glob, Shell, Agent, SetTodoList, SendDMail.\n\n\
(This session is worldline's offline demo: a scripted agent, no model is called.)",
        work_dir.display()
    )
}

/// The keys the epilogue tells a viewer to try; a test holds them to the
/// TUI's key table.
const TRY_KEYS: &str = "Try: h/l to walk the world lines, ]/[ to jump between their forks, m \
     for the map; d on a step sends your own D-Mail back to its checkpoint, and I wake up \
     and follow it. Files I changed stay changed: a D-Mail rewinds only the conversation. q \
     quits; the session stays on disk.";

#[cfg(test)]
mod epilogue_tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::TRY_KEYS;
    use crate::ui::app::Action;
    use crate::ui::keys::{key, Mode};

    fn action(c: char) -> Option<Action> {
        key(
            Mode::Normal,
            &KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        )
    }

    #[test]
    fn the_keys_the_epilogue_names_do_what_it_says() {
        let says = [
            ("h/l to walk the world lines", 'h', "SwitchLine(-1)"),
            ("h/l to walk the world lines", 'l', "SwitchLine(1)"),
            ("]/[ to jump between their forks", ']', "Mark(1)"),
            ("]/[ to jump between their forks", '[', "Mark(-1)"),
            ("m for the map", 'm', "MapToggle"),
            ("d on a step sends your own D-Mail", 'd', "DMail"),
            ("q quits", 'q', "Quit"),
        ];
        let flat = TRY_KEYS.split_whitespace().collect::<Vec<_>>().join(" ");
        for (words, c, want) in says {
            assert!(
                flat.contains(words),
                "the epilogue no longer says {words:?}"
            );
            let got = action(c).map(|a| format!("{a:?}"));
            assert_eq!(got.as_deref(), Some(want), "{c:?} in {words:?}");
        }
    }
}
