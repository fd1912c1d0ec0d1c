//! One thread's world lines, from its rollout files (generations) in the
//! order they were written. Pure: no files.
//!
//! * The first generation starts the first world line.
//! * A later generation (what `thread/revert` writes with paginated
//!   history) has `history_base {thread_id: itself, end_ordinal_exclusive:
//!   N}`: it continues the line that was current, from its records with
//!   ordinal < N — a rollback, a world line of its own.
//! * A legacy `thread_rolled_back {num_turns}` line abandons the last
//!   `num_turns` user turns of the current line: a new world line from the
//!   record before the first abandoned turn, starting with the marker.
//! * `compacted` lines are marks on the line that holds them.

use std::ops::Range;

use super::rollout::{Entry, Kind, Rollout};
use crate::model::Warning;

/// A record: generation `gen`, entry `entry` of that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub gen: usize,
    pub entry: usize,
}

/// One world line: the records it shares with its parent (a prefix of
/// both), then its own, which are always a run of one file's entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub parent: Option<usize>,
    /// Records shared with the parent (a prefix of both paths).
    pub shared: usize,
    /// Turns a legacy rollback dropped.
    pub turns: Option<u32>,
    /// The generation holding this line's own records.
    pub gen: usize,
    /// This line's own records: these entries of generation `gen`.
    pub own: Range<usize>,
}

impl Line {
    /// Records root→leaf.
    pub fn records(&self) -> usize {
        self.shared + self.own.len()
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thread {
    pub lines: Vec<Line>,
    pub current: usize,
    /// (world line, record) of each compaction.
    pub compactions: Vec<(usize, At)>,
    pub warnings: Vec<Warning>,
}

impl Thread {
    pub fn entry<'a>(&self, gens: &'a [Rollout], at: At) -> Option<&'a Entry> {
        gens.get(at.gen)?.entries.get(at.entry)
    }

    /// Line `l`'s records root→leaf as runs of one file's entries:
    /// `(generation, entries)`.
    pub fn runs(&self, l: usize) -> Vec<(usize, Range<usize>)> {
        // The line and its ancestors, each with how many of its records
        // the line holds.
        let mut chain = Vec::new();
        let (mut cur, mut want) = (l, self.lines[l].records());
        loop {
            chain.push((cur, want));
            let line = &self.lines[cur];
            match line.parent {
                Some(p) if line.shared > 0 => {
                    want = want.min(line.shared);
                    cur = p;
                }
                _ => break,
            }
        }
        let mut out = Vec::with_capacity(chain.len());
        for &(li, want) in chain.iter().rev() {
            let line = &self.lines[li];
            let n = want.saturating_sub(line.shared).min(line.own.len());
            if n > 0 {
                out.push((line.gen, line.own.start..line.own.start + n));
            }
        }
        out
    }

    /// Line `l`'s records root→leaf.
    pub fn path(&self, l: usize) -> impl Iterator<Item = At> {
        self.runs(l)
            .into_iter()
            .flat_map(|(gen, r)| r.map(move |entry| At { gen, entry }))
    }

    /// Record `i` of line `l`.
    pub fn at(&self, mut l: usize, i: usize) -> Option<At> {
        loop {
            let line = self.lines.get(l)?;
            if i >= line.shared {
                let k = i - line.shared;
                return (k < line.own.len()).then_some(At {
                    gen: line.gen,
                    entry: line.own.start + k,
                });
            }
            l = line.parent?;
        }
    }
}

/// Builds the world lines of a thread whose files are `gens`, first
/// generation first; `id` is the thread's uuid.
pub fn build(id: &str, gens: &[Rollout]) -> Thread {
    let mut t = Thread::default();
    for (g, file) in gens.iter().enumerate() {
        if g == 0 {
            t.lines.push(Line {
                parent: None,
                shared: 0,
                turns: None,
                gen: 0,
                own: 0..0,
            });
        } else {
            let from = t.current;
            let base = file.meta.as_ref().and_then(|m| m.base.clone());
            let end = match base {
                Some((thread, end)) if thread == id => end,
                _ => {
                    t.warnings.push(Warning {
                        file: file.name.clone(),
                        line: 1,
                        message: "a later generation without a history_base into its thread; continued from its first ordinal".into(),
                    });
                    file.entries.first().map_or(0, |e| e.ordinal)
                }
            };
            let shared = t
                .path(from)
                .take_while(|&a| t.entry(gens, a).is_some_and(|e| e.ordinal < end))
                .count();
            t.lines.push(Line {
                parent: Some(from),
                shared,
                turns: None,
                gen: g,
                own: 0..0,
            });
            t.current = t.lines.len() - 1;
        }
        for (k, e) in file.entries.iter().enumerate() {
            let at = At { gen: g, entry: k };
            let turns = e.turns();
            if turns > 0 {
                let from = t.current;
                let cut = rollback_cut(gens, &t, from, turns);
                t.lines.push(Line {
                    parent: Some(from),
                    shared: cut,
                    turns: Some(turns),
                    gen: g,
                    own: k..k + 1,
                });
                t.current = t.lines.len() - 1;
            } else {
                if e.kind == Kind::Compacted {
                    t.compactions.push((t.current, at));
                }
                let cur = &mut t.lines[t.current];
                // The current line's own records are the file's entries
                // since it began: a run.
                if cur.own.is_empty() {
                    cur.own = k..k + 1;
                } else {
                    cur.own.end = k + 1;
                }
            }
        }
    }
    t
}

/// Where a rollback of `turns` user turns cuts line `l`: the start of the
/// `turns`-th last turn holding a prompt (its `task_started`, else the
/// prompt itself). Rolling back more turns than there are keeps the
/// records before the first turn.
fn rollback_cut(gens: &[Rollout], t: &Thread, l: usize, turns: u32) -> usize {
    let mut starts = Vec::new();
    let mut open: Option<usize> = None;
    let len = t.lines[l].records();
    for (i, a) in t.path(l).enumerate() {
        let Some(e) = gens.get(a.gen).and_then(|g| g.entries.get(a.entry)) else {
            continue;
        };
        match e.kind {
            Kind::TurnStarted => open = Some(i),
            Kind::Prompt => starts.push(open.take().unwrap_or(i)),
            Kind::TurnComplete => open = None,
            _ => {}
        }
    }
    let n = turns as usize;
    if n >= starts.len() {
        starts.first().copied().unwrap_or(len)
    } else {
        starts[starts.len() - n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn line(ord: u64, ty: &str, payload: &str) -> String {
        format!("{{\"ordinal\":{ord},\"type\":\"{ty}\",\"payload\":{payload}}}\n")
    }

    fn turn(ord: &mut u64, text: &str) -> String {
        let mut s = String::new();
        s += &line(*ord, "event_msg", r#"{"type":"task_started"}"#);
        s += &line(
            *ord + 1,
            "response_item",
            &format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
            ),
        );
        s += &line(
            *ord + 2,
            "response_item",
            r#"{"type":"message","role":"assistant","content":[]}"#,
        );
        s += &line(*ord + 3, "event_msg", r#"{"type":"task_complete"}"#);
        *ord += 4;
        s
    }

    fn ids(gens: &[Rollout], t: &Thread, l: usize) -> Vec<u64> {
        t.path(l)
            .map(|a| t.entry(gens, a).unwrap().ordinal)
            .collect()
    }

    #[test]
    fn legacy_rollback_starts_a_line_before_the_dropped_turns() {
        let mut o = 1;
        let mut text = line(0, "session_meta", r#"{"id":"t"}"#);
        text += &turn(&mut o, "one");
        text += &turn(&mut o, "two");
        text += &turn(&mut o, "three");
        text += &line(
            o,
            "event_msg",
            r#"{"type":"thread_rolled_back","num_turns":2}"#,
        );
        o += 1;
        text += &turn(&mut o, "two again");
        let g = vec![Rollout::parse(Path::new("/x"), "x", text.as_bytes())];
        let t = build("t", &g);
        assert_eq!(t.lines.len(), 2);
        assert_eq!(ids(&g, &t, 0), (0..13).collect::<Vec<_>>());
        assert_eq!(t.lines[1].parent, Some(0));
        assert_eq!(t.lines[1].shared, 5);
        assert_eq!(ids(&g, &t, 1), [0, 1, 2, 3, 4, 13, 14, 15, 16, 17]);
        assert_eq!(t.current, 1);
    }

    #[test]
    fn a_later_generation_continues_the_current_line_below_its_base() {
        let mut o = 1;
        let mut a = line(0, "session_meta", r#"{"id":"t"}"#);
        a += &turn(&mut o, "one");
        a += &turn(&mut o, "two");
        let mut o = 5;
        let mut b = line(
            5,
            "session_meta",
            r#"{"id":"t","history_base":{"thread_id":"t","end_ordinal_exclusive":5}}"#,
        );
        o += 1;
        b += &turn(&mut o, "two again");
        b += &line(o, "compacted", r#"{"message":"s"}"#);
        let g = vec![
            Rollout::parse(Path::new("/a"), "a", a.as_bytes()),
            Rollout::parse(Path::new("/b"), "b", b.as_bytes()),
        ];
        let t = build("t", &g);
        assert_eq!(t.lines.len(), 2);
        assert_eq!(ids(&g, &t, 1), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(t.lines[1].shared, 5);
        assert_eq!(t.compactions, [(1, At { gen: 1, entry: 5 })]);
    }
}
