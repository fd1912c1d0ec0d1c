//! `worldline tree`: a session's divergence tree in one of the printed forms.

use worldline::export::{self, json};
use worldline::sources::lookup::{resolve, Locator};
use worldline::sources::Reading;
use worldline::text::json_for_terminal;
use worldline::worldline::compare::find_line;
use worldline::worldline::names::line_name;
use worldline::worldline::Session;

use super::args::{TreeArgs, TreeFormat};
use super::out;

pub fn tree(args: &TreeArgs) -> anyhow::Result<()> {
    let path = resolve(args.session.as_deref(), &Locator::from_env())?;
    // JSON carries no record times: it skips reading the wire for them.
    let reading = Reading {
        times: args.format != TreeFormat::Json,
    };
    if args.line.is_some() && args.format != TreeFormat::Markdown {
        return Err(worldline::Error::Usage("--line goes with --format markdown".into()).into());
    }
    let s = Session::load_with(&path, reading)?;
    let text = match args.format {
        TreeFormat::Text => export::text_tree(&s),
        // JSON escapes only C0 controls; DEL, C1 and bidi controls too.
        TreeFormat::Json => {
            json_for_terminal(serde_json::to_string_pretty(&json::session_json(&s))?) + "\n"
        }
        TreeFormat::Dot => export::dot(&s),
        TreeFormat::Mermaid => export::mermaid(&s),
        TreeFormat::Html => export::html(&s),
        TreeFormat::Svg => export::map_svg(&s, &export::SvgOptions::standalone()),
        TreeFormat::Markdown => {
            let line = match &args.line {
                Some(name) => Some(find_line(s.main(), name).ok_or_else(|| {
                    worldline::Error::Usage(format!(
                        "no world line {name:?} (the session has {})",
                        (0..s.main().lines.len())
                            .map(line_name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?),
                None => None,
            };
            export::transcript::markdown(&s, line)
        }
    };
    let printed = out::print(&text);
    // The process ends here: the OS takes the session back faster than
    // freeing a million records one by one would.
    std::mem::forget(s);
    printed
}
