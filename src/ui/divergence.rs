//! The divergence meter, Steins;Gate style: `N.ppphhh`, deterministic.
//! N = forks between the first world line and this one (along origins),
//! ppp = per mille of this world line's records not shared with the first,
//! hhh = a fingerprint of the fork (its checkpoint and D-Mail text).

use crate::worldline::Family;

pub fn meter(family: &Family, line: usize) -> String {
    let Some(l) = family.lines.get(line) else {
        return "0.000000".into();
    };
    let Some(first) = family.lines.first() else {
        return "0.000000".into();
    };
    if line == 0 || l.nodes.is_empty() {
        return "0.000000".into();
    }
    let common = l
        .nodes
        .iter()
        .zip(&first.nodes)
        .take_while(|(a, b)| a == b)
        .count();
    let own = l.nodes.len() - common;
    let permille = (own * 1000 / l.nodes.len()).min(999);
    let mut depth = 0;
    let mut cur = Some(line);
    // Origins point to older lines, so this ends; the bound guards odd data.
    while let Some(c) = cur.filter(|_| depth <= family.lines.len()) {
        match family.lines[c].fork.as_ref().and_then(|f| f.origin) {
            Some(o) if c != 0 => {
                depth += 1;
                cur = Some(o);
            }
            _ => break,
        }
    }
    if depth == 0 && own > 0 {
        // A line that shares nothing still left the first one behind.
        depth = 1;
    }
    let fp = l.fork.as_ref().map_or(0, |f| {
        let seed = format!(
            "{}|{}",
            f.checkpoint.unwrap_or(-1),
            f.message.as_deref().unwrap_or("")
        );
        xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) % 1000
    });
    format!("{depth}.{permille:03}{fp:03}")
}
