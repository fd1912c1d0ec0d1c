//! An edit or write tool call in the detail pane as a coloured unified
//! diff ([`crate::export::diff`]): the file and `+n −m`, then the hunks,
//! additions green, removals red; a long diff folds after [`MAX_LINES`].

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::export::diff::{self, Kind};

use super::theme::Theme;

/// Diff lines shown per file in the detail pane.
pub const MAX_LINES: usize = 120;

/// Pushes the diffs of call `tool(arguments)`; false (nothing pushed) when
/// it is no edit or write, or its arguments don't say what changed.
pub fn push(out: &mut Vec<Line<'static>>, tool: &str, arguments: &str, t: &Theme) -> bool {
    let diffs = diff::of_call(tool, arguments, MAX_LINES);
    for d in &diffs {
        out.push(Line::from(vec![
            Span::styled(d.path.clone(), t.bold()),
            Span::styled(format!("  {}", d.stat()), t.dim()),
            Span::styled(
                if d.whole {
                    "  (whole file written)"
                } else {
                    ""
                }
                .to_string(),
                t.dim(),
            ),
        ]));
        for l in &d.lines {
            let style = match l.kind {
                Kind::Add => t.line(3),
                Kind::Del => t.error(),
                Kind::Hunk | Kind::Fold => t.accent(),
                Kind::Context => Style::new(),
            };
            out.push(Line::from(Span::styled(l.unified(), style)));
        }
    }
    !diffs.is_empty()
}
