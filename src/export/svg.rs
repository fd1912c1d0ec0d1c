//! `tree --format svg`: the TUI's world-line map as a picture. It draws the
//! same pure model (`worldline::map::Map`): one track per world line with
//! its Greek name and colour, checkpoints as ticks, forks where they leave,
//! D-Mail arcs from the sending call to the target checkpoint with the
//! message (full text in a `<title>` tooltip), refused D-Mails as marked
//! stubs, compaction and `/clear` marks, subagents as short tracks under the
//! call that ran them (and, when they have world lines of their own, their
//! own map below), `/fork` and `/undo` sessions under their fork point, and
//! times and token totals where the files have them.
//!
//! Written with plain `write!`s, not an SVG crate: the picture needs a
//! dozen element kinds, every string goes through `markup::esc_line` either
//! way, and plain writes keep the output byte-stable for snapshots and free
//! of a dependency. Self-contained (no fonts, scripts or references, not
//! even `url(#…)` markers), sized to its content, and drawn on its own card
//! whose colours follow `prefers-color-scheme`, so it reads on light and
//! dark pages alike (renderers without media queries get the light card).

use std::fmt::Write;

use super::markup::esc_line;
use super::story::{human_tokens, line_colour, wrap, Story, DMAIL_COLOUR, ERROR_COLOUR};
use crate::text::width;
use crate::worldline::map::{DMailArc, Map, MarkKind, Order, Outcome, Track, TrackState};
use crate::worldline::Session;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SvgOptions {
    /// Each track links to `#a0-l{i}` (the HTML report's sections).
    pub links: bool,
    /// Start with an XML declaration (a file of its own).
    pub standalone: bool,
}

impl SvgOptions {
    pub fn standalone() -> SvgOptions {
        SvgOptions {
            links: false,
            standalone: true,
        }
    }

    pub fn embedded() -> SvgOptions {
        SvgOptions {
            links: true,
            standalone: false,
        }
    }
}

const PAD: f64 = 16.0;
const ROW: f64 = 44.0;
const SUB_ROW: f64 = 30.0;
/// The width the tracks take at most (records are scaled to it).
const TRACKS_MAX: f64 = 760.0;
const UNIT_MAX: f64 = 18.0;
/// Columns of an arc's wrapped message, and of a track's reason.
const MESSAGE_COLS: usize = 72;
const REASON_COLS: usize = 80;

const STYLE: &str = "
.wl-card { fill: #ffffff; stroke: #d0d7de; }
.wl-text { fill: #1f2328; }
.wl-muted { fill: #656d76; }
.wl-rule { stroke: #8c959f; }
@media (prefers-color-scheme: dark) {
  .wl-card { fill: #0d1117; stroke: #30363d; }
  .wl-text { fill: #e6edf3; }
  .wl-muted { fill: #8d96a0; }
}
text { font-family: system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif; }
";

/// Approximate width of `s` in pixels at `size`: terminal columns are a
/// fair proxy (wide glyphs count twice).
fn text_px(s: &str, size: f64) -> f64 {
    width(s) as f64 * size * 0.6
}

fn fmt(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// Where everything goes. x is the map's written order, scaled per track:
/// each track's own records get their share of the width, but at least
/// `MIN_SEGMENT`, so a short world line beside a 600-record one still
/// shows its ticks.
struct Layout {
    left: f64,
    /// Per non-empty track in x order: first x, one past the last, left
    /// edge in pixels, pixels per record.
    segments: Vec<(usize, usize, f64, f64)>,
    top: f64,
    right: f64,
}

/// The narrowest a non-empty track is drawn.
const MIN_SEGMENT: f64 = 120.0;

impl Layout {
    fn new(map: &Map, left: f64, top: f64) -> Layout {
        let unit = (TRACKS_MAX / map.width.max(1) as f64).min(UNIT_MAX);
        let mut runs: Vec<(usize, usize)> = map
            .tracks
            .iter()
            .map(|t| (t.own.start, t.own.end))
            .collect();
        runs.sort_unstable();
        let mut segments = Vec::with_capacity(runs.len());
        let mut px = left;
        // Empty tracks take no width; their x falls at the previous end.
        for (a, b) in runs.into_iter().filter(|r| r.0 < r.1) {
            let len = (b - a) as f64;
            let w = (len * unit).max(MIN_SEGMENT.min(len * UNIT_MAX));
            segments.push((a, b, px, w / len));
            px += w;
        }
        Layout {
            left,
            segments,
            top,
            right: px,
        }
    }

    /// Pixel of position `x` (fractional: `x + 0.5` is a record's centre).
    fn px(&self, x: f64) -> f64 {
        let i = self
            .segments
            .partition_point(|s| s.0 as f64 <= x)
            .saturating_sub(1);
        match self.segments.get(i) {
            Some(&(a, _, start, per)) => start + (x - a as f64) * per,
            None => self.left,
        }
    }

    /// Centre of record `x`.
    fn cx(&self, x: usize) -> f64 {
        self.px(x as f64 + 0.5)
    }

    /// Left edge of record `x`; the right edge of a track is `ex(end)` on
    /// its own segment, see `track_end`.
    fn ex(&self, x: usize) -> f64 {
        self.px(x as f64)
    }

    /// Right edge of the run ending at `end` (exclusive).
    fn track_end(&self, end: usize) -> f64 {
        match self.segments.iter().find(|s| s.1 == end) {
            Some(&(a, b, start, per)) => start + (b - a) as f64 * per,
            None => self.ex(end),
        }
    }

    fn ty(&self, line: usize) -> f64 {
        self.top + line as f64 * ROW + 22.0
    }
}

/// The full SendDMail message of an arc (the map keeps a one-line cut).
fn full_message(family: &crate::worldline::Family, order: &Order, a: &DMailArc) -> String {
    family
        .attempts
        .iter()
        .find(|t| {
            t.call.line == a.from_line
                && order.x_of(t.call.line, t.call.record) == Some(a.from_x)
                && t.checkpoint_id == a.checkpoint
        })
        .map(|t| t.message.clone())
        .unwrap_or_else(|| a.message.clone())
}

/// `⇲ subagent coder: explore repo`, or its id where the session records
/// no type or description (never `?`).
fn subagent_label(m: &super::story::SubagentStory) -> String {
    let desc = m.description.as_deref().filter(|d| !d.trim().is_empty());
    match (m.kind.as_deref().filter(|k| !k.trim().is_empty()), desc) {
        (Some(k), Some(d)) => format!("⇲ subagent {k}: {d}"),
        (Some(k), None) => format!("⇲ subagent {k}: {}", m.agent_id),
        (None, Some(d)) => format!("⇲ subagent {}: {d}", m.agent_id),
        (None, None) => format!("⇲ subagent {}", m.agent_id),
    }
}

fn state_word(t: &Track) -> &'static str {
    t.state.as_str()
}

/// `current · 4 steps · 1.1k tok` (a step: a checkpoint, or a Kimi Code turn).
fn counts(t: &Track) -> String {
    let mut s = format!(
        "{} · {} step{}",
        state_word(t),
        t.steps,
        if t.steps == 1 { "" } else { "s" }
    );
    if let Some(tok) = t.tokens {
        let _ = write!(s, " · {} tok", human_tokens(tok));
    }
    s
}

pub fn map_svg(s: &Session, opts: &SvgOptions) -> String {
    let map = Map::of_session(s);
    let story = Story::of(s);
    let lines = &story.main().lines;

    let name_w = map
        .tracks
        .iter()
        .map(|t| text_px(&t.name, 15.0))
        .fold(12.0, f64::max);
    let l = Layout::new(&map, PAD + name_w + 14.0, PAD + 46.0);
    let mut body = String::new();
    let mut widest = l.right;

    // Header: title, then what happened in numbers.
    let title = story
        .title
        .clone()
        .unwrap_or_else(|| format!("session {}", story.session_id));
    let title = crate::text::sanitize_line(&title, 90);
    let _ = writeln!(
        body,
        "<text class=\"wl-text\" x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"700\">{}</text>",
        fmt(PAD),
        fmt(PAD + 16.0),
        esc_line(&title)
    );
    let refused = map
        .arcs
        .iter()
        .filter(|a| matches!(a.outcome, Outcome::Refused(_)))
        .count();
    let mut summary = format!(
        "{} world line{} · {} D-Mail{}",
        map.tracks.len(),
        if map.tracks.len() == 1 { "" } else { "s" },
        map.arcs.len(),
        if map.arcs.len() == 1 { "" } else { "s" },
    );
    if refused > 0 {
        let _ = write!(summary, " ({refused} refused)");
    }
    if !map.subagents.is_empty() {
        let n = map.subagents.len();
        let _ = write!(summary, " · {n} subagent{}", if n == 1 { "" } else { "s" });
        let theirs: usize = s.agents[1..].iter().map(|a| a.family.attempts.len()).sum();
        if theirs > 0 {
            let _ = write!(
                summary,
                " ({})",
                crate::text::count(theirs as u64, "D-Mail")
            );
        }
    }
    if !map.forks.is_empty() {
        let n = map.forks.len() as u64;
        let _ = write!(
            summary,
            " · {} made from it",
            crate::text::count(n, "session")
        );
    }
    let lo = lines.iter().filter_map(|l| l.start).reduce(f64::min);
    let hi = lines.iter().filter_map(|l| l.end).reduce(f64::max);
    if let (Some(lo), Some(hi)) = (lo, hi) {
        let _ = write!(
            summary,
            " · {} UTC, {:.1} s",
            super::format_time(lo),
            hi - lo
        );
    }
    let _ = writeln!(
        body,
        "<text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
        fmt(PAD),
        fmt(PAD + 34.0),
        esc_line(&summary)
    );
    widest = widest
        .max(PAD + text_px(&title, 15.0) * 1.05)
        .max(PAD + text_px(&summary, 11.0));

    let (right, mut y) = section(&mut body, s, 0, &map, &story, &l, opts);
    widest = widest.max(right);
    // A subagent with world lines of its own (its D-Mails to its own past)
    // gets its own map under the main one, as the TUI shows it inside.
    for (k, a) in s.agents.iter().enumerate().skip(1) {
        if a.family.lines.len() < 2 && a.family.attempts.is_empty() {
            continue;
        }
        let sub_map = Map::of_family(&a.family, &Order::of(&a.family));
        let label = story
            .agents
            .get(k)
            .and_then(|st| st.subagent.as_ref())
            .map(subagent_label)
            .unwrap_or_else(|| format!("⇲ subagent {k}"));
        let label = crate::text::sanitize_line(&label, 90);
        y += 14.0;
        let _ = writeln!(
            body,
            "<text class=\"wl-text\" x=\"{}\" y=\"{}\" font-size=\"13\" font-weight=\"700\">{}</text>",
            fmt(PAD),
            fmt(y + 12.0),
            esc_line(&label)
        );
        widest = widest.max(PAD + text_px(&label, 13.0) * 1.05);
        let sl = Layout::new(&sub_map, l.left, y + 20.0);
        let (right, bottom) = section(&mut body, s, k, &sub_map, &story, &sl, opts);
        widest = widest.max(right);
        y = bottom;
    }

    let w = (widest + PAD).ceil();
    let h = (y + PAD).ceil();
    let mut out = String::with_capacity(body.len() + 1024);
    if opts.standalone {
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    }
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"world-line map: {}\">",
        esc_line(&title)
    );
    let _ = writeln!(
        out,
        "<title>{} · world lines</title>\n<style>{STYLE}</style>",
        esc_line(&title)
    );
    let _ = writeln!(
        out,
        "<rect class=\"wl-card\" x=\"0.5\" y=\"0.5\" width=\"{}\" height=\"{}\" rx=\"8\"/>",
        w - 1.0,
        h - 1.0
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// One agent's map drawn with layout `l`: its tracks, compaction and
/// `/clear` marks, subagents and `/fork` sessions as short tracks under
/// the call or fork point, and a band per D-Mail. Returns the right edge
/// and the bottom of what it drew.
fn section(
    body: &mut String,
    s: &Session,
    agent: usize,
    map: &Map,
    story: &Story,
    l: &Layout,
    opts: &SvgOptions,
) -> (f64, f64) {
    let Some(family) = s.agents.get(agent).map(|a| &a.family) else {
        return (l.right, l.top);
    };
    let order = Order::of(family);
    let lines: &[super::story::LineStory] = story.agents.get(agent).map_or(&[], |a| &a.lines);
    let mut widest = l.right;
    for t in &map.tracks {
        widest = widest.max(track(body, l, map, t, lines, agent, opts));
    }
    for m in &map.marks {
        let (glyph, what) = match m.kind {
            MarkKind::Compaction => ("⊜", "compaction: the context was summarised"),
            MarkKind::Clear => ("∅", "/clear: a fresh start"),
        };
        let (x, y) = (l.cx(m.x), l.ty(m.line));
        let colour = line_colour(m.line);
        let _ = writeln!(
            body,
            "<g><title>{}</title><circle cx=\"{}\" cy=\"{}\" r=\"7\" class=\"wl-card\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{colour}\">{glyph}</text></g>",
            esc_line(what),
            fmt(x),
            fmt(y),
            fmt(x),
            fmt(y + 4.0),
        );
    }

    // Names users gave entries (Pi's labels): `[name]` under the line.
    for lb in &map.labels {
        let (x, y) = (l.cx(lb.x), l.ty(lb.line));
        let colour = line_colour(lb.line);
        let _ = writeln!(
            body,
            "<g><title>label: {}</title><rect x=\"{}\" y=\"{}\" width=\"5\" height=\"5\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"{colour}\">[{}]</text></g>",
            esc_line(&lb.text),
            fmt(x - 2.5),
            fmt(y - 2.5),
            fmt(x),
            fmt(y + 16.0),
            esc_line(&lb.text),
        );
    }

    let mut y = l.top + map.tracks.len() as f64 * ROW;
    for sub in &map.subagents {
        let agent = story.agents.get(sub.agent);
        let meta = agent.and_then(|a| a.subagent.as_ref());
        let label = match meta {
            Some(m) => subagent_label(m),
            None => format!("⇲ subagent {}", sub.label),
        };
        let label = crate::text::sanitize_line(&label, 70);
        let detail = format!(
            "{} world line{} · {} step{}",
            sub.world_lines,
            if sub.world_lines == 1 { "" } else { "s" },
            sub.steps,
            if sub.steps == 1 { "" } else { "s" }
        );
        let x0 = l.cx(sub.x);
        let ty = y + 14.0;
        let len = (sub.steps.max(1) as f64 * 14.0).clamp(28.0, 160.0);
        let colour = "#808080";
        let link = agent
            .filter(|_| opts.links)
            .map(|a| format!("<a href=\"#a{}-l0\">", a.index));
        body.push_str(link.as_deref().unwrap_or("<g>"));
        let _ = writeln!(
            body,
            "<title>{} · {}</title>\
             <path d=\"M{},{} V{}\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\" fill=\"none\"/>\
             <path d=\"M{},{} H{}\" stroke=\"{colour}\" stroke-width=\"3\" stroke-linecap=\"round\"/>\
             <text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\
             <text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>",
            esc_line(&label),
            esc_line(&detail),
            fmt(x0),
            fmt(l.ty(sub.host_line) + 4.0),
            fmt(ty),
            fmt(x0),
            fmt(ty),
            fmt(x0 + len),
            fmt(x0 + len + 8.0),
            fmt(ty + 4.0),
            esc_line(&label),
            fmt(x0 + len + 8.0),
            fmt(ty + 16.0),
            esc_line(&detail),
        );
        body.push_str(if link.is_some() { "</a>\n" } else { "</g>\n" });
        widest = widest.max(x0 + len + 8.0 + text_px(&label, 11.0));
        y += SUB_ROW;
    }
    // Sessions made from this one by `/fork` or `/undo`, as the TUI and the
    // text tree show them: a short dotted track from the fork point.
    for fk in &map.forks {
        // The dotted elbow is the mark (⑂ is missing from common fonts).
        let text = fk.text();
        let label = crate::text::sanitize_line(text.trim_start_matches("⑂ "), 90);
        let x0 = l.cx(fk.x);
        let ty = y + 14.0;
        let colour = line_colour(fk.host_line);
        let _ = writeln!(
            body,
            "<g><title>{}</title>\
             <path d=\"M{},{} V{} H{}\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\" fill=\"none\"/>\
             <text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"11\">{}</text></g>",
            esc_line(&label),
            fmt(x0),
            fmt(l.ty(fk.host_line) + 4.0),
            fmt(ty),
            fmt(x0 + 24.0),
            fmt(x0 + 30.0),
            fmt(ty + 4.0),
            esc_line(&label),
        );
        widest = widest.max(x0 + 30.0 + text_px(&label, 11.0));
        y += SUB_ROW;
    }

    // D-Mails: each in its own band under the map, joined to its sender
    // and (when it landed or its checkpoint is on the map) its target.
    y += 6.0;
    for a in &map.arcs {
        let full = full_message(family, &order, a);
        let (band, right) = arc(body, l, map, a, &full, y);
        widest = widest.max(right);
        y += band;
    }

    (widest, y)
}

/// One track: name, fork elbow, line, ticks, head and the words on the
/// right. Returns the right edge of what it drew.
fn track(
    out: &mut String,
    l: &Layout,
    map: &Map,
    t: &Track,
    lines: &[super::story::LineStory],
    agent: usize,
    opts: &SvgOptions,
) -> f64 {
    let colour = line_colour(t.colour);
    let y = l.ty(t.line);
    let x0 = l.ex(t.own.start);
    let x1 = l.track_end(t.own.end).max(x0 + 2.0);
    let story = lines.get(t.line);
    let mut tip = format!("world line {} · {}", t.name, t.file);
    if let Some(st) = story {
        let _ = write!(tip, " · {} · {}", st.checkpoint_range(), st.counts());
        if let (Some(a), Some(b)) = (st.start, st.end) {
            let _ = write!(
                tip,
                " · from {} UTC for {:.1} s",
                super::format_clock(a),
                b - a
            );
        }
    }
    let _ = write!(tip, " · {}", t.reason);
    if opts.links {
        let _ = write!(out, "<a href=\"#a{agent}-l{}\">", t.line);
    } else {
        out.push_str("<g>");
    }
    let _ = write!(out, "<title>{}</title>", esc_line(&tip));
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"700\" fill=\"{colour}\">{}</text>",
        fmt(PAD),
        fmt(y + 5.0),
        esc_line(&t.name)
    );
    // The elbow from the fork point on the origin's track.
    match (t.origin, t.fork_x) {
        (Some(o), Some(fx)) if o != t.line => {
            let (fx, fy) = (l.cx(fx), l.ty(o));
            let r = (x0 - fx).clamp(0.0, 8.0);
            let _ = write!(
                out,
                "<path d=\"M{},{} V{} Q{},{} {},{} H{}\" stroke=\"{colour}\" stroke-width=\"2\" fill=\"none\"/>",
                fmt(fx),
                fmt(fy),
                fmt(y - r),
                fmt(fx),
                fmt(y),
                fmt(fx + r),
                fmt(y),
                fmt(x0)
            );
        }
        _ => {
            let _ = write!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{colour}\"/>",
                fmt(x0),
                fmt(y)
            );
        }
    }
    let _ = write!(
        out,
        "<path d=\"M{},{} H{}\" stroke=\"{colour}\" stroke-width=\"4\" stroke-linecap=\"round\"/>",
        fmt(x0),
        fmt(y),
        fmt(x1)
    );
    // Ticks; a label only where it does not run into the previous one.
    let mut free_from = f64::MIN;
    for k in &t.ticks {
        let x = l.cx(k.x);
        let _ = write!(
            out,
            "<path d=\"M{},{} V{}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
            fmt(x),
            fmt(y - 6.0),
            fmt(y + 6.0)
        );
        let label = format!("⚑{}", k.checkpoint);
        let w = text_px(&label, 10.0);
        if x - w / 2.0 >= free_from {
            let _ = write!(
                out,
                "<text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                fmt(x),
                fmt(y - 9.0),
                esc_line(&label)
            );
            free_from = x + w / 2.0 + 3.0;
        }
    }
    // The head: ◆ for the current line, a bar for one left behind.
    if t.state == TrackState::Current {
        let _ = write!(
            out,
            "<path d=\"M{},{} l6,6 l-6,6 l-6,-6 z\" fill=\"{colour}\"/>",
            fmt(x1),
            fmt(y - 6.0)
        );
    } else {
        let _ = write!(
            out,
            "<path d=\"M{},{} V{}\" stroke=\"{colour}\" stroke-width=\"3\"/>",
            fmt(x1 + 1.0),
            fmt(y - 7.0),
            fmt(y + 7.0)
        );
    }
    // Landing: the ✉ at the start of a line a D-Mail made.
    if map.arc_into(t.line).is_some() {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{DMAIL_COLOUR}\">✉</text>",
            fmt(x0 + 2.0),
            fmt(y + 16.0)
        );
    }
    let words_x = l.right.max(x1) + 16.0;
    let head = format!("{} · {}", t.file, counts(t));
    let reason = crate::text::truncate(&t.reason, REASON_COLS);
    let _ = write!(
        out,
        "<text class=\"wl-text\" x=\"{}\" y=\"{}\" font-size=\"11\"><tspan font-weight=\"700\" fill=\"{colour}\">{}</tspan> {}</text>",
        fmt(words_x),
        fmt(y - 1.0),
        esc_line(&t.name),
        esc_line(&head)
    );
    let _ = write!(
        out,
        "<text class=\"wl-muted\" x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>",
        fmt(words_x),
        fmt(y + 12.0),
        esc_line(&reason)
    );
    out.push_str(if opts.links { "</a>\n" } else { "</g>\n" });
    words_x + text_px(&format!("{} {head}", t.name), 11.0).max(text_px(&reason, 10.0))
}

/// One D-Mail's band: a dashed line down from the sending call, along the
/// band, and up to the target checkpoint with an arrowhead (a stub with ✗
/// for a refused one), and its words. Returns (band height, right edge).
fn arc(out: &mut String, l: &Layout, map: &Map, a: &DMailArc, full: &str, y: f64) -> (f64, f64) {
    let name = |i: usize| crate::worldline::names::line_name(i);
    let from = match a.from_checkpoint {
        Some(c) => format!("{}⚑{c}", name(a.from_line)),
        None => name(a.from_line),
    };
    let (colour, what) = match &a.outcome {
        Outcome::Landed(k) => (
            DMAIL_COLOUR,
            format!(
                "✉ D-Mail {from} → ⚑{} · made world line {}",
                a.checkpoint,
                name(*k)
            ),
        ),
        Outcome::Refused(why) => (
            ERROR_COLOUR,
            format!("✗ D-Mail {from} → ⚑{} refused: {why}", a.checkpoint),
        ),
        Outcome::Pending => (
            "#808080",
            format!("✉ D-Mail {from} → ⚑{} · pending", a.checkpoint),
        ),
    };
    let msg = wrap(full, MESSAGE_COLS, 2);
    let band = 22.0 + 13.0 * msg.len() as f64;
    let base = y + 10.0;
    let sx = l.cx(a.from_x);
    let sy = l.ty(a.from_line) + 6.0;
    let _ = write!(
        out,
        "<g><title>{} — {}</title>",
        esc_line(&what),
        esc_line(full)
    );
    let target = match a.outcome {
        Outcome::Refused(_) => None,
        _ => a.to_x.map(|tx| {
            let ty = map.track_at(tx).map_or(l.ty(a.from_line), |t| l.ty(t.line)) + 6.0;
            (l.cx(tx), ty)
        }),
    };
    let text_x = match target {
        Some((tx, ty)) => {
            let _ = write!(
                out,
                "<path d=\"M{},{} V{} H{} V{}\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" fill=\"none\"/>\
                 <path d=\"M{},{} l-4,7 h8 z\" fill=\"{colour}\"/>",
                fmt(sx),
                fmt(sy),
                fmt(base),
                fmt(tx),
                fmt(ty + 6.0),
                fmt(tx),
                fmt(ty),
            );
            tx.min(sx) + 4.0
        }
        None => {
            let _ = write!(
                out,
                "<path d=\"M{},{} V{} h-14\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" fill=\"none\"/>\
                 <text x=\"{}\" y=\"{}\" font-size=\"12\" font-weight=\"700\" text-anchor=\"middle\" fill=\"{colour}\">✗</text>",
                fmt(sx),
                fmt(sy),
                fmt(base),
                fmt(sx - 18.0),
                fmt(base + 4.0),
            );
            sx + 6.0
        }
    };
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" font-weight=\"700\" fill=\"{colour}\">{}</text>",
        fmt(text_x),
        fmt(base + 13.0),
        esc_line(&what)
    );
    let mut right = text_x + text_px(&what, 11.0) * 1.05;
    for (i, m) in msg.iter().enumerate() {
        let line = if i == 0 { format!("“{m}") } else { m.clone() };
        let line = if i + 1 == msg.len() {
            format!("{line}”")
        } else {
            line
        };
        let _ = write!(
            out,
            "<text class=\"wl-text\" x=\"{}\" y=\"{}\" font-size=\"11\" font-style=\"italic\">{}</text>",
            fmt(text_x),
            fmt(base + 26.0 + 13.0 * i as f64),
            esc_line(&line)
        );
        right = right.max(text_x + text_px(&line, 11.0));
    }
    out.push_str("</g>\n");
    (band, right)
}
