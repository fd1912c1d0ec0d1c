//! Times from a wire log, joined to records: tool calls and results by
//! their ids, checkpoints by the order of turns and steps (pure; the
//! source reads the log, see `sources::kimi_cli::wire`).

pub use crate::sources::{StepTiming, TurnTiming, WireLog};

use super::family::Family;
use super::graph::{Graph, NodeKind};

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
                .tool_calls()
                .first()
                .and_then(|c| wire.call_time(c.key()))
                .or_else(|| rec.tool_call_key().and_then(|id| wire.result_time(id)));
            if let Some(t) = exact {
                current = Some(current.map_or(t, |c| c.max(t)));
            }
            g[n].time = exact.or(current);
        }
    }
}
