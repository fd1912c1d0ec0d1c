//! `worldline compare`: two world lines of a session after their fork, as
//! text, JSON or Markdown.

use worldline::export::compare as print;
use worldline::sources::lookup::{resolve, Locator};
use worldline::text::json_for_terminal;
use worldline::worldline::compare::{compare as compare_lines, default_pair, find_pair};
use worldline::worldline::Session;
use worldline::Error;

use super::args::{CompareArgs, CompareFormat};
use super::out;

pub fn compare(args: &CompareArgs) -> anyhow::Result<()> {
    let path = resolve(args.session.as_deref(), &Locator::from_env())?;
    let s = Session::load(&path)?;
    let usage = |e: worldline::worldline::compare::CompareError| Error::Usage(e.to_string());
    let f = s.main();
    let (a, b) = match (&args.a, &args.b) {
        (Some(a), Some(b)) => find_pair(f, a, b).map_err(usage)?,
        // One named: it and its parent.
        (Some(one), None) | (None, Some(one)) => {
            let (x, _) = find_pair(f, one, one).map_err(usage)?;
            default_pair(f, Some(x)).map_err(usage)?
        }
        (None, None) => default_pair(f, None).map_err(usage)?,
    };
    let c = compare_lines(&s, 0, a, b).map_err(usage)?;
    let text = match args.format {
        CompareFormat::Text => print::text(&s, &c),
        CompareFormat::Json => {
            json_for_terminal(serde_json::to_string_pretty(&print::json(&s, &c))?) + "\n"
        }
        CompareFormat::Markdown => print::markdown(&s, &c),
    };
    out::print(&text)
}
