//! Where kimi-cli's world lines leave each other. A rotation copies the
//! current context file's start into the next one, so a world line's
//! parent is the one before it and what they share is the longest run of
//! equal records (equal as kimi-cli's Python reads them, which may need
//! the lines from disk); the first own record says why it forked: a D-Mail
//! injection, a compaction, or `/clear`'s fresh start. The builder is
//! handed the answer as explicit forks. [`Forks`] keeps the last answer, so
//! the follower's next one after an append costs the appended records.

use crate::model::{shared_prefix, Marker, RecordMeta, Role};
use crate::read::{FileIndex, Records};
use crate::sources::{ForkKind, LineFork, LineInfo, StatedFork};

/// What was decided about one world line, and from which records.
#[derive(Debug, Clone, Default)]
struct Known {
    records: Records,
    shared: usize,
    kind: ForkKind,
    /// A D-Mail's body.
    message: Option<String>,
}

/// The forks of one agent's family as last inferred.
#[derive(Debug, Clone, Default)]
pub struct Forks {
    lines: Vec<Known>,
}

/// Forks and world-line names of `files`, inferred from scratch.
pub fn infer(files: &[FileIndex]) -> (Vec<LineFork>, Vec<LineInfo>) {
    Forks::default().infer(files)
}

impl Forks {
    /// Forks and world-line names of `files`. A world line whose records,
    /// and its parent's, only grew since the last call keeps what its old
    /// records decided and looks at the new ones.
    pub fn infer(&mut self, files: &[FileIndex]) -> (Vec<LineFork>, Vec<LineInfo>) {
        // Per world line: its length last time, when its records only grew.
        let grown: Vec<Option<usize>> = files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let old = &self.lines.get(i)?.records;
                f.records.extends(old).then_some(old.len())
            })
            .collect();
        let mut forks = Vec::with_capacity(files.len());
        let mut infos = Vec::with_capacity(files.len());
        let mut known = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            let Some(p) = i.checked_sub(1) else {
                forks.push(LineFork::Root);
                infos.push(LineInfo {
                    label: file.name.clone(),
                    ..LineInfo::default()
                });
                known.push(Known {
                    records: file.records.clone(),
                    ..Known::default()
                });
                continue;
            };
            let was = self.lines.get(i).filter(|_| grown[i].is_some());
            let shared = match (was, grown[p], grown[i]) {
                // Diverged before either ended: final.
                (Some(w), Some(plen), Some(olen)) if w.shared < plen && w.shared < olen => w.shared,
                (Some(w), Some(_), Some(_)) => shared_prefix_from(&files[p], file, w.shared),
                _ => shared_prefix_from(&files[p], file, 0),
            };
            // Why it forks depends on the shared records and the first own
            // one: unchanged when both were there before.
            let kept = was.filter(|w| {
                w.shared == shared && grown[p].is_some() && grown[i].is_some_and(|n| n > shared)
            });
            let (kind, message) = match kept {
                Some(w) => (w.kind, w.message.clone()),
                None => classify(&files[p], file, shared),
            };
            forks.push(LineFork::Explicit { parent: p, shared });
            infos.push(LineInfo {
                label: file.name.clone(),
                fork: Some(StatedFork {
                    kind,
                    ..StatedFork::default()
                }),
                prompt: message.clone(),
                ..LineInfo::default()
            });
            known.push(Known {
                records: file.records.clone(),
                shared,
                kind,
                message,
            });
        }
        self.lines = known;
        (forks, infos)
    }
}

/// The number of records `old` and `new` share from the start, knowing the
/// first `n` are shared. Two records whose text differs still count as
/// shared when kimi-cli's Python reads them as the same value (it rewrites
/// `_checkpoint c`, and a record with a repeated key is not the same text
/// once rewritten).
fn shared_prefix_from(old: &FileIndex, new: &FileIndex, mut n: usize) -> usize {
    loop {
        n += shared_prefix(old.records.range(n..), new.records.range(n..));
        if n < old.records.len()
            && n < new.records.len()
            && crate::read::same_record_on_disk(old, n, new, n)
        {
            n += 1;
        } else {
            return n;
        }
    }
}

/// Why `file` left `parent` after `shared` records, and a D-Mail's body.
fn classify(parent: &FileIndex, file: &FileIndex, shared: usize) -> (ForkKind, Option<String>) {
    let prefix = file.records.range(..shared);
    let first = file.records.get(shared);
    match first.and_then(|r| r.marker()).as_deref() {
        Some(Marker::DMailInjection(message)) => (ForkKind::Dmail, Some(message.clone())),
        Some(Marker::Compaction) => (ForkKind::Compaction, None),
        _ if looks_cleared(prefix, first, parent) => (ForkKind::Clear, None),
        _ => (ForkKind::Unknown, None),
    }
}

/// After `/clear` a file starts empty and the next turn writes the system
/// prompt and checkpoint 0 again: at most those are shared by text.
fn looks_cleared(
    prefix: crate::read::RecordIter<'_>,
    first: Option<&RecordMeta>,
    parent: &FileIndex,
) -> bool {
    let only_preamble = prefix
        .clone()
        .all(|r| match (r.role(), r.marker().as_deref()) {
            (Role::SystemPrompt, _) => true,
            (Role::Checkpoint, _) => r.checkpoint() == Some(0),
            (Role::User, Some(Marker::CheckpointNote(0))) => true,
            _ => false,
        });
    // A file identical to its parent so far (still being written) has not
    // diverged yet, so it is not a clear.
    let diverged = first.is_some() || prefix.len() < parent.records.len();
    only_preamble && diverged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kimi_writer::{
        checkpoint_line, dmail_injection_message, message_line, system_prompt_line,
    };
    use crate::read::Indexer;

    fn index(name: &str, lines: &[String]) -> FileIndex {
        let mut ix = Indexer::new(name, "/nonexistent");
        ix.push(lines.concat().as_bytes());
        ix.finish();
        ix.into_index()
    }

    fn user(text: &str) -> String {
        format!("{{\"role\": \"user\", \"content\": \"{text}\"}}\n")
    }

    #[test]
    fn a_rotation_forks_after_what_it_copied_and_says_why() {
        let start = vec![
            system_prompt_line("s"),
            checkpoint_line(0),
            user("a"),
            checkpoint_line(1),
            user("b"),
        ];
        let old = index("context_1.jsonl", &start);
        let mut dmail = start[..4].to_vec();
        dmail.push(message_line(&dmail_injection_message("try again")));
        let mut follower = Forks::default();
        let (forks, infos) = follower.infer(&[old.clone(), index("context.jsonl", &dmail)]);
        assert_eq!(
            forks,
            [
                LineFork::Root,
                LineFork::Explicit {
                    parent: 0,
                    shared: 4
                }
            ]
        );
        assert_eq!(infos[0].label, "context_1.jsonl");
        assert_eq!(infos[1].fork.clone().map(|f| f.kind), Some(ForkKind::Dmail));
        assert_eq!(infos[1].prompt.as_deref(), Some("try again"));
        // Appended to: the follower's answer is the one from scratch.
        dmail.push(user("c"));
        let files = [old.clone(), index("context.jsonl", &dmail)];
        assert_eq!(follower.infer(&files), infer(&files));
        // `/clear`: only the system prompt and checkpoint 0 again.
        let cleared = [start[0].clone(), start[1].clone(), user("new")];
        let (forks, infos) = infer(&[old, index("context.jsonl", &cleared)]);
        assert_eq!(
            forks[1],
            LineFork::Explicit {
                parent: 0,
                shared: 2
            }
        );
        assert_eq!(infos[1].fork.clone().map(|f| f.kind), Some(ForkKind::Clear));
    }
}
