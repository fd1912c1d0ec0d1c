//! Drawing (pure over `&App`): header, world-line map, step and record
//! rows, detail pane, footer and overlays. Only the visible rows are laid
//! out; previews and bodies come from the cache `App::prepare` filled.
//! Where things are comes from `geometry`, shared with hit-testing.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use crate::model::{Marker, RecordMeta, Role};
use crate::text::{sanitize_line, truncate, width};
use crate::worldline::{Family, RecordRef};

use super::app::{App, Screen};
use super::detail;
use super::divergence;
use super::session::{LiveState, Overlay, SessionScreen};
use super::theme::line_name;

pub use super::geometry::{picker_list_area, Areas};

/// Draws the screen in front, from prepared state.
pub fn draw(f: &mut Frame, app: &App) {
    match (app.screen(), app.picker(), app.compare_screen()) {
        (Screen::Picker, Some(p), _) => super::picker::draw(f, p, app.theme()),
        (Screen::Compare, _, Some(c)) => super::compare::draw(f, c, app.theme(), app.status()),
        (Screen::Session, ..) => draw_session(f, app.session_screen()),
        _ => {
            let msg = Paragraph::new("loading the session…").style(app.theme().dim());
            f.render_widget(msg, f.area());
        }
    }
}

/// The session screen and its open popup.
fn draw_session(f: &mut Frame, app: &SessionScreen) {
    let a = app.areas();
    draw_header(f, app, a.header);
    super::map::draw(
        f,
        a.map,
        &app.map,
        app.focus,
        app.leap.map(|l| l.line),
        &app.theme,
    );
    if a.graph.height > 0 {
        draw_graph(f, app, a.graph);
    }
    draw_detail(f, app, a.detail, a.wide && !app.expanded);
    draw_footer(f, app, a.footer);
    match &app.overlay {
        Overlay::Help { scroll } => super::popup::draw_help(f, app, *scroll),
        Overlay::Subagents { sel } => super::popup::draw_subagents(f, app, *sel),
        Overlay::Filter { sel } => super::popup::draw_filter_menu(f, app, *sel),
        Overlay::Compose(c) => {
            if let Some(s) = &app.session {
                super::compose::draw(f, s, c, &app.theme);
            }
        }
        Overlay::None => {}
    }
}

fn draw_header(f: &mut Frame, app: &SessionScreen, area: Rect) {
    let t = &app.theme;
    let Some(s) = &app.session else { return };
    let w = area.width as usize;
    let Some(fam) = app.family() else { return };
    let focus = app.focus.min(fam.lines.len().saturating_sub(1));
    let live = match app.live {
        LiveState::Loading => "loading",
        LiveState::Static => "static",
        LiveState::Live => "● live",
        LiveState::Deleted => "deleted",
    };
    // The right side says where we are in the story; it wins over the title.
    let caption = sanitize_line(&app.map.caption(focus), 70);
    let meter = divergence::meter(fam, focus);
    let mut right = vec![Span::styled(caption, t.line(focus).patch(t.bold()))];
    if let Some(m) = &meter {
        right.push(Span::raw("  "));
        right.push(Span::styled(m.clone(), t.dmail()));
    }
    let mut tail = format!("  {live}");
    if app.follow {
        tail.push_str(" · follow");
    }
    if !app.filter.steps() {
        let what = if app.filter.every {
            "every record".to_string()
        } else {
            app.filter.role.label()
        };
        tail.push_str(&format!(" · {what}"));
    }
    right.push(Span::styled(tail, t.dim()));
    let right_w: usize = right.iter().map(|s| width(&s.content)).sum::<usize>() + 1;
    let title = sanitize_line(s.title.as_deref().unwrap_or("(untitled)"), 40);
    let mut left = if app.agent > 0 {
        let meta = s.agents[app.agent].meta.clone().unwrap_or_default();
        vec![
            Span::styled(" subagent ", t.accent()),
            Span::styled(sanitize_line(&meta.agent_id, 20), t.bold()),
            Span::raw(format!(
                "{} · Esc back to {}",
                meta.subagent_type
                    .as_deref()
                    .filter(|k| !k.trim().is_empty())
                    .map(|k| format!(" ({})", sanitize_line(k, 16)))
                    .unwrap_or_default(),
                truncate(&title, 20)
            )),
        ]
    } else {
        let place = app
            .work_dir
            .clone()
            .unwrap_or_else(|| s.dir.display().to_string());
        let id = sanitize_line(&s.id, 8);
        let place = sanitize_line(&place, 400);
        // The id goes first when room is short, then the place's start.
        let fixed = 11 + width(&title);
        let room = w.saturating_sub(right_w + fixed);
        let rest = if width(&id) + width(&place) + 6 <= room {
            format!(" · {id} · {place}")
        } else {
            format!(" · {}", keep_tail(&place, room.saturating_sub(3)))
        };
        vec![
            Span::styled(" worldline ", t.accent()),
            Span::styled(title.clone(), t.bold()),
            Span::raw(rest),
        ]
    };
    // Fit the left part: the place is cut from its start; when even its
    // end doesn't fit, it goes and the title is cut.
    let room = w.saturating_sub(right_w);
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();
    if left_w > room {
        let others: usize = left[..left.len() - 1]
            .iter()
            .map(|s| width(&s.content))
            .sum();
        let keep = room.saturating_sub(others);
        if keep >= 16 {
            if let Some(last) = left.last_mut() {
                last.content = keep_tail(&last.content, keep).into();
            }
        } else {
            left.pop();
            let mut used = 0;
            for sp in left.iter_mut() {
                let cut = truncate(&sp.content, room.saturating_sub(used));
                used += width(&cut);
                sp.content = cut.into();
            }
        }
    }
    let left_w: usize = left.iter().map(|s| width(&s.content)).sum();
    let pad = w.saturating_sub(left_w + right_w) + 1;
    let mut spans = left;
    spans.push(Span::raw(" ".repeat(pad)));
    spans.extend(right);
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The end of a path is what tells sessions apart: cut from the left.
fn keep_tail(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 1;
    for c in s.chars().rev() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max {
            break;
        }
        used += w;
        tail.push(c);
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn draw_graph(f: &mut Frame, app: &SessionScreen, area: Rect) {
    let Some(fam) = app.family() else { return };
    let h = area.height as usize;
    let w = area.width as usize;
    let max_lanes = ((w.saturating_sub(40)) / 2).clamp(1, 8);
    let mut lines = Vec::with_capacity(h);
    for pos in app.list.shown(app.rows.len(), h) {
        lines.push(row_line(app, fam, pos, w, max_lanes));
    }
    if app.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "  (no records yet)",
            app.theme.dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// One drawn row: lanes, the tip label, the checkpoint gutter, a tag, the
/// text and right-hand facts. A step head stands for its whole step.
fn row_line(
    app: &SessionScreen,
    fam: &Family,
    pos: usize,
    w: usize,
    max_lanes: usize,
) -> Line<'static> {
    let t = &app.theme;
    let Some(row) = app.rows.row_at(pos) else {
        return Line::default();
    };
    let Some(r) = app.rows.record_of(row) else {
        return Line::default();
    };
    let Some(meta) = fam.record(r) else {
        return Line::default();
    };
    let covers = app.shown_rows(row);
    let step_head = app.rows.is_step_head(row);
    let line_end = app.rows.line_rows(r.line).end;
    let is_tip = covers.contains(&line_end.saturating_sub(1));
    let head = is_tip && fam.lines.get(r.line).is_some_and(|l| l.current);
    let step = step_head.then(|| {
        super::steps::summarise(
            app.session.as_deref().expect("a family needs a session"),
            fam,
            &app.rows,
            row,
            &app.cache,
        )
    });
    let is_dmail = match &step {
        Some(st) => {
            st.kind == super::steps::StepKind::DMail
                || st.tools.iter().any(|(n, _)| n.starts_with("SendDMail"))
        }
        None => {
            meta.tool_calls().iter().any(|c| c.dmail().is_some())
                || matches!(meta.marker().as_deref(), Some(Marker::DMailInjection(_)))
        }
    };
    let node = if is_dmail {
        '✉'
    } else if head {
        '◆'
    } else if step.is_some() || meta.role().is_message() {
        '●'
    } else {
        '○'
    };
    let selected = pos == app.list.cursor();
    let on_focus = app.on_line(app.focus, r);
    let base = if on_focus { Style::new() } else { t.dim() };
    let mut spans: Vec<Span<'static>> = Vec::new();
    for c in app
        .rows
        .lanes
        .cells_over(covers.clone(), r.line, node, max_lanes)
    {
        let style = match c.line {
            Some(l) if c.glyph == '✉' => t.dmail().patch(t.line(l)),
            Some(l) => t.line(l),
            None => Style::new(),
        };
        spans.push(Span::styled(c.glyph.to_string(), style));
    }
    // Each lane is named at its tip.
    let tip = if is_tip {
        line_name(r.line)
    } else {
        String::new()
    };
    spans.push(Span::styled(
        format!("{tip:<2} "),
        t.line(r.line).patch(t.bold()),
    ));
    let hit = app
        .search
        .hits
        .range(app.rows.record_of(covers.start).unwrap_or(r)..)
        .next()
        .is_some_and(|h| app.rows.row_of(*h).is_some_and(|hr| covers.contains(&hr)));
    let (gutter, tag, tag_style, text, right) = match &step {
        Some(st) => describe_step(app, st),
        None => {
            let (tag, style, text, right) = describe(app, fam, r, meta, pos);
            // Records of an unfolded step sit under it, indented.
            let indent = if app.rows.step_view { "  ·" } else { "" };
            (indent.to_string(), tag, style, text, right)
        }
    };
    // Names a user gave these records (Pi's labels), shown first as `[name]`.
    let text = match label_names(app, covers.clone()) {
        Some(names) => format!("{names} {text}"),
        None => text,
    };
    // Where a fork session leaves (on the source) or arrives (on the fork).
    let right = match fork_mark(app, fam, covers.clone()) {
        Some(m) if right.is_empty() => m,
        Some(m) => format!("{m} {right}"),
        None => right,
    };
    let used: usize = spans.iter().map(|s| width(&s.content)).sum();
    let gutter_cell = format!("{gutter:<4}");
    spans.push(Span::styled(
        gutter_cell.clone(),
        base.patch(t.role(&Role::Checkpoint)),
    ));
    let avail = w.saturating_sub(used + width(&gutter_cell));
    let tag = truncate(&tag, 6);
    let tag_cell = format!("{tag}{}", " ".repeat(7usize.saturating_sub(width(&tag))));
    // The facts on the right (tools, time) win over the preview, up to a point.
    let right = truncate(&right, avail.saturating_sub(7 + 16));
    let text_w = avail.saturating_sub(width(&tag_cell) + width(&right) + 1);
    let text = truncate(&text, text_w);
    let pad = avail.saturating_sub(width(&tag_cell) + width(&text) + width(&right));
    spans.push(Span::styled(
        tag_cell,
        if hit { t.hit() } else { base.patch(tag_style) },
    ));
    spans.push(Span::styled(text, base));
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::styled(right, base.patch(t.dim())));
    let line = Line::from(spans);
    if selected {
        line.style(t.selected())
    } else {
        line
    }
}

/// "⑂ /undo e299ef2f" when a fork session leaves inside `covers`; on a
/// fork, "⑂ copied up to here" at its own fork point.
fn fork_mark(app: &SessionScreen, fam: &Family, covers: std::ops::Range<usize>) -> Option<String> {
    let s = app.session.as_deref()?;
    if app.agent != 0 {
        return None;
    }
    let mut out: Vec<String> = app
        .fork_point_rows()
        .into_iter()
        .filter(|(row, _)| covers.contains(row))
        .map(|(_, k)| {
            let f = &app.map.forks[k];
            format!("⑂ /{} {}", f.kind.as_str(), f.label)
        })
        .collect();
    let own = s
        .forked_from
        .as_ref()
        .and_then(|l| s.fork_point(l))
        .and_then(|r| fam.owner_of(r))
        .and_then(|o| app.rows.row_of(o));
    if own.is_some_and(|row| covers.contains(&row)) {
        out.push("⑂ copied up to here".into());
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// `[name] [other]`: the labels on the records of rows `covers`.
fn label_names(app: &SessionScreen, covers: std::ops::Range<usize>) -> Option<String> {
    let labels = &app.session.as_deref()?.agents.get(app.agent)?.labels;
    if labels.is_empty() {
        return None;
    }
    let names: Vec<String> = covers
        .take(super::steps::MAX_READ * 4)
        .filter_map(|row| app.rows.record_of(row))
        .flat_map(|r| {
            labels
                .iter()
                .filter(move |l| l.at == Some((r.line, r.record)))
                .map(|l| format!("[{}]", sanitize_line(&l.label, 24)))
        })
        .collect();
    (!names.is_empty()).then(|| names.join(" "))
}

/// Gutter, tag, its style, text and right-hand facts of a step row.
fn describe_step(
    app: &SessionScreen,
    st: &super::steps::Step,
) -> (String, String, Style, String, String) {
    use super::steps::StepKind;
    let t = &app.theme;
    let gutter = st.checkpoint.map(|c| format!("⚑{c}")).unwrap_or_default();
    let preview = st
        .lead
        .and_then(|r| app.cache.get_preview(r))
        .unwrap_or("")
        .to_string();
    let (style, text) = match st.kind {
        StepKind::DMail => (
            t.dmail(),
            format!("D-Mail: {}", st.known_text.clone().unwrap_or_default()),
        ),
        StepKind::User => (t.role(&Role::User).patch(t.bold()), preview),
        // Kimi Code's compaction record already says so (`⊜ compacted …`).
        StepKind::Compaction if preview.starts_with('⊜') => (t.accent(), preview),
        StepKind::Compaction => (t.accent(), format!("compacted: {preview}")),
        StepKind::Assistant => (t.role(&Role::Assistant), preview),
        StepKind::System => (t.dim(), preview),
        // Only a checkpoint so far: the step is being written.
        StepKind::Empty => (t.dim(), "…".into()),
    };
    let mut facts: Vec<String> = st
        .tools
        .iter()
        .map(|(n, o)| format!("{n} {}", o.glyph()))
        .collect();
    if facts.len() > 3 {
        let more = facts.len() - 2;
        facts.truncate(2);
        facts.push(format!("+{more}"));
    }
    let mut right = facts.join(" ");
    if let Some(tok) = st.tokens {
        right.push_str(&format!(" {:>5}", short_tokens(tok)));
    }
    if let Some(time) = st.time {
        right.push_str(&format!(" {}", detail::clock(time)));
    }
    if app.is_unfolded_step(st.rows.start) {
        right.push_str(" ▾");
    } else if st.content > 1 {
        right.push_str(" ▸");
    }
    (
        gutter,
        st.kind.tag().into(),
        style,
        text,
        right.trim_start().to_string(),
    )
}

/// Token counts as people read them: 812, 4.4k, 1.2M.
pub fn short_tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Tag, its style, preview text and right-hand facts of a record.
fn describe(
    app: &SessionScreen,
    fam: &Family,
    r: RecordRef,
    meta: &RecordMeta,
    pos: usize,
) -> (String, Style, String, String) {
    let t = &app.theme;
    let preview = || app.cache.get_preview(r).unwrap_or("").to_string();
    let time = app
        .session
        .as_ref()
        .and_then(|_| fam.time(r))
        .map(detail::clock)
        .unwrap_or_default();
    let hidden = if app.rows.step_view {
        0
    } else {
        app.rows.hidden_after(pos)
    };
    let hidden = if hidden > 0 {
        format!(" (+{hidden})")
    } else {
        String::new()
    };
    let with_time = |s: String| {
        let mut out = s;
        if !time.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&time);
        }
        out.push_str(&hidden);
        out
    };
    match (meta.role(), meta.marker().as_deref()) {
        (Role::Checkpoint, _) => (
            format!("⚑ {}", meta.checkpoint().unwrap_or(-1)),
            t.role(&Role::Checkpoint),
            format!(
                "{} {}",
                app.session
                    .as_ref()
                    .map_or("checkpoint", |s| s.tool.checkpoint_word()),
                meta.checkpoint().unwrap_or(-1)
            ),
            with_time(String::new()),
        ),
        (Role::Usage, _) => (
            "Σ".into(),
            t.dim(),
            format!("{} tokens", meta.tokens().unwrap_or(0)),
            with_time(String::new()),
        ),
        (Role::SystemPrompt, _) => ("sys".into(), t.dim(), preview(), with_time(String::new())),
        (_, Some(Marker::CheckpointNote(n))) => (
            "user".into(),
            t.dim(),
            format!("CHECKPOINT {n} (note)"),
            with_time(String::new()),
        ),
        (_, Some(Marker::DMailInjection(msg))) => {
            let cp = fam
                .lines
                .get(r.line)
                .and_then(|l| l.fork.as_ref()?.checkpoint)
                .map_or("?".into(), |c| c.to_string());
            (
                "D-Mail".into(),
                t.dmail(),
                sanitize_line(msg, 200),
                with_time(format!("→ ⚑{cp}")),
            )
        }
        (Role::Assistant, _) => {
            let mut tools: Vec<String> = Vec::new();
            for c in &meta.tool_calls() {
                match c.dmail() {
                    Some(d) => {
                        let fate = fam
                            .attempts
                            .iter()
                            .find(|a| a.call == r && c.is(&a.tool_call_id))
                            .map(|a| match (a.accepted, a.caused) {
                                (Some(true), Some(k)) => format!(" ⇒{}", line_name(k)),
                                (Some(false), _) => " ✗".into(),
                                _ => String::new(),
                            })
                            .unwrap_or_default();
                        tools.push(format!("SendDMail → ⚑{}{fate}", d.checkpoint_id));
                    }
                    None => tools.push(sanitize_line(c.name(), 24)),
                }
            }
            (
                "asst".into(),
                t.role(&Role::Assistant),
                preview(),
                with_time(tools.join(", ")),
            )
        }
        (Role::Tool, marker) => {
            let extra = match marker {
                Some(Marker::DMailResult(Ok(()))) => "D-Mail accepted".into(),
                Some(Marker::DMailResult(Err(_))) => "D-Mail refused".into(),
                Some(Marker::AgentResult(id)) => format!("⇲ {}", sanitize_line(id, 16)),
                _ => String::new(),
            };
            (
                "tool".into(),
                t.role(&Role::Tool),
                preview(),
                with_time(extra),
            )
        }
        (role, _) => (
            sanitize_line(detail::role_name(role), 6),
            t.role(role),
            preview(),
            with_time(String::new()),
        ),
    }
}

fn draw_detail(f: &mut Frame, app: &SessionScreen, area: Rect, side: bool) {
    let t = &app.theme;
    let block = if app.expanded {
        Block::default()
            .borders(Borders::TOP)
            .title(" record (Enter/Esc back, PgUp/PgDn scroll) ")
    } else if side {
        Block::default().borders(Borders::LEFT)
    } else {
        Block::default().borders(Borders::TOP)
    };
    let (Some(s), Some(r)) = (&app.session, app.detail_record()) else {
        f.render_widget(block, area);
        return;
    };
    let lines = detail::lines(s, r, &app.cache, t);
    let p = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((app.detail_scroll, 0));
    f.render_widget(p, area);
}

fn draw_footer(f: &mut Frame, app: &SessionScreen, area: Rect) {
    let t = &app.theme;
    let line = if let Some(q) = &app.search.input {
        Line::from(vec![
            Span::styled("/", t.accent()),
            Span::raw(sanitize_line(q, area.width as usize)),
            Span::styled("▏", t.accent()),
            Span::styled("  Enter search · Esc cancel", t.dim()),
        ])
    } else if app.search.running {
        let pct = (app.search.scanned * 100)
            .checked_div(app.search.total)
            .unwrap_or(0);
        let text = format!(
            "searching /{} … {pct}% · {} · Esc stops",
            sanitize_line(&app.search.query, 30),
            crate::text::count(app.search.hits.len() as u64, "hit")
        );
        with_tail(text, area.width as usize, t)
    } else if let Some(msg) = &app.status {
        with_tail(msg.clone(), area.width as usize, t)
    } else if app.expanded {
        Line::from(Span::styled(
            " PgUp/PgDn scroll  Esc/Enter back  j/k next record  ? help  q quit",
            t.dim(),
        ))
    } else {
        Line::from(Span::styled(
            super::keys::footer_where(area.width as usize, |b| app.offers(b)).0,
            t.dim(),
        ))
    };
    f.render_widget(Paragraph::new(line), area);
}

/// A message in the footer, cut to leave room for `? help  q quit` (or just
/// `? q`) at the right: however long the message, the way to help and out
/// stays on screen.
fn with_tail(msg: String, width: usize, t: &super::theme::Theme) -> Line<'static> {
    let full = super::keys::FOOTER_TAIL;
    // A message that needs the room keeps the keys in their shortest form.
    let tail = if crate::text::width(&msg) + crate::text::width(full) + 3 > width {
        "? q"
    } else {
        full
    };
    let room = width.saturating_sub(crate::text::width(tail) + 3);
    let text = sanitize_line(&msg, room);
    let pad = width.saturating_sub(crate::text::width(&text) + crate::text::width(tail) + 1);
    Line::from(vec![
        Span::styled(format!(" {text}"), t.accent()),
        Span::raw(" ".repeat(pad.saturating_sub(1))),
        Span::styled(tail, t.dim()),
    ])
}

pub(super) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}
