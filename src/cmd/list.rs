//! `worldline list`: the sessions of this directory (or all), newest first,
//! each fork under the session it was made from.

use worldline::export::{format_time, human_size};
use worldline::sources::lookup::{list_checked, Locator};
use worldline::text::{json_for_terminal, sanitize_line, sanitize_message};

use super::args::ListArgs;
use super::out;

pub fn list(args: &ListArgs) -> anyhow::Result<()> {
    let loc = Locator::from_env();
    let (rows, warnings) = list_checked(&loc, args.all);
    // Side files that could not be read are said, not silently dropped.
    for w in &warnings {
        eprintln!(
            "worldline: warning: {}: {}",
            sanitize_message(&w.file),
            sanitize_message(&w.message)
        );
    }
    if args.json {
        let doc = serde_json::to_string_pretty(&rows)?;
        return out::print(&(json_for_terminal(doc) + "\n"));
    }
    if rows.is_empty() {
        let scope = if args.all {
            loc.everywhere()
        } else {
            loc.here()
        };
        eprintln!(
            "no sessions under {}{}",
            sanitize_message(&scope),
            if args.all { "" } else { " (try --all)" }
        );
        return Ok(());
    }
    let mut text = format!(
        "{:<44}  {:<9}  {:>5}  {:>4}  {:<16}  {:>9}  {:<24}  WORK DIR\n",
        "ID", "TOOL", "LINES", "SUBS", "MODIFIED (UTC)", "SIZE", "TITLE"
    );
    for r in rows {
        // A fork is indented under its source (the list puts it there).
        let id = match (&r.forked_from, &r.fork_kind) {
            (Some(_), Some(kind)) => format!("└ {kind} {}", r.id),
            _ => r.id.clone(),
        };
        text.push_str(&format!(
            "{:<44}  {:<9}  {:>5}  {:>4}  {:<16}  {:>9}  {:<24}  {}\n",
            sanitize_line(&id, 60),
            r.tool,
            r.world_lines,
            r.subagents,
            format_time(r.modified as f64),
            human_size(r.size),
            sanitize_line(&r.title.unwrap_or_default(), 24),
            sanitize_line(&r.work_dir.unwrap_or_default(), 200)
        ));
    }
    out::print(&text)
}
