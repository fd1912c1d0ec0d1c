//! The divergence meter, Steins;Gate style: `N.ppphhh`, deterministic and
//! fixed once a world line exists (it never moves as records arrive).
//! N = D-Mail forks between the first world line and this one (along
//! origins), ppp = per mille of its parent's records the last D-Mail left
//! behind, hhh = a fingerprint of that D-Mail (its checkpoint and text).
//! Compaction and `/clear` are not time travel: such a line has no meter
//! (the caption says what happened).

use crate::worldline::{Family, ForkKind};

pub fn meter(family: &Family, line: usize) -> Option<String> {
    let l = family.lines.get(line)?;
    if let Some(f) = &l.fork {
        if matches!(f.kind, ForkKind::Compaction | ForkKind::Clear) {
            return None;
        }
    }
    let mut depth = 0;
    let mut nearest: Option<usize> = None;
    let mut cur = Some(line);
    // Origins point to older lines, so this ends; the bound guards odd data.
    let mut steps = 0;
    while let Some(c) = cur.filter(|_| steps <= family.lines.len()) {
        steps += 1;
        let fork = family.lines[c].fork.as_ref();
        match fork {
            Some(f) if c != 0 => {
                if f.kind != ForkKind::Compaction && f.kind != ForkKind::Clear {
                    depth += 1;
                    nearest.get_or_insert(c);
                }
                cur = f.origin.or(family.lines[c].parent);
            }
            _ => break,
        }
    }
    let Some(n) = nearest else {
        return Some("0.000000".into());
    };
    let child = &family.lines[n];
    let f = child.fork.as_ref()?;
    let parent_len = child
        .parent
        .and_then(|p| family.files.get(p))
        .map_or(0, |p| p.records.len());
    let left = parent_len.saturating_sub(child.shared);
    let permille = (left * 1000).checked_div(parent_len).unwrap_or(0).min(999);
    let seed = format!(
        "{}|{}",
        f.checkpoint.unwrap_or(-1),
        f.message.as_deref().unwrap_or("")
    );
    let fp = xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) % 1000;
    Some(format!("{depth}.{permille:03}{fp:03}"))
}
