//! The plan of a replay: every write kimi-cli made to a finished session,
//! in kimi-cli's order (rotation = empty placeholder → rename → prefix copy →
//! new lines; a subagent's directory when its parent's Agent call is
//! written), each at the time it happened. Times come from the records'
//! wire times and from the wire lines' own timestamps; records that share a
//! time (a whole step) are spread evenly up to the next known time. Without
//! any times the records come evenly, one `EVEN_STEP` apart.
//!
//! The plan only names byte ranges of the original files; it never holds
//! their bytes, so a 1 GB session plans in the memory of its index.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sources::ReplayStyle;
use crate::worldline::{Agent, Session};

/// Seconds between records of a session without wire times.
pub const EVEN_STEP: f64 = 0.4;

/// One write, with paths relative to the replay directory.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Mkdir(PathBuf),
    /// Create an empty file (kimi-cli's rotation placeholder, a new context).
    Create(PathBuf),
    Rename(PathBuf, PathBuf),
    /// Append bytes `start..end` of the original file `from` to `to`.
    Copy {
        from: PathBuf,
        to: PathBuf,
        start: u64,
        end: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds since the session's first event.
    pub at: f64,
    pub op: Op,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// In the order to run them; `at` never decreases.
    pub events: Vec<Event>,
    /// Whether the times are the session's own (else evenly paced).
    pub timed: bool,
    /// What to open in the replay directory: `""` (the directory itself)
    /// or, for a flat session of kimi-cli ≤ 0.58, its main file.
    pub open: PathBuf,
    /// How many events make the copy a session to open; `None`: up to and
    /// including the first file created.
    pub opening: Option<usize>,
}

impl Plan {
    /// Plans the replay of the session at `src` (read-only).
    pub fn of(src: &Path) -> Result<Plan> {
        let s = Session::load(src)?;
        Plan::of_session(&s)
    }

    pub fn of_session(s: &Session) -> Result<Plan> {
        match s.tool.source().replay_style(&s.dir) {
            ReplayStyle::Rotations { wire, current_name } => {
                Plan::of_rotations(s, &Rotations { wire, current_name })
            }
            ReplayStyle::Appends { side_files } => super::appends::plan(s, &side_files),
            ReplayStyle::Unsupported(why) => Err(Error::Usage(format!(
                "{}: {why}",
                crate::text::sanitize_path(&s.dir)
            ))),
        }
    }

    /// The plan of a format whose world lines are rotated files: each
    /// rotation as it was made (placeholder, rename, prefix copy).
    fn of_rotations(s: &Session, names: &Rotations) -> Result<Plan> {
        // A flat session (kimi-cli ≤ 0.58) is its main file; its files sit
        // in the work dir's folder beside other sessions' (only the
        // family's own files are copied).
        let flat = !s.dir.is_dir();
        let (root, open) = match (flat, s.dir.parent(), s.dir.file_name()) {
            (true, Some(folder), Some(name)) => (folder.to_path_buf(), PathBuf::from(name)),
            _ => (s.dir.clone(), PathBuf::new()),
        };
        let mut agents = Vec::with_capacity(s.agents.len());
        for a in &s.agents {
            agents.push(agent_steps(s, &root, !flat, a, names)?);
        }
        let timed = agents
            .iter()
            .any(|a| a.steps.iter().any(|st| st.time.is_some()) || a.wire_timed());
        let mut plan = if timed {
            timed_plan(s, agents)
        } else {
            even_plan(s, agents)
        };
        plan.open = open;
        Ok(plan)
    }

    /// Seconds from the first event to the last.
    pub fn duration(&self) -> f64 {
        self.events.last().map_or(0.0, |e| e.at)
    }
}

/// One write of an agent's context files, with the time it happened when
/// known. `Rotate` steps come before the first own record of a new line.
#[derive(Debug, Clone)]
struct Step {
    ops: Vec<Op>,
    time: Option<f64>,
    /// The record (world line, index) this step writes, for subagent starts.
    record: Option<(usize, usize)>,
}

struct AgentSteps {
    /// Ops that create the agent's directory and side files.
    setup: Vec<Op>,
    steps: Vec<Step>,
    /// wire.jsonl lines: byte range and timestamp.
    wire: Vec<(u64, u64, Option<f64>)>,
    wire_path: PathBuf,
    /// Where the wire is written in the copy.
    wire_to: PathBuf,
    /// Files copied whole once the agent is done (`output`).
    tail: Vec<Op>,
}

impl AgentSteps {
    fn wire_timed(&self) -> bool {
        self.wire.iter().any(|w| w.2.is_some())
    }
}

fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len())
}

fn copy_whole(from: &Path, to: PathBuf) -> Result<Option<Op>> {
    match std::fs::metadata(from) {
        Ok(m) if m.is_file() => Ok(Some(Op::Copy {
            from: from.to_path_buf(),
            to,
            start: 0,
            end: m.len(),
        })),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(from, e)),
    }
}

/// `root`: the directory the replay mirrors; `side_files`: whether it is a
/// session directory of its own (with `state.json`), not a shared folder.
/// How a rotating format names its files (its source's word).
struct Rotations {
    wire: &'static str,
    current_name: fn(&[&str]) -> Option<String>,
}

fn agent_steps(
    s: &Session,
    root: &Path,
    side_files: bool,
    a: &Agent,
    names_of: &Rotations,
) -> Result<AgentSteps> {
    let rel = a
        .dir
        .strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut setup = Vec::new();
    let mut tail = Vec::new();
    // Subagents of kimi-cli ≤ 1.24 (`context_sub_N`) live in the session
    // directory itself, with no side files or wire of their own.
    let beside_main = a.meta.is_some() && rel.as_os_str().is_empty();
    if beside_main {
        // Nothing to set up: the main agent's setup made the directory.
    } else if rel.as_os_str().is_empty() {
        // The title is known from the start; denwa.json belongs to a live
        // agent and is never copied.
        if side_files {
            setup.extend(copy_whole(&a.dir.join("state.json"), "state.json".into())?);
        }
    } else {
        setup.push(Op::Mkdir(rel.clone()));
        for side in ["meta.json", "prompt.txt"] {
            setup.extend(copy_whole(&a.dir.join(side), rel.join(side))?);
        }
        tail.extend(copy_whole(&a.dir.join("output"), rel.join("output"))?);
    }
    let f = &a.family;
    let names: Vec<&str> = f.files.iter().map(|x| file_name(&x.name)).collect();
    let current_name = (names_of.current_name)(&names).unwrap_or_else(|| "context.jsonl".into());
    let current = rel.join(&current_name);
    let mut steps = Vec::new();
    for (i, file) in f.files.iter().enumerate() {
        let len = file_len(&file.path)?;
        let line = &f.lines[i];
        let mut rotate = Vec::new();
        if i == 0 {
            rotate.push(Op::Create(current.clone()));
        } else {
            let old = rel.join(file_name(&f.files[i - 1].name));
            rotate.push(Op::Create(old.clone()));
            rotate.push(Op::Rename(current.clone(), old));
            rotate.push(Op::Create(current.clone()));
        }
        let own_from = file.records.get(line.shared).map_or(len, |r| r.offset());
        if own_from > 0 {
            rotate.push(Op::Copy {
                from: file.path.clone(),
                to: current.clone(),
                start: 0,
                end: own_from,
            });
        }
        let time = |r: usize| f.owner(i, r).and_then(|o| s.time(o));
        steps.push(Step {
            ops: rotate,
            time: time(line.shared),
            record: None,
        });
        let recs = &file.records;
        for r in line.shared..recs.len() {
            let end = recs.get(r + 1).map_or(len, |n| n.offset());
            steps.push(Step {
                ops: vec![Op::Copy {
                    from: file.path.clone(),
                    to: current.clone(),
                    start: recs[r].offset(),
                    end,
                }],
                time: time(r),
                record: Some((i, r)),
            });
        }
    }
    // A family whose newest file is rotated too (no context.jsonl).
    if let Some(last) = f.files.last() {
        let name = file_name(&last.name);
        if name != current_name {
            steps.push(Step {
                ops: vec![Op::Rename(current.clone(), rel.join(name))],
                time: None,
                record: None,
            });
        }
    }
    let wire_path = a.dir.join(names_of.wire);
    let wire_to = rel.join(names_of.wire);
    let wire = if beside_main || !side_files {
        Vec::new()
    } else {
        wire_lines(&wire_path)?
    };
    Ok(AgentSteps {
        setup,
        steps,
        wire,
        wire_path,
        wire_to,
        tail,
    })
}

/// `subagents/a1/context_1.jsonl` → `context_1.jsonl`.
fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Byte ranges of the wire file's lines with their `timestamp`.
fn wire_lines(path: &Path) -> Result<Vec<(u64, u64, Option<f64>)>> {
    use std::io::BufRead;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        out.push((at, at + n as u64, timestamp(&line)));
        at += n as u64;
    }
    Ok(out)
}

/// The leading `{"timestamp": N` of a wire line, without parsing the rest
/// (content parts can be megabytes).
fn timestamp(line: &[u8]) -> Option<f64> {
    let head = &line[..line.len().min(96)];
    let key = b"\"timestamp\"";
    let at = head.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = std::str::from_utf8(&head[at..]).ok()?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|t: &f64| t.is_finite())
}

/// Known times carried forward (and back to the start); a run of records
/// with the same time spread evenly until the next different time.
fn fill_times(times: &mut [Option<f64>], fallback: f64) {
    let first = times.iter().flatten().next().copied().unwrap_or(fallback);
    let mut last = first;
    for t in times.iter_mut() {
        let v = t.map_or(last, |v| v.max(last));
        *t = Some(v);
        last = v;
    }
    let mut i = 0;
    while i < times.len() {
        let v = times[i].unwrap_or(first);
        let mut j = i + 1;
        while j < times.len() && times[j] == Some(v) {
            j += 1;
        }
        if let Some(next) = times.get(j).copied().flatten() {
            let gap = (next - v) / (j - i) as f64;
            for (k, t) in times[i..j].iter_mut().enumerate() {
                *t = Some(v + gap * k as f64);
            }
        }
        i = j;
    }
}

fn timed_plan(s: &Session, agents: Vec<AgentSteps>) -> Plan {
    // When a subagent's parent call was written, for subagents without times.
    let mut main_times: Vec<Option<f64>> = agents[0].steps.iter().map(|st| st.time).collect();
    let start = agents
        .iter()
        .flat_map(|a| {
            a.steps
                .iter()
                .map(|st| st.time)
                .chain(a.wire.iter().map(|w| w.2))
        })
        .flatten()
        .fold(f64::INFINITY, f64::min);
    fill_times(&mut main_times, start);
    let mut keyed: Vec<(f64, usize, usize, Op)> = Vec::new();
    let mut seq = 0usize;
    let mut push = |at: f64, agent: usize, op: Op, keyed: &mut Vec<(f64, usize, usize, Op)>| {
        keyed.push((at - start, agent, seq, op));
        seq += 1;
    };
    for (k, a) in agents.into_iter().enumerate() {
        let parent_at = s.agents[k].parent_call.and_then(|c| {
            agents_step_index(s, c.line, c.record)
                .and_then(|i| main_times.get(i).copied().flatten())
        });
        let mut times: Vec<Option<f64>> = if k == 0 {
            main_times.clone()
        } else {
            a.steps.iter().map(|st| st.time).collect()
        };
        let fallback = parent_at.unwrap_or(start);
        if times.iter().all(Option::is_none) {
            // No times of its own: right after the parent's call, evenly.
            for (i, t) in times.iter_mut().enumerate() {
                *t = Some(fallback + EVEN_STEP * i as f64);
            }
        }
        fill_times(&mut times, fallback);
        // The directory exists before the first write into it, wire or context.
        let first_wire = a.wire.iter().find_map(|w| w.2).unwrap_or(f64::INFINITY);
        let begin = times
            .first()
            .copied()
            .flatten()
            .unwrap_or(fallback)
            .min(first_wire);
        for op in a.setup {
            push(begin, k, op, &mut keyed);
        }
        let mut end = begin;
        for (st, t) in a.steps.into_iter().zip(times) {
            let t = t.unwrap_or(end).max(end);
            end = t;
            for op in st.ops {
                push(t, k, op, &mut keyed);
            }
        }
        let mut wt = begin;
        for (lo, hi, t) in a.wire {
            wt = t.unwrap_or(wt).max(start);
            end = end.max(wt);
            push(
                wt,
                k,
                Op::Copy {
                    from: a.wire_path.clone(),
                    to: a.wire_to.clone(),
                    start: lo,
                    end: hi,
                },
                &mut keyed,
            );
        }
        for op in a.tail {
            push(end, k, op, &mut keyed);
        }
    }
    // Setup of an agent before its files: `seq` keeps each agent's order.
    keyed.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    Plan {
        opening: None,
        events: merge(keyed.into_iter().map(|(at, _, _, op)| Event { at, op })),
        timed: true,
        open: PathBuf::new(),
    }
}

/// Index in the main agent's steps of record (line, record): one rotation
/// step per line, then one step per own record.
fn agents_step_index(s: &Session, line: usize, record: usize) -> Option<usize> {
    let f = s.main();
    let mut i = 0;
    for (l, wl) in f.lines.iter().enumerate() {
        i += 1;
        let own = f.files[l].records.len().saturating_sub(wl.shared);
        if l == line {
            return (record >= wl.shared && record < f.files[l].records.len())
                .then(|| i + record - wl.shared);
        }
        i += own;
    }
    None
}

/// Without times: records one `EVEN_STEP` apart in written order, each
/// subagent right after its parent's Agent call; wire files (which have no
/// times) as they are, at the start.
fn even_plan(s: &Session, mut agents: Vec<AgentSteps>) -> Plan {
    let mut events = Vec::new();
    let mut t = 0.0;
    let subs: Vec<AgentSteps> = agents.drain(1..).collect();
    let main = agents.pop().unwrap_or_else(|| AgentSteps {
        setup: Vec::new(),
        steps: Vec::new(),
        wire: Vec::new(),
        wire_path: PathBuf::new(),
        wire_to: PathBuf::new(),
        tail: Vec::new(),
    });
    let mut subs: Vec<Option<AgentSteps>> = subs.into_iter().map(Some).collect();
    let wire_ops = |a: &AgentSteps| -> Option<Op> {
        let (first, last) = (a.wire.first()?, a.wire.last()?);
        Some(Op::Copy {
            from: a.wire_path.clone(),
            to: a.wire_to.clone(),
            start: first.0,
            end: last.1,
        })
    };
    fn run_agent(a: AgentSteps, t: &mut f64, events: &mut Vec<Event>, wire: Option<Op>) {
        for op in a.setup.into_iter().chain(wire) {
            events.push(Event { at: *t, op });
        }
        for st in a.steps {
            if st.record.is_some() {
                *t += EVEN_STEP;
            }
            for op in st.ops {
                events.push(Event { at: *t, op });
            }
        }
        for op in a.tail {
            events.push(Event { at: *t, op });
        }
    }
    let main_wire = wire_ops(&main);
    for op in main.setup.into_iter().chain(main_wire) {
        events.push(Event { at: t, op });
    }
    for st in main.steps {
        if st.record.is_some() {
            t += EVEN_STEP;
        }
        for op in st.ops {
            events.push(Event { at: t, op });
        }
        let Some((line, record)) = st.record else {
            continue;
        };
        for (k, slot) in subs.iter_mut().enumerate() {
            let call = s.agents[k + 1].parent_call;
            if call.is_some_and(|c| c.line == line && c.record == record) {
                if let Some(a) = slot.take() {
                    let w = wire_ops(&a);
                    run_agent(a, &mut t, &mut events, w);
                }
            }
        }
    }
    // Subagents no call names: after everything else.
    for a in subs.into_iter().flatten() {
        let w = wire_ops(&a);
        run_agent(a, &mut t, &mut events, w);
    }
    for op in main.tail {
        events.push(Event { at: t, op });
    }
    Plan {
        opening: None,
        events: merge(events.into_iter()),
        timed: false,
        open: PathBuf::new(),
    }
}

/// Joins back-to-back copies of adjacent ranges of one file into one write
/// when they happen at the same time (a prefix copy, a burst of wire lines).
fn merge(events: impl Iterator<Item = Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for e in events {
        if let (
            Some(Event {
                at,
                op:
                    Op::Copy {
                        from: f0,
                        to: t0,
                        end: e0,
                        ..
                    },
            }),
            Op::Copy {
                from,
                to,
                start,
                end,
            },
        ) = (out.last_mut(), &e.op)
        {
            if *at == e.at && f0 == from && t0 == to && e0 == start {
                *e0 = *end;
                continue;
            }
        }
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_read_from_the_line_head() {
        assert_eq!(
            timestamp(br#"{"timestamp": 1796068971.9344556, "message": {}}"#),
            Some(1796068971.9344556)
        );
        assert_eq!(timestamp(br#"{"type": "metadata"}"#), None);
        assert_eq!(timestamp(br#"{"timestamp":12}"#), Some(12.0));
    }

    #[test]
    fn equal_times_spread_to_the_next_and_gaps_carry_forward() {
        let mut t = vec![None, Some(10.0), Some(10.0), None, Some(12.0), None];
        fill_times(&mut t, 0.0);
        let t: Vec<f64> = t.into_iter().map(Option::unwrap).collect();
        // Leading None takes the first time; 10,10,10 spread over 10..12.
        assert_eq!(t.len(), 6);
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
        assert_eq!(t[4], 12.0);
        assert!(
            (t[1] - 10.5).abs() < 1e-9 && (t[3] - 11.5).abs() < 1e-9,
            "{t:?}"
        );
    }
}
