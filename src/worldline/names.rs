//! World-line names, the show's way: α, β, γ … oldest first, then `wl25`,
//! `wl26` …; and the colour slot each keeps for the whole session. Shared by
//! the TUI, the map and every export so a line is called the same everywhere.

pub const GREEK: [&str; 24] = [
    "α", "β", "γ", "δ", "ε", "ζ", "η", "θ", "ι", "κ", "λ", "μ", "ν", "ξ", "ο", "π", "ρ", "σ", "τ",
    "υ", "φ", "χ", "ψ", "ω",
];

/// The name of world line `i` (oldest first).
pub fn line_name(i: usize) -> String {
    GREEK
        .get(i)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("wl{}", i + 1))
}

/// The colour slot of world line `i` in a palette of `n` colours: fixed by
/// its index, so a line never changes colour when others appear.
pub fn colour_slot(i: usize, n: usize) -> usize {
    i % n.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greek_then_numbered() {
        assert_eq!(line_name(0), "α");
        assert_eq!(line_name(2), "γ");
        assert_eq!(line_name(23), "ω");
        assert_eq!(line_name(24), "wl25");
        assert_eq!(colour_slot(7, 6), 1);
        assert_eq!(colour_slot(3, 0), 0);
    }
}
