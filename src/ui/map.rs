//! The world-line map strip: one row per world line (name, rail with its
//! checkpoints, fork, D-Mail sends, state and reason) and a row for the arc
//! of the D-Mail that made the focused line; subagents and the sessions
//! `/fork` and `/undo` made from this one hang under their host track. `layout_track` and `arc_row`
//! are pure (model + width in, cells out) so they are tested without a
//! terminal; `draw` only paints their cells.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::text::{truncate, width};
use crate::worldline::map::{DMailArc, Map, MarkKind, Outcome, Track, TrackState};
use crate::worldline::names::line_name;
use crate::worldline::ForkKind;

use super::theme::Theme;

/// What a map cell shows, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ink {
    Blank,
    /// The thin connector from a fork to where the line's own records start.
    Connector,
    Rail,
    Tick,
    Head,
    DMail,
    Refused,
    /// Compaction or /clear.
    Mark,
    Subagent,
    /// Where a `/fork` or `/undo` session leaves.
    Fork,
    /// A user's name for an entry.
    Label,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub glyph: char,
    pub ink: Ink,
}

const BLANK: Cell = Cell {
    glyph: ' ',
    ink: Ink::Blank,
};

/// Column of logical `x` on a rail `cols` wide.
pub fn col(x: usize, map_width: usize, cols: usize) -> usize {
    if cols == 0 {
        return 0;
    }
    let span = map_width.saturating_sub(1).max(1);
    (x.min(span) * (cols - 1)) / span
}

/// The rail of one track, `cols` cells wide.
pub fn layout_track(map: &Map, t: &Track, cols: usize) -> Vec<Cell> {
    layout_ticks(map, t, cols, false)
}

/// `layout_track`, trying every tick when `every_tick` (what the skip per
/// column is tested against).
fn layout_ticks(map: &Map, t: &Track, cols: usize, every_tick: bool) -> Vec<Cell> {
    let mut out = vec![BLANK; cols];
    if cols == 0 || t.own.is_empty() {
        return out;
    }
    let c = |x: usize| col(x, map.width, cols);
    let (sc, ec) = (c(t.own.start), c(t.own.end - 1));
    let set = |out: &mut Vec<Cell>, i: usize, glyph: char, ink: Ink| {
        if let Some(cell) = out.get_mut(i) {
            *cell = Cell { glyph, ink };
        }
    };
    for i in sc..=ec {
        set(&mut out, i, '━', Ink::Rail);
    }
    if let Some(fx) = t.fork_x {
        let fc = c(fx);
        for i in fc + 1..sc {
            set(&mut out, i, '─', Ink::Connector);
        }
        let (glyph, ink) = match t.kind {
            Some(ForkKind::Compaction) => ('⊜', Ink::Mark),
            Some(ForkKind::Clear) => ('∅', Ink::Mark),
            _ => ('┗', Ink::Connector),
        };
        set(&mut out, fc, glyph, ink);
    } else {
        set(&mut out, sc, '●', Ink::Head);
    }
    // A compaction inside the line (no new world line) is marked where it is.
    for m in map
        .marks
        .iter()
        .filter(|m| m.line == t.line && Some(m.x) != t.fork_x)
    {
        let glyph = match m.kind {
            MarkKind::Compaction => '⊜',
            MarkKind::Clear => '∅',
        };
        set(&mut out, c(m.x), glyph, Ink::Mark);
    }
    for s in map.subagents.iter().filter(|s| s.host_line == t.line) {
        set(&mut out, c(s.x), '⇲', Ink::Subagent);
    }
    for fk in map.forks.iter().filter(|f| f.host_line == t.line) {
        set(&mut out, c(fk.x), '⑂', Ink::Fork);
    }
    for a in map.arcs.iter().filter(|a| a.from_line == t.line) {
        let (glyph, ink) = match a.outcome {
            Outcome::Refused(_) => ('✗', Ink::Refused),
            _ => ('✉', Ink::DMail),
        };
        set(&mut out, c(a.from_x), glyph, ink);
    }
    // A user's name for an entry, `[name]`, over bare rail (else a `▪`
    // where the entry is, if that is rail): before the ticks, which it
    // outranks, after the marks, which it must not hide.
    for lb in map.labels.iter().filter(|l| l.line == t.line) {
        let at = c(lb.x);
        let text: Vec<char> = format!("[{}]", lb.text).chars().collect();
        let fits = at + text.len() <= ec + 1
            && (at..at + text.len()).all(|i| out.get(i).is_some_and(|c| c.ink == Ink::Rail));
        if fits {
            for (j, ch) in text.iter().enumerate() {
                set(&mut out, at + j, *ch, Ink::Label);
            }
        } else if out.get(at).is_some_and(|cell| cell.ink == Ink::Rail) {
            set(&mut out, at, '▪', Ink::Label);
        }
    }
    // Ticks after the marks: a `⚑N` label only over bare rail, so it
    // never hides a send or a subagent. Only the first tick of a column can
    // show (it leaves the cell a tick or not rail): the rest are skipped by
    // binary search (ticks are in x order), so a line of 100 000
    // checkpoints costs a search per column, not a label each.
    let mut free_from = 0;
    let mut i = 0;
    while let Some(k) = t.ticks.get(i) {
        let at = c(k.x);
        i += match every_tick {
            true => 1,
            false => t.ticks[i..].partition_point(|k| c(k.x) <= at),
        };
        let label: Vec<char> = format!("⚑{}", k.checkpoint).chars().collect();
        let fits = at >= free_from
            && at + label.len() <= ec
            && (at..at + label.len()).all(|i| out[i].ink == Ink::Rail);
        if fits {
            for (j, ch) in label.iter().enumerate() {
                set(&mut out, at + j, *ch, Ink::Tick);
            }
            free_from = at + label.len() + 1;
        } else if out.get(at).is_some_and(|cell| cell.ink == Ink::Rail) {
            set(&mut out, at, '┿', Ink::Tick);
        }
    }
    let end = match t.state {
        TrackState::Current => '◆',
        _ => '┫',
    };
    if out[ec].ink == Ink::Rail || ec == sc && t.fork_x.is_some() {
        set(&mut out, ec, end, Ink::Head);
    }
    out
}

/// The arc row under the tracks: `╰── ✉ β⚑10 → ⚑3 ──╯` from the target
/// checkpoint to the sending call.
pub fn arc_row(map: &Map, a: &DMailArc, cols: usize) -> Vec<Cell> {
    arc_row_with_room(map, a, cols, 0)
}

/// Like `arc_row` with `extra` blank cells after the rail: a label that
/// doesn't fit inside the arc goes right after it.
pub fn arc_row_with_room(map: &Map, a: &DMailArc, cols: usize, extra: usize) -> Vec<Cell> {
    let mut out = vec![BLANK; cols + extra];
    let Some(to) = a.to_x else { return out };
    if cols == 0 {
        return out;
    }
    let (l, r) = (col(to, map.width, cols), col(a.from_x, map.width, cols));
    let (l, r) = (l.min(r), l.max(r));
    for cell in out.iter_mut().take(r + 1).skip(l) {
        *cell = Cell {
            glyph: '─',
            ink: Ink::DMail,
        };
    }
    out[l].glyph = '╰';
    out[r].glyph = '╯';
    let from = match a.from_checkpoint {
        Some(c) => format!("{}⚑{c}", line_name(a.from_line)),
        None => line_name(a.from_line),
    };
    let label: Vec<char> = format!(" ✉ {from} → ⚑{} ", a.checkpoint).chars().collect();
    let start = if r > l + label.len() + 1 {
        l + (r - l - label.len()) / 2 + 1
    } else {
        r + 1
    };
    if start + label.len() <= out.len() {
        for (j, ch) in label.iter().enumerate() {
            out[start + j] = Cell {
                glyph: *ch,
                ink: Ink::DMail,
            };
        }
    }
    out
}

/// A row of the map strip: a world line's track, a subagent's short track
/// under the call that ran it, or a fork session's under its fork point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapRow {
    Track(usize),
    Sub(usize),
    /// Index into `Map::forks`.
    Fork(usize),
}

/// The rows the map shows when `fit` rows fit: every track with its
/// subagents under it; when that is too many, the tracks only, a window of
/// them holding the focused line. Drawing and clicks both use this.
pub fn shown(map: &Map, fit: usize, focus: usize) -> Vec<MapRow> {
    let mut all = Vec::new();
    for t in &map.tracks {
        all.push(MapRow::Track(t.line));
        for (k, sub) in map.subagents.iter().enumerate() {
            if sub.host_line == t.line {
                all.push(MapRow::Sub(k));
            }
        }
        for (k, fk) in map.forks.iter().enumerate() {
            if fk.host_line == t.line {
                all.push(MapRow::Fork(k));
            }
        }
    }
    if all.len() <= fit {
        return all;
    }
    let first = first_track(map.tracks.len(), fit, focus);
    (first..map.tracks.len().min(first + fit))
        .map(MapRow::Track)
        .collect()
}

/// Rows the map wants: tracks, subagents and fork sessions.
pub fn wanted_rows(map: &Map) -> usize {
    map.tracks.len() + map.subagents.len() + map.forks.len()
}

/// First track shown when only `rows` fit: the newest ones, moved so the
/// focused line is among them.
pub fn first_track(tracks: usize, rows: usize, focus: usize) -> usize {
    if rows == 0 || tracks <= rows {
        return 0;
    }
    let newest = tracks - rows;
    if focus < newest {
        focus
    } else {
        newest
    }
}

/// The map's arc row shows the D-Mail into `line`, else (when `line` did
/// not begin with a D-Mail from outside, which has no arc and says so)
/// the newest one `line` sent; never one of other lines.
pub fn arc_for(map: &Map, line: usize) -> Option<&DMailArc> {
    map.arc_into(line).or_else(|| {
        let from_outside = map.tracks.get(line).is_some_and(|t| t.back_to.is_some());
        (!from_outside)
            .then(|| map.arcs.iter().rev().find(|a| a.from_line == line))
            .flatten()
    })
}

fn ink_style(t: &Theme, line: usize, ink: Ink) -> Style {
    match ink {
        Ink::Blank => Style::new(),
        Ink::Connector => t.line(line).patch(t.dim()),
        Ink::Rail => t.line(line),
        Ink::Tick => t.line(line).patch(t.bold()),
        Ink::Head => t.line(line).patch(t.bold()),
        Ink::DMail => t.dmail(),
        Ink::Refused => t.error(),
        Ink::Mark => t.accent(),
        Ink::Subagent => t.accent(),
        Ink::Fork => t.accent().patch(t.bold()),
        Ink::Label => t.accent(),
    }
}

/// A fork session's short track: `└⑂ /undo · e299ef2f · from ⚑2 · 19
/// records (o enters)` from its fork point's column.
pub fn fork_row(map: &Map, k: usize, cols: usize) -> (usize, String) {
    let Some(fk) = map.forks.get(k) else {
        return (0, String::new());
    };
    let at = col(fk.x, map.width, cols);
    (4 + at, format!("└{} (o enters)", fk.text()))
}

fn fork_line(map: &Map, k: usize, cols: usize, w: usize, t: &Theme) -> Line<'static> {
    let (indent, full) = fork_row(map, k, cols);
    // A narrow screen drops the hint, then the details, before cutting: the
    // label stays under its fork point.
    let room = w.saturating_sub(indent);
    let text = match map.forks.get(k) {
        Some(fk) if width(&full) > room => {
            let plain = format!("└{}", fk.text());
            let short = format!("└⑂ /{} · {}", fk.kind.as_str(), fk.label);
            let at = fk.checkpoint.map(|c| format!("{short} · from ⚑{c}"));
            match at {
                _ if width(&plain) <= room => plain,
                Some(at) if width(&at) <= room => at,
                _ => short,
            }
        }
        _ => full,
    };
    Line::from(vec![
        Span::raw(" ".repeat(indent)),
        Span::styled(
            truncate(&text, w.saturating_sub(indent)),
            t.accent().patch(t.bold()),
        ),
    ])
}

/// Width of the rail for a screen `w` wide.
pub fn rail_cols(w: usize) -> usize {
    (w * 2 / 5).clamp(12, 64)
}

/// Paints the map: a title rule, the tracks that fit, the arc row.
pub fn draw(f: &mut Frame, area: Rect, map: &Map, focus: usize, lit: Option<usize>, t: &Theme) {
    if area.height == 0 {
        return;
    }
    let w = area.width as usize;
    let rows = super::geometry::map_track_rows(f.area().as_size(), area.height);
    let shown_rows = shown(map, rows, focus);
    let cols = rail_cols(w);
    let mut lines: Vec<Line> = Vec::new();
    let tracks_shown = shown_rows
        .iter()
        .filter(|r| matches!(r, MapRow::Track(_)))
        .count();
    let title = if tracks_shown < map.tracks.len() {
        format!("─ world lines ({} of {}) ", tracks_shown, map.tracks.len())
    } else {
        "─ world lines ".to_string()
    };
    // The rows' times are UTC (no tz database): the rule says so once.
    let zone = if w >= width(&title) + 24 {
        " times in UTC ─"
    } else {
        ""
    };
    lines.push(Line::from(Span::styled(
        format!(
            "{title}{}{zone}",
            "─".repeat(w.saturating_sub(width(&title) + width(zone)))
        ),
        t.dim(),
    )));
    for row in shown_rows {
        let tr = match row {
            MapRow::Track(i) => &map.tracks[i],
            MapRow::Sub(k) => {
                let sub = &map.subagents[k];
                let at = col(sub.x, map.width, cols);
                let text = format!(
                    "╰⇲ {} · {} · {} (s enters)",
                    sub.label,
                    crate::text::count(sub.world_lines as u64, "world line"),
                    crate::text::count(sub.steps as u64, "step")
                );
                lines.push(Line::from(vec![
                    Span::raw(" ".repeat(4 + at)),
                    Span::styled(truncate(&text, w.saturating_sub(4 + at)), t.accent()),
                ]));
                continue;
            }
            MapRow::Fork(k) => {
                lines.push(fork_line(map, k, cols, w, t));
                continue;
            }
        };
        let mut spans = Vec::new();
        let name_style = if Some(tr.line) == lit {
            t.line(tr.colour).patch(t.selected())
        } else if tr.line == focus {
            t.line(tr.colour).patch(t.bold())
        } else {
            t.line(tr.colour)
        };
        let marker = if tr.line == focus { '▸' } else { ' ' };
        spans.push(Span::raw(marker.to_string()));
        spans.push(Span::styled(format!("{:<2}", tr.name), name_style));
        spans.push(Span::raw(" "));
        for c in layout_track(map, tr, cols) {
            spans.push(Span::styled(
                c.glyph.to_string(),
                ink_style(t, tr.colour, c.ink),
            ));
        }
        let state = format!(" {:<9} ", tr.state.as_str());
        let state_style = match tr.state {
            TrackState::Current => t.bold(),
            _ => t.dim(),
        };
        spans.push(Span::styled(state, state_style));
        let used = 1 + 2 + 1 + cols + 11;
        let mut reason = tr.reason.clone();
        if tr.kind.is_none() {
            reason.push_str(&format!(
                " · {}",
                crate::text::count(tr.steps as u64, "step")
            ));
            if let Some(tok) = tr.tokens {
                reason.push_str(&format!(" · {} tok", super::view::short_tokens(tok)));
            }
        }
        let reason = truncate(&reason, w.saturating_sub(used));
        let reason_style = if tr.reason.starts_with('←') {
            t.dmail()
        } else if tr.reason.starts_with(['⊜', '∅', '⑂']) {
            t.accent()
        } else {
            t.dim()
        };
        spans.push(Span::styled(reason, reason_style));
        lines.push(Line::from(spans));
    }
    let want_arc = lines.len() < area.height as usize;
    if want_arc {
        let shown = lit.unwrap_or(focus);
        if let Some(a) = arc_for(map, shown) {
            let mut spans = vec![Span::raw("    ")];
            let style = if lit.is_some() {
                t.dmail().patch(t.selected())
            } else {
                t.dmail()
            };
            let text: String = arc_row_with_room(map, a, cols, 16)
                .iter()
                .map(|c| c.glyph)
                .collect();
            spans.push(Span::styled(text, style));
            lines.push(Line::from(spans));
        } else if let Some((tr, cp)) = map
            .tracks
            .get(lit.unwrap_or(focus))
            .and_then(|tr| Some((tr, tr.back_to?)))
        {
            // A D-Mail from outside the agent (`worldline send`, the TUI):
            // no sender to draw from, only the checkpoint it went back to.
            let at = tr.fork_x.map_or(0, |x| col(x, map.width, cols));
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(4 + at)),
                Span::styled(format!("╰─ ✉ from outside → ⚑{cp}"), t.dmail()),
            ]));
        } else if let Some(m) = map.marks.last() {
            let what = match m.kind {
                MarkKind::Compaction => "⊜ compaction: the context was summarised, not reverted",
                MarkKind::Clear => "∅ /clear: the context was emptied, not reverted",
            };
            lines.push(Line::from(Span::styled(format!("    {what}"), t.dim())));
        }
    }
    f.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worldline::map::{Tick, TrackState};

    fn track(line: usize, own: std::ops::Range<usize>, fork_x: Option<usize>) -> Track {
        Track {
            line,
            name: line_name(line),
            colour: line,
            file: String::new(),
            state: TrackState::Abandoned,
            reason: String::new(),
            kind: fork_x.map(|_| ForkKind::Dmail),
            origin: fork_x.map(|_| 0),
            fork_x,
            back_to: None,
            own,
            ticks: Vec::new(),
            steps: 0,
            tokens: None,
            new_permille: 0,
        }
    }

    fn glyphs(cells: &[Cell]) -> String {
        cells.iter().map(|c| c.glyph).collect()
    }

    /// α owns x 0..10, β forks at x 4 and owns 10..20 (the current line).
    fn two() -> Map {
        let mut a = track(0, 0..10, None);
        a.ticks = vec![
            Tick {
                x: 1,
                checkpoint: 0,
            },
            Tick {
                x: 4,
                checkpoint: 1,
            },
        ];
        let mut b = track(1, 10..20, Some(4));
        b.state = TrackState::Current;
        b.ticks = vec![Tick {
            x: 12,
            checkpoint: 2,
        }];
        Map {
            tracks: vec![a, b],
            arcs: vec![DMailArc {
                from_line: 0,
                from_x: 8,
                from_checkpoint: Some(1),
                checkpoint: 1,
                to_x: Some(4),
                outcome: Outcome::Landed(1),
                message: "m".into(),
            }],
            marks: Vec::new(),
            labels: Vec::new(),
            subagents: Vec::new(),
            forks: Vec::new(),
            came_from: None,
            width: 20,
        }
    }

    #[test]
    fn the_arc_row_speaks_of_the_focused_line_only() {
        let mut m = two();
        // γ began with a D-Mail from outside (no call on any line).
        let mut g = track(2, 20..30, Some(12));
        g.back_to = Some(2);
        m.tracks.push(g);
        m.tracks[1].back_to = Some(1);
        m.width = 30;
        assert_eq!(
            arc_for(&m, 1).map(|a| a.from_line),
            Some(0),
            "the arc into β"
        );
        assert_eq!(
            arc_for(&m, 0).map(|a| a.from_line),
            Some(0),
            "the arc α sent"
        );
        assert!(arc_for(&m, 2).is_none(), "γ came from outside: not β's arc");
        // A line that neither sent nor received one shows none.
        m.tracks.push(track(3, 30..31, None));
        assert!(arc_for(&m, 3).is_none());
    }

    #[test]
    fn tracks_are_laid_out_in_written_order() {
        let m = two();
        // 20 logical x on 20 columns: one column per x (19 steps over 19).
        let a = glyphs(&layout_track(&m, &m.tracks[0], 20));
        let b = glyphs(&layout_track(&m, &m.tracks[1], 20));
        assert_eq!(a, "●⚑0━⚑1━━✉┫          ");
        assert_eq!(b, "    ┗─────━━⚑2━━━━━◆");
        // The fork sits under the α checkpoint the D-Mail went back to.
        assert_eq!(b.chars().position(|c| c == '┗'), Some(4));
        assert_eq!(a.chars().nth(4), Some('⚑'));
    }

    #[test]
    fn dense_ticks_draw_as_if_each_were_tried() {
        let mut m = two();
        m.width = 100_000;
        m.tracks[0].own = 0..50_000;
        m.tracks[1].own = 50_000..100_000;
        m.arcs[0].from_x = 30_000;
        let mut seed = 7u64;
        for t in &mut m.tracks {
            t.ticks = (t.own.start..t.own.end)
                .filter(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed.is_multiple_of(5)
                })
                .map(|x| Tick {
                    x,
                    checkpoint: x as i64 / 3,
                })
                .collect();
        }
        for cols in [12, 40, 64] {
            for t in &m.tracks {
                assert_eq!(
                    glyphs(&layout_track(&m, t, cols)),
                    glyphs(&layout_ticks(&m, t, cols, true)),
                    "{cols} columns"
                );
            }
        }
    }

    #[test]
    fn narrow_rails_drop_labels_but_keep_ticks_and_ends() {
        let m = two();
        let a = glyphs(&layout_track(&m, &m.tracks[0], 8));
        assert_eq!(a.chars().count(), 8);
        assert!(a.starts_with('●'));
        assert!(a.contains('✉'));
        assert!(a.contains('┫'));
        let b = glyphs(&layout_track(&m, &m.tracks[1], 8));
        assert!(b.ends_with('◆'), "{b}");
        assert!(b.contains('┗'));
    }

    #[test]
    fn the_arc_joins_target_and_sender() {
        let m = two();
        let row = glyphs(&arc_row(&m, &m.arcs[0], 40));
        let l = row.chars().position(|c| c == '╰').unwrap();
        let r = row.chars().position(|c| c == '╯').unwrap();
        assert_eq!(l, col(4, 20, 40));
        assert_eq!(r, col(8, 20, 40));
        // Too short for the label inside: it goes after the arc…
        assert!(row.contains("╯ ✉ α⚑1 → ⚑1 "), "{row}");
        // …unless there is no room there either.
        let tight = glyphs(&arc_row(&m, &m.arcs[0], 20));
        assert!(!tight.contains('✉'), "{tight}");
        assert!(tight.contains('╰') && tight.contains('╯'));
        let wide = glyphs(&arc_row(&m, &m.arcs[0], 120));
        assert!(wide.contains(" ✉ α⚑1 → ⚑1 "), "{wide}");
    }

    #[test]
    fn compaction_and_clear_have_their_own_marks() {
        let mut m = two();
        m.tracks[1].kind = Some(ForkKind::Compaction);
        let b = glyphs(&layout_track(&m, &m.tracks[1], 20));
        assert!(b.contains('⊜') && !b.contains('┗'), "{b}");
        m.tracks[1].kind = Some(ForkKind::Clear);
        let b = glyphs(&layout_track(&m, &m.tracks[1], 20));
        assert!(b.contains('∅'), "{b}");
    }

    #[test]
    fn the_window_of_tracks_keeps_the_focus() {
        assert_eq!(first_track(4, 6, 0), 0);
        assert_eq!(first_track(10, 4, 9), 6);
        assert_eq!(first_track(10, 4, 2), 2);
        assert_eq!(first_track(10, 0, 2), 0);
    }

    #[test]
    fn subagents_sit_under_their_host_until_room_runs_out() {
        let mut m = two();
        m.subagents.push(crate::worldline::map::SubTrack {
            agent: 1,
            label: "a1 (explore)".into(),
            host_line: 0,
            x: 5,
            world_lines: 1,
            steps: 3,
        });
        assert_eq!(wanted_rows(&m), 3);
        assert_eq!(
            shown(&m, 3, 1),
            vec![MapRow::Track(0), MapRow::Sub(0), MapRow::Track(1)]
        );
        // Too little room: tracks first, the focused one kept.
        assert_eq!(shown(&m, 2, 1), vec![MapRow::Track(0), MapRow::Track(1)]);
        assert_eq!(shown(&m, 1, 0), vec![MapRow::Track(0)]);
        assert_eq!(shown(&m, 1, 1), vec![MapRow::Track(1)]);
    }
}
