//! Times from `wire.jsonl`, joined to records: tool calls and results by
//! their ids, checkpoints by the order of turns and steps. A missing or
//! broken wire file means no times, never a failure.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::family::Family;
use super::graph::{Graph, NodeKind};
use crate::read::lenient;

/// One agent step: `StepBegin n` until the next step or the turn's end.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTiming {
    pub n: i64,
    pub start: f64,
    pub end: Option<f64>,
}

/// One turn: `TurnBegin` until `TurnEnd`.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnTiming {
    pub user_input: String,
    pub start: f64,
    pub end: Option<f64>,
    pub steps: Vec<StepTiming>,
}

impl TurnTiming {
    pub fn duration(&self) -> Option<f64> {
        Some(self.end? - self.start)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireLog {
    pub protocol: Option<String>,
    pub turns: Vec<TurnTiming>,
    /// Tool call id → (call time, result time).
    pub tool_calls: HashMap<String, (Option<f64>, Option<f64>)>,
}

impl WireLog {
    pub fn read(path: &Path) -> Option<WireLog> {
        let bytes = std::fs::read(path).ok()?;
        Some(WireLog::parse(&bytes))
    }

    pub fn parse(bytes: &[u8]) -> WireLog {
        let mut log = WireLog::default();
        for line in bytes.split(|&b| b == b'\n') {
            log.push_line(line);
        }
        log
    }

    /// Adds one line (without its line end); the live tail feeds lines as
    /// they complete. Blank and broken lines are skipped.
    pub fn push_line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Ok(v) = lenient::parse_value(line) {
            self.add(&v);
        }
    }

    fn add(&mut self, v: &Value) {
        if v.get("type").and_then(Value::as_str) == Some("metadata") {
            self.protocol = v
                .get("protocol_version")
                .and_then(Value::as_str)
                .map(str::to_string);
            return;
        }
        let Some(ts) = v.get("timestamp").and_then(Value::as_f64) else {
            return;
        };
        let Some(msg) = v.get("message") else { return };
        let payload = msg.get("payload").unwrap_or(&Value::Null);
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            "TurnBegin" => self.turns.push(TurnTiming {
                user_input: input_text(payload.get("user_input")),
                start: ts,
                end: None,
                steps: Vec::new(),
            }),
            "TurnEnd" => {
                if let Some(t) = self.turns.last_mut() {
                    t.end = Some(ts);
                    if let Some(s) = t.steps.last_mut() {
                        s.end.get_or_insert(ts);
                    }
                }
            }
            "StepBegin" => {
                if let Some(t) = self.turns.last_mut() {
                    if let Some(s) = t.steps.last_mut() {
                        s.end.get_or_insert(ts);
                    }
                    t.steps.push(StepTiming {
                        n: payload.get("n").and_then(Value::as_i64).unwrap_or(0),
                        start: ts,
                        end: None,
                    });
                }
            }
            "ToolCall" => {
                if let Some(id) = payload.get("id").and_then(Value::as_str) {
                    self.tool_calls
                        .entry(id.to_string())
                        .or_default()
                        .0
                        .get_or_insert(ts);
                }
            }
            "ToolResult" => {
                if let Some(id) = payload.get("tool_call_id").and_then(Value::as_str) {
                    self.tool_calls
                        .entry(id.to_string())
                        .or_default()
                        .1
                        .get_or_insert(ts);
                }
            }
            _ => {}
        }
    }

    /// The times at which checkpoints were written, in order: one per real
    /// turn (slash commands write none) and one per step.
    fn checkpoint_times(&self) -> Vec<f64> {
        let mut out = Vec::new();
        for t in &self.turns {
            if !t.user_input.starts_with('/') || !t.steps.is_empty() {
                out.push(t.start);
            }
            out.extend(t.steps.iter().map(|s| s.start));
        }
        out
    }
}

fn input_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Gives every record of `family` the best time the wire log supports:
/// exact for tool calls and results, else the time of the checkpoint that
/// opened its step. Records are visited in the order they were written
/// (each world line's own records after its predecessors').
pub fn join_times(family: &Family, wire: &WireLog, g: &mut Graph) {
    let anchors = wire.checkpoint_times();
    let mut next_anchor = 0;
    let mut current: Option<f64> = None;
    for (i, line) in family.lines.iter().enumerate() {
        let file = &family.files[i];
        for (r, &n) in line.nodes.iter().enumerate() {
            if g[n].owner.line != i {
                continue;
            }
            let rec = &file.records[r];
            if matches!(g[n].kind, NodeKind::Checkpoint(_)) {
                if let Some(&t) = anchors.get(next_anchor) {
                    current = Some(current.map_or(t, |c| c.max(t)));
                }
                next_anchor += 1;
            }
            let exact = rec
                .tool_calls
                .first()
                .and_then(|c| wire.tool_calls.get(&c.id))
                .and_then(|t| t.0)
                .or_else(|| {
                    rec.tool_call_id
                        .as_ref()
                        .and_then(|id| wire.tool_calls.get(id))
                        .and_then(|t| t.1)
                });
            if let Some(t) = exact {
                current = Some(current.map_or(t, |c| c.max(t)));
            }
            g[n].time = exact.or(current);
        }
    }
}
