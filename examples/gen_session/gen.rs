//! Writes a synthetic kimi-cli session family of a chosen size through
//! worldline's `kimi_writer`, for the benchmarks of issue #7.
//!
//! Shared by the `gen-session` example and `benches/open.rs` (included with
//! `#[path]`), so both write the very same files for a seed.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use worldline::kimi_writer::{
    checkpoint_line, checkpoint_message, message_line, payload, register_work_dir, session_dir,
    subagent_dir, usage_line, write_state_json, write_subagent_meta, write_subagent_prompt, Json,
    Message, Part, SessionWriter, SubagentMeta, ToolCall, ToolOutput, Usage, WireWriter,
    SEND_DMAIL_NAME, WIRE_PROTOCOL_VERSION,
};

use crate::content::{base64, Corpus, Rng, SEED_SALT};

const MB: u64 = 1_000_000;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Wanted total of the family's context files (main and subagents), bytes.
    pub size: u64,
    pub seed: u64,
    /// Instead of `size`: about this many small records in all, in
    /// `lines` world lines.
    pub records: Option<u64>,
    /// With `records`: world lines, each after the first made by a D-Mail
    /// that reverts to about the middle of the one before (issue #14's
    /// long-run family is 2 M records in 3). Each file gets an equal share
    /// of the records as its final size, copied prefixes counted.
    pub lines: u32,
}

/// What was generated.
#[derive(Debug, Clone)]
pub struct Generated {
    pub session_dir: PathBuf,
    /// Every context file (main and subagents), rotations included.
    pub context_files: Vec<PathBuf>,
    pub context_bytes: u64,
    /// Every file under the session dir (wire.jsonl, metadata …).
    pub total_bytes: u64,
    /// Lines written to context files (copied prefixes counted again).
    pub records: u64,
    pub world_lines: usize,
    pub subagents: usize,
    pub image_lines: u64,
}

/// Parses `200MB`, `1GB`, `1.5GB`, `512MiB`, `10GiB` or plain bytes
/// (decimal units: 1 GB = 10^9 bytes).
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().with_context(|| format!("bad size {s:?}"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => bail!("unknown size unit {other:?} in {s:?}"),
    };
    Ok((n * mult) as u64)
}

/// How big the bodies of one agent's turns are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Profile {
    /// Real-looking mix: 1–20 KB assistant messages, tool results up to a
    /// few hundred KB.
    Realistic,
    /// Lines of a few hundred bytes, for the million-record session.
    Small,
}

/// One agent's context writer plus what the generator needs to know about
/// it: bytes and records in the current file, and where each checkpoint
/// starts (to pick revert targets by position).
struct Agent {
    sw: SessionWriter,
    wire: WireWriter,
    checkpoint_messages: bool,
    bytes: u64,
    records: u64,
    /// Checkpoint ids of the current file, in order.
    checkpoints: Vec<i64>,
    tokens: u64,
    clock: f64,
    step: i64,
}

impl Agent {
    fn new(dir: &Path, checkpoint_messages: bool, wire_version: &str, clock: f64) -> Result<Self> {
        let sw = SessionWriter::create(dir, checkpoint_messages)?;
        let wire = WireWriter::create(dir.join("wire.jsonl"), wire_version)?;
        Ok(Agent {
            sw,
            wire,
            checkpoint_messages,
            bytes: 0,
            records: 0,
            checkpoints: Vec::new(),
            tokens: 0,
            clock,
            step: 0,
        })
    }

    fn line(&mut self, line: &str) -> Result<()> {
        self.sw.write_line(line)?;
        self.bytes += line.len() as u64;
        self.records += 1;
        Ok(())
    }

    fn message(&mut self, m: &Message) -> Result<()> {
        self.line(&message_line(m))
    }

    fn checkpoint(&mut self) -> Result<i64> {
        let id = self.sw.n_checkpoints();
        self.checkpoints.push(id);
        self.sw.checkpoint()?;
        self.bytes += checkpoint_line(id).len() as u64;
        self.records += 1;
        if self.checkpoint_messages {
            self.bytes += message_line(&checkpoint_message(id)).len() as u64;
            self.records += 1;
        }
        Ok(id)
    }

    fn usage(&mut self) -> Result<()> {
        // Tokens grow with the context, as a real `_usage` would.
        self.tokens = self.bytes / 4;
        self.line(&usage_line(self.tokens))
    }

    fn event(&mut self, kind: &str, p: Json) -> Result<()> {
        self.clock += 0.05;
        self.clock = self.wire.event_at(self.clock, kind, p)?;
        Ok(())
    }

    fn status(&mut self) -> Result<()> {
        let usage = Usage {
            context_tokens: self.tokens,
            max_context_tokens: 262_144,
            output: 400,
        };
        self.event("StatusUpdate", payload::status_update(Some(usage)))
    }

    /// The checkpoint `fraction` of the way through the file's checkpoints
    /// (by count, so one big image line does not pull every fork to it).
    fn checkpoint_near(&self, fraction: f64) -> i64 {
        let i = (self.checkpoints.len() as f64 * fraction) as usize;
        self.checkpoints
            .get(i.min(self.checkpoints.len().saturating_sub(1)))
            .map_or(0, |id| *id)
    }

    /// D-Mail: the SendDMail call and its accepted result in this world
    /// line, then the writer's revert (which copies the prefix).
    fn send_dmail(&mut self, rng: &mut Rng, corpus: &Corpus, checkpoint: i64) -> Result<()> {
        let route = *rng.pick(&["refactor", "migration", "rewrite", "cache"][..]);
        let n = rng.range(80, 400) as usize;
        // kimi strips the D-Mail body; a stripped one reads back unchanged.
        let body = corpus.prose(rng, n);
        let msg = format!("Don't take the {route} route: {}", body.trim());
        self.checkpoint()?;
        let step = self.next_step();
        self.event("StepBegin", payload::step_begin(step))?;
        let args = Json::obj([
            ("message", Json::str(msg.as_str())),
            ("checkpoint_id", Json::Int(checkpoint)),
        ]);
        let call = ToolCall::new(rng.tool_call_id(), SEND_DMAIL_NAME, &args);
        self.event("ToolCall", payload::tool_call(&call))?;
        let think = corpus.prose(rng, 600);
        self.message(
            &Message::assistant(vec![Part::think(think)]).with_tool_calls(vec![call.clone()]),
        )?;
        self.usage()?;
        let out = ToolOutput::send_dmail(Ok(()));
        self.event("ToolResult", payload::tool_result(&call.id, &out))?;
        self.message(&Message::tool_result(call.id.as_str(), &out))?;
        self.sw.revert_to_checkpoint(checkpoint, &msg)?;
        self.after_rotation()?;
        self.checkpoints.retain(|id| *id <= checkpoint);
        Ok(())
    }

    /// Re-reads the size and line count of the new `context.jsonl` a
    /// rotation left.
    fn after_rotation(&mut self) -> Result<()> {
        let path = self.sw.context_path();
        let bytes = fs::read(&path).with_context(|| path.display().to_string())?;
        self.bytes = bytes.len() as u64;
        self.records = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        Ok(())
    }

    fn compact(&mut self, rng: &mut Rng, corpus: &Corpus, prompt: &str) -> Result<()> {
        self.event("CompactionBegin", payload::empty())?;
        let summary = corpus.prose(rng, 6_000);
        let preserved = [Message::user(corpus.prose(rng, 300))];
        self.sw
            .compact(prompt, &summary, &preserved, Some(self.tokens / 20))?;
        self.event("CompactionEnd", payload::empty())?;
        self.after_rotation()?;
        self.checkpoints = vec![0];
        Ok(())
    }

    fn next_step(&mut self) -> i64 {
        self.step += 1;
        self.step
    }
}

/// What one tool call returns, sized like real tools.
fn tool_call(
    rng: &mut Rng,
    corpus: &Corpus,
    profile: Profile,
    huge: &mut u64,
) -> (ToolCall, ToolOutput) {
    let id = rng.tool_call_id();
    if profile == Profile::Small {
        let args = Json::obj([("command", Json::str(corpus.code(rng, 40)))]);
        let n = rng.range(60, 300) as usize;
        let out = corpus.log(rng, n);
        return (
            ToolCall::new(id, "Shell", &args),
            ToolOutput::ok("Command executed successfully.", out),
        );
    }
    let module = *rng.pick(&["read", "ui", "model"][..]);
    let path = format!("src/{module}/{}.rs", rng.range(0, 99));
    match rng.range(0, 10) {
        0..=2 => {
            let args = Json::obj([("path", Json::str(path.as_str()))]);
            let n = rng.log_range(2_000, 60_000) as usize;
            (
                ToolCall::new(id, "ReadFile", &args),
                ToolOutput::ok("", corpus.code(rng, n)),
            )
        }
        3 => {
            let n = rng.log_range(1_000, 15_000) as usize;
            let content = corpus.code(rng, n);
            let args = Json::obj([
                ("path", Json::str(path.as_str())),
                ("content", Json::str(content)),
            ]);
            (
                ToolCall::new(id, "WriteFile", &args),
                ToolOutput::ok(format!("File successfully overwritten: {path}"), ""),
            )
        }
        4 => {
            let args = Json::obj([
                ("pattern", Json::str("fn \\w+_index")),
                ("path", Json::str("src")),
            ]);
            let n = rng.log_range(500, 30_000) as usize;
            (
                ToolCall::new(id, "Grep", &args),
                ToolOutput::ok("", corpus.code(rng, n)),
            )
        }
        5 => {
            let args = Json::obj([("url", Json::str("https://example.com/docs/api"))]);
            let n = rng.log_range(5_000, 100_000) as usize;
            (
                ToolCall::new(id, "FetchURL", &args),
                ToolOutput::ok("", corpus.prose(rng, n)),
            )
        }
        _ => {
            let args = Json::obj([("command", Json::str("cargo test --all 2>&1 | tail -200"))]);
            // A build log now and then: the long tail of line sizes, and
            // once in a while a log of 12 MB (users report such lines).
            let n = if *huge > 0 && rng.chance(0.002) {
                *huge -= 1;
                12 * MB as usize + rng.range(0, 2 * MB) as usize
            } else if rng.chance(0.05) {
                rng.log_range(100_000, 400_000) as usize
            } else {
                rng.log_range(200, 20_000) as usize
            };
            (
                ToolCall::new(id, "Shell", &args),
                ToolOutput::ok("Command executed successfully.", corpus.log(rng, n)),
            )
        }
    }
}

/// Budget of rare big lines still to place.
struct Rare {
    /// Image sizes still to write, in bytes of base64.
    images: Vec<u64>,
    huge_logs: u64,
    written_images: u64,
}

/// One user turn: checkpoint, user message, a few steps each with an
/// assistant message, its tool calls and their results.
fn turn(
    a: &mut Agent,
    rng: &mut Rng,
    corpus: &Corpus,
    profile: Profile,
    rare: &mut Rare,
    image_now: bool,
) -> Result<()> {
    let small = profile == Profile::Small;
    let n = if small {
        rng.range(30, 200)
    } else {
        rng.log_range(40, 2_000)
    };
    let user_text = corpus.prose(rng, n as usize);
    a.event("TurnBegin", payload::turn_begin(&user_text))?;
    a.step = 0;
    a.checkpoint()?;
    let image = if image_now { rare.images.pop() } else { None };
    let user = match image {
        Some(n) => {
            rare.written_images += 1;
            let url = format!("data:image/png;base64,{}", base64(rng, n as usize));
            Message::user(vec![
                Part::text(user_text),
                Part::ImageUrl { url, id: None },
            ])
        }
        None => Message::user(user_text),
    };
    a.message(&user)?;
    let steps = if small {
        rng.range(1, 4)
    } else {
        rng.range(1, 7)
    };
    for _ in 0..steps {
        let step = a.next_step();
        a.event("StepBegin", payload::step_begin(step))?;
        a.checkpoint()?;
        let n = if small {
            rng.range(40, 200)
        } else {
            rng.log_range(200, 6_000)
        };
        let think = corpus.prose(rng, n as usize);
        let mut parts = vec![Part::think(think)];
        if !small && rng.chance(0.5) {
            let n = rng.log_range(100, 3_000) as usize;
            parts.push(Part::text(corpus.prose(rng, n)));
        }
        let n_calls = if small { 1 } else { rng.range(1, 4) };
        let calls: Vec<_> = (0..n_calls)
            .map(|_| tool_call(rng, corpus, profile, &mut rare.huge_logs))
            .collect();
        for p in &parts {
            a.event("ContentPart", payload::content_part(p))?;
        }
        for (c, _) in &calls {
            a.event("ToolCall", payload::tool_call(c))?;
        }
        let msg = Message::assistant(parts)
            .with_tool_calls(calls.iter().map(|(c, _)| c.clone()).collect());
        a.message(&msg)?;
        a.usage()?;
        a.status()?;
        for (c, out) in &calls {
            a.event("ToolResult", payload::tool_result(&c.id, out))?;
            a.message(&Message::tool_result(c.id.as_str(), out))?;
        }
    }
    // The closing answer.
    let step = a.next_step();
    a.event("StepBegin", payload::step_begin(step))?;
    a.checkpoint()?;
    let n = if small {
        rng.range(40, 300)
    } else {
        rng.log_range(300, 8_000)
    };
    let answer = corpus.prose(rng, n as usize);
    a.event(
        "ContentPart",
        payload::content_part(&Part::text(answer.as_str())),
    )?;
    a.message(&Message::assistant(answer))?;
    a.usage()?;
    a.status()?;
    a.event("TurnEnd", payload::empty())?;
    Ok(())
}

/// Where `grow` stops, and how many images it places on the way.
#[derive(Clone, Copy)]
struct Until {
    bytes: u64,
    images: usize,
    records: Option<u64>,
}

impl Until {
    fn bytes(bytes: u64, images: usize) -> Until {
        Until {
            bytes,
            images,
            records: None,
        }
    }
}

/// Writes turns until the current file reaches `target` bytes (or, for
/// `max_records`, that many records in total). Images are placed at
/// random turns, spread over the segment.
fn grow(
    a: &mut Agent,
    rng: &mut Rng,
    corpus: &Corpus,
    profile: Profile,
    rare: &mut Rare,
    until: Until,
) -> Result<()> {
    let Until {
        bytes: target,
        images: images_here,
        records: max_records,
    } = until;
    let start = a.bytes;
    let mut placed = 0;
    loop {
        if let Some(max) = max_records {
            if a.records >= max {
                break;
            }
        } else if a.bytes >= target {
            break;
        }
        // Spread the segment's images evenly over its byte range.
        let due =
            (a.bytes.saturating_sub(start)) as f64 / (target.saturating_sub(start).max(1)) as f64;
        let image_now = placed < images_here && due >= (placed as f64 + 0.2) / images_here as f64;
        if image_now {
            placed += 1;
        }
        turn(a, rng, corpus, profile, rare, image_now)?;
    }
    Ok(())
}

/// The system prompt, a few KB as in kimi-cli.
fn system_prompt(corpus: &Corpus, rng: &mut Rng) -> String {
    format!(
        "You are Kimi CLI, an interactive general AI agent running on a user's computer.\n\n{}",
        corpus.prose(rng, 8_000)
    )
}

/// Runs one subagent to about `target` bytes, as the parent's `Agent` tool
/// call; returns the parent's tool result text.
fn subagent(
    session: &Path,
    rng: &mut Rng,
    corpus: &Corpus,
    clock: f64,
    target: u64,
    rare: &mut Rare,
) -> Result<String> {
    let agent_id = rng.agent_id();
    let dir = subagent_dir(session, &agent_id);
    let prompt = corpus.prose(rng, 1_500);
    let mut meta = SubagentMeta {
        agent_id: agent_id.clone(),
        subagent_type: "coder".into(),
        status: "running".into(),
        description: "Survey the reader module".into(),
        created_at: clock,
        updated_at: clock,
    };
    write_subagent_meta(&dir, &meta)?;
    write_subagent_prompt(&dir, &prompt)?;
    // Subagents have no SendDMail, so no CHECKPOINT messages.
    let mut a = Agent::new(&dir, false, "1.1", clock)?;
    a.line(&worldline::kimi_writer::system_prompt_line(&system_prompt(
        corpus, rng,
    )))?;
    grow(
        &mut a,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(target, 0),
    )?;
    let summary = corpus.prose(rng, 2_000);
    meta.status = "idle".into();
    meta.updated_at = a.clock;
    write_subagent_meta(&dir, &meta)?;
    let path = dir.join("output");
    fs::write(&path, format!("[summary]\n{summary}\n"))
        .with_context(|| path.display().to_string())?;
    let text = format!(
        "agent_id: {agent_id}\nresumed: false\nactual_subagent_type: coder\nstatus: completed\n\n[summary]\n{summary}"
    );
    Ok(text)
}

/// The parent's step that runs a subagent.
fn agent_step(
    a: &mut Agent,
    session: &Path,
    rng: &mut Rng,
    corpus: &Corpus,
    target: u64,
    rare: &mut Rare,
) -> Result<()> {
    let step = a.next_step();
    a.event("StepBegin", payload::step_begin(step))?;
    a.checkpoint()?;
    let args = Json::obj([
        ("description", Json::str("Survey the reader module")),
        ("prompt", Json::str(corpus.prose(rng, 1_500))),
        ("subagent_type", Json::str("coder")),
    ]);
    let call = ToolCall::new(rng.tool_call_id(), "Agent", &args);
    a.event("ToolCall", payload::tool_call(&call))?;
    a.message(
        &Message::assistant(vec![Part::think(corpus.prose(rng, 500))])
            .with_tool_calls(vec![call.clone()]),
    )?;
    a.usage()?;
    let text = subagent(session, rng, corpus, a.clock, target, rare)?;
    let out = ToolOutput::ok("", text);
    a.event("ToolResult", payload::tool_result(&call.id, &out))?;
    a.message(&Message::tool_result(call.id.as_str(), &out))?;
    Ok(())
}

/// Writes the family under `out` (a share dir) and returns what it wrote.
/// The one session under `<share>/sessions/<md5>/`.
#[allow(dead_code)] // for the benches, which include this file; the example knows its dir
pub fn find_session(share: &Path) -> Result<PathBuf> {
    let sessions = share.join("sessions");
    for hash in fs::read_dir(&sessions).with_context(|| sessions.display().to_string())? {
        let hash = hash?.path();
        if let Some(s) = fs::read_dir(&hash)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir())
        {
            return Ok(s);
        }
    }
    bail!("no session under {}", sessions.display())
}

pub fn generate(out: &Path, opts: &Options) -> Result<Generated> {
    let mut rng = Rng::new(opts.seed ^ SEED_SALT);
    let corpus = Corpus::new(&mut rng);
    let work_dir = PathBuf::from(format!("/home/user/project-{}", opts.seed));
    let session_id = rng.uuid();
    let session = session_dir(out, &work_dir, &session_id);
    if session.exists() {
        bail!("{} already exists", session.display());
    }
    fs::create_dir_all(&session).with_context(|| session.display().to_string())?;
    register_work_dir(out, &work_dir, &session_id)?;
    let title = match opts.records {
        Some(n) if opts.lines > 1 => {
            format!(
                "Generated session, {n} records in {} world lines",
                opts.lines
            )
        }
        Some(n) => format!("Generated session, {n} records"),
        None => format!("Generated session family, {} MB", opts.size / MB),
    };
    write_state_json(&session, &title)?;

    let clock = 1_780_000_000.0 + (opts.seed % 1000) as f64 * 1000.0;
    let mut main = Agent::new(&session, true, WIRE_PROTOCOL_VERSION, clock)?;
    let prompt = system_prompt(&corpus, &mut rng);
    main.line(&worldline::kimi_writer::system_prompt_line(&prompt))?;
    let mut rare = Rare {
        images: Vec::new(),
        huge_logs: 0,
        written_images: 0,
    };
    let mut subagents = 0;

    if let Some(n) = opts.records {
        // Long world lines of small records: the scrolling benchmark (one
        // line) and the long-run family of issue #14 (several).
        let lines = u64::from(opts.lines.max(1));
        for line in 0..lines {
            if line > 0 {
                let c = main.checkpoint_near(if line % 2 == 1 { 0.5 } else { 0.6 });
                main.send_dmail(&mut rng, &corpus, c)?;
            }
            grow(
                &mut main,
                &mut rng,
                &corpus,
                Profile::Small,
                &mut rare,
                Until {
                    bytes: 0,
                    images: 0,
                    records: Some(n / lines),
                },
            )?;
        }
    } else {
        plan_family(
            &mut main,
            &session,
            &mut rng,
            &corpus,
            &prompt,
            opts.size,
            &mut rare,
            &mut subagents,
        )?;
    }
    summarize(&session, subagents, rare.written_images)
}

/// The main agent's six world lines (four D-Mail reverts, one compaction)
/// and two subagents, sized so the family totals about `size`:
///
/// ```text
/// line 1 ──┬── D-Mail at ~55% ──► line 2 ── D-Mail at ~30% (inside line 1's part) ──► line 3
///          │                                      └─► so the world lines form a tree
/// line 3 ── D-Mail at ~80% ──► line 4 ── compaction ──► line 5 ── D-Mail at ~75% ──► line 6
/// ```
///
/// A revert copies its prefix, so each file is given an equal share of the
/// budget as its *final* size rather than a share of new content.
#[allow(clippy::too_many_arguments)]
fn plan_family(
    main: &mut Agent,
    session: &Path,
    rng: &mut Rng,
    corpus: &Corpus,
    prompt: &str,
    size: u64,
    rare: &mut Rare,
    subagents: &mut usize,
) -> Result<()> {
    const FILES: u64 = 6;
    let sub_share = size / 40; // each of the two subagents
    let per_file = (size - 2 * sub_share) / FILES;
    // A few base64 images of 20–50 MB (smaller when files are small), and a
    // 12 MB log line per half gigabyte.
    let n_images = (size / (300 * MB)).clamp(u64::from(size >= 150 * MB), 12);
    for _ in 0..n_images {
        let n = rng.range(20 * MB, 50 * MB).min(per_file / 3);
        rare.images.push(n);
    }
    rare.huge_logs = size / (500 * MB);
    let images_per_line = |line: u64| {
        // Most images early in line 1: they are then copied into every
        // prefix, as a real screenshot early in a session would be.
        let n = n_images as usize;
        match line {
            0 => n.div_ceil(2),
            3 => n / 4,
            4 => n - n.div_ceil(2) - n / 4,
            _ => 0,
        }
    };
    // The turn that spawns the first subagent comes early in line 1.
    grow(
        main,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(per_file / 10, 0),
    )?;
    agent_step(main, session, rng, corpus, sub_share, rare)?;
    *subagents += 1;
    grow(
        main,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(per_file, images_per_line(0)),
    )?;
    let forks = [0.55, 0.30, 0.80];
    for (line, at) in forks.iter().enumerate() {
        let c = main.checkpoint_near(*at);
        main.send_dmail(rng, corpus, c)?;
        grow(
            main,
            rng,
            corpus,
            Profile::Realistic,
            rare,
            Until::bytes(per_file, images_per_line(line as u64 + 1)),
        )?;
    }
    main.compact(rng, corpus, prompt)?;
    grow(
        main,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(per_file / 2, 0),
    )?;
    agent_step(main, session, rng, corpus, sub_share, rare)?;
    *subagents += 1;
    grow(
        main,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(per_file, images_per_line(4)),
    )?;
    // Late enough that line 5's image is in the current world line too.
    let c = main.checkpoint_near(0.75);
    main.send_dmail(rng, corpus, c)?;
    grow(
        main,
        rng,
        corpus,
        Profile::Realistic,
        rare,
        Until::bytes(per_file, 0),
    )?;
    Ok(())
}

/// Lists the files written and their sizes.
fn summarize(session: &Path, subagents: usize, image_lines: u64) -> Result<Generated> {
    let context_files = context_files(session)?;
    let (mut context_bytes, mut records) = (0, 0);
    for f in &context_files {
        let bytes = fs::read(f).with_context(|| f.display().to_string())?;
        context_bytes += bytes.len() as u64;
        records += memchr::memchr_iter(b'\n', &bytes).count() as u64;
    }
    let world_lines = context_files
        .iter()
        .filter(|f| f.parent() == Some(session))
        .count();
    Ok(Generated {
        session_dir: session.to_path_buf(),
        context_bytes,
        total_bytes: dir_bytes(session)?,
        context_files,
        records,
        world_lines,
        subagents,
        image_lines,
    })
}

/// Every `context*.jsonl` of the session and of its subagents, sorted.
pub fn context_files(session: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![session.to_path_buf()];
    if let Ok(entries) = fs::read_dir(session.join("subagents")) {
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut files = Vec::new();
    for d in dirs {
        for e in fs::read_dir(&d).with_context(|| d.display().to_string())? {
            let p = e?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("context") && name.ends_with(".jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Total size of the regular files under `dir`.
pub fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for e in fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let e = e?;
        let meta = e.metadata()?;
        if meta.is_dir() {
            total += dir_bytes(&e.path())?;
        } else {
            total += meta.len();
        }
    }
    Ok(total)
}
