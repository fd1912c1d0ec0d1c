//! Printing a rebuilt session: a readable tree, the JSON contract, Graphviz
//! dot and Mermaid diagrams, the SVG map and the one-file HTML report, all
//! in the words of `story` (`cmd/tree.rs` picks one and prints it).

pub mod compare;
mod diagram;
pub mod diff;
pub mod html;
pub mod json;
mod markup;
mod plain;
pub mod story;
pub mod svg;
pub mod transcript;

pub use diagram::{dot, mermaid};
pub use html::html;
pub use plain::{fork_label, subagent_words, text_tree};
pub use svg::{map_svg, SvgOptions};

/// Local time is not known without a tz database; times print in UTC.
pub fn format_time(unix: f64) -> String {
    let secs = unix.max(0.0) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// `HH:MM:SS` of a Unix time, in UTC.
pub fn format_clock(unix: f64) -> String {
    let s = (unix.max(0.0) as i64).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's method).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes() {
        assert_eq!(format_time(0.0), "1970-01-01 00:00");
        assert_eq!(format_time(1_796_068_975.7), "2026-11-30 20:02");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KB");
    }
}
