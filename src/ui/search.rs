//! Search over record bodies, off the UI thread: bodies are read from disk
//! one by one in row order, hits stream back in batches with progress, and
//! a flag cancels the scan.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::Body;
use crate::worldline::{RecordRef, Session};

use super::app::{Found, SearchRequest};

/// Smart case: case-insensitive unless the query has an uppercase letter.
#[derive(Debug, Clone)]
pub struct Matcher {
    needle: String,
    fold: bool,
}

impl Matcher {
    pub fn new(query: &str) -> Matcher {
        let fold = !query.chars().any(char::is_uppercase);
        Matcher {
            needle: if fold {
                query.to_lowercase()
            } else {
                query.to_string()
            },
            fold,
        }
    }

    pub fn is_match(&self, hay: &str) -> bool {
        if self.fold {
            hay.to_lowercase().contains(&self.needle)
        } else {
            hay.contains(&self.needle)
        }
    }

    /// Text, think parts, tool names and arguments.
    pub fn body_matches(&self, b: &Body) -> bool {
        self.is_match(&b.text())
            || b.tool_calls
                .iter()
                .any(|c| self.is_match(&c.name) || self.is_match(&c.arguments))
    }
}

/// Scans `req` and reports through `send` until done or cancelled. Returns
/// false when the receiver is gone.
pub fn scan(req: &SearchRequest, cancel: &AtomicBool, send: &dyn Fn(Found) -> bool) -> bool {
    let m = Matcher::new(&req.query);
    let Some(agent) = req.session.agents.get(req.agent) else {
        return send(Found::Done {
            generation: req.generation,
        });
    };
    let family = &agent.family;
    let total: usize = family
        .lines
        .iter()
        .zip(&family.files)
        .map(|(l, f)| f.records.len().saturating_sub(l.shared))
        .sum();
    let mut row = 0;
    let mut batch = Vec::new();
    let mut last = Instant::now();
    for (li, line) in family.lines.iter().enumerate() {
        let n = family.files[li].records.len();
        for rec in line.shared..n {
            if cancel.load(Ordering::Relaxed) {
                return true;
            }
            let r = RecordRef {
                agent: req.agent,
                line: li,
                record: rec,
            };
            if hit(&req.session, r, &m) {
                batch.push(r);
            }
            row += 1;
            if last.elapsed() > Duration::from_millis(100) {
                last = Instant::now();
                if !batch.is_empty()
                    && !send(Found::Hits {
                        generation: req.generation,
                        records: std::mem::take(&mut batch),
                    })
                {
                    return false;
                }
                if !send(Found::Progress {
                    generation: req.generation,
                    scanned: row,
                    total,
                }) {
                    return false;
                }
            }
        }
    }
    if !batch.is_empty()
        && !send(Found::Hits {
            generation: req.generation,
            records: batch,
        })
    {
        return false;
    }
    send(Found::Done {
        generation: req.generation,
    })
}

fn hit(s: &Session, r: RecordRef, m: &Matcher) -> bool {
    let Some(meta) = s.record(r) else {
        return false;
    };
    if meta.tool_calls().iter().any(|c| m.is_match(c.name())) {
        return true;
    }
    if let Some(cp) = meta.checkpoint() {
        return m.is_match(&format!("checkpoint {cp}"));
    }
    s.body(r).is_ok_and(|b| m.body_matches(&b))
}

/// Runs a scan on its own thread.
pub fn spawn(
    req: SearchRequest,
    cancel: Arc<AtomicBool>,
    send: impl Fn(Found) -> bool + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("worldline-search".into())
        .spawn(move || {
            scan(&req, &cancel, &send);
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case() {
        assert!(Matcher::new("fold").is_match("First Fold"));
        assert!(!Matcher::new("Fold").is_match("first fold"));
        assert!(Matcher::new("Fold").is_match("First Fold"));
    }
}
