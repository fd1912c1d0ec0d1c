//! Lane layout for the graph column (pure). Rows are records in the order
//! they were written; each world line owns a contiguous run of rows. A world
//! line's lane starts at its fork-point row (a row of its origin), runs down
//! past later rows of other lines and ends at its last own row. Lane k is
//! world line k for the whole session (oldest leftmost), so nothing moves
//! when a new line appears. Glyphs are computed per drawn row (a record or a
//! folded step) in O(world lines).

/// Where one world line sits in row space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Row of the last shared record (owned by `origin`); `None` for a root.
    pub fork_row: Option<usize>,
    /// World line that owns the fork row.
    pub origin: Option<usize>,
    /// First own row and one past the last own row.
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// First row on which the lane is drawn.
    pub fn from(&self) -> usize {
        self.fork_row.unwrap_or(self.start)
    }

    /// Drawn on some row of `first..=last`.
    fn active_in(&self, first: usize, last: usize) -> bool {
        self.start < self.end && self.from() <= last && first < self.end
    }
}

/// One cell of the graph column: a glyph and the world line whose colour it
/// takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub glyph: char,
    pub line: Option<usize>,
}

const BLANK: Cell = Cell {
    glyph: ' ',
    line: None,
};

/// Lanes assigned to world lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lanes {
    pub spans: Vec<Span>,
    /// Lane of each world line (`None` when it owns no rows).
    pub lane: Vec<Option<usize>>,
    /// Number of lanes ever in use at once.
    pub width: usize,
}

impl Lanes {
    /// Gives each world line its own lane for the whole session, oldest
    /// leftmost, so a lane never moves when later lines appear.
    pub fn assign(spans: Vec<Span>) -> Lanes {
        let lane = (0..spans.len()).map(Some).collect();
        Lanes {
            width: spans.len(),
            spans,
            lane,
        }
    }

    /// The graph cells of `row` (two columns per lane: the lane and the gap
    /// to its right), at most `max_lanes` lanes. `owner` is the world line
    /// that owns the row and `node` the glyph for its record.
    pub fn cells(&self, row: usize, owner: usize, node: char, max_lanes: usize) -> Vec<Cell> {
        self.cells_over(row..row + 1, owner, node, max_lanes)
    }

    /// The cells of one drawn row standing for rows `rows` (a folded step):
    /// lanes alive anywhere in it pass through, forks inside it branch off.
    pub fn cells_over(
        &self,
        rows: std::ops::Range<usize>,
        owner: usize,
        node: char,
        max_lanes: usize,
    ) -> Vec<Cell> {
        let row = rows.start;
        let last = rows.end.max(row + 1) - 1;
        let lanes = self.width.min(max_lanes).max(1);
        let mut out = vec![BLANK; lanes * 2];
        let put = |out: &mut Vec<Cell>, col: usize, glyph: char, line: usize| {
            if let Some(c) = out.get_mut(col) {
                c.glyph = combine(c.glyph, glyph);
                if c.line.is_none() || glyph != '─' {
                    c.line = Some(line);
                }
            }
        };
        for (i, s) in self.spans.iter().enumerate() {
            let Some(l) = self.lane[i].filter(|&l| l < lanes) else {
                continue;
            };
            if !s.active_in(row, last) {
                continue;
            }
            if i == owner && last >= s.start {
                put(&mut out, l * 2, node, i);
            } else if last > s.from() {
                put(&mut out, l * 2, '│', i);
            }
        }
        // Connectors after the lanes so they combine with pass-through lanes.
        for (i, s) in self.spans.iter().enumerate() {
            let (Some(l), Some(fr), Some(o)) = (self.lane[i], s.fork_row, s.origin) else {
                continue;
            };
            if !(row..=last).contains(&fr) || s.start >= s.end {
                continue;
            }
            let Some(lo) = self.lane.get(o).copied().flatten() else {
                continue;
            };
            let (l, lo) = (l.min(lanes - 1), lo.min(lanes - 1));
            if l == lo {
                continue;
            }
            let (a, b, corner) = if l > lo {
                (lo * 2 + 1, l * 2, '╮')
            } else {
                (l * 2 + 1, lo * 2, '╭')
            };
            for col in a..b {
                put(&mut out, col, '─', i);
            }
            put(&mut out, l * 2, corner, i);
        }
        if self.width > lanes {
            if let Some(last) = out.last_mut() {
                *last = Cell {
                    glyph: '›',
                    line: None,
                };
            }
        }
        out
    }
}

/// Two glyphs in one cell (git-graph's trick): a lane crossed by a connector
/// becomes `┼`; a node always wins.
fn combine(old: char, new: char) -> char {
    match (old, new) {
        (' ', n) => n,
        ('│', '─') | ('─', '│') => '┼',
        ('─', '─') => '─',
        (o, '─') => o,
        (_, n) => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyphs(l: &Lanes, row: usize, owner: usize) -> String {
        l.cells(row, owner, '●', 8)
            .iter()
            .map(|c| c.glyph)
            .collect()
    }

    /// dmail_twice in miniature: 0 owns rows 0..5; 1 forks at row 1 and owns
    /// 5..8; 2 forks at row 6 (owned by 1) and owns 8..10.
    fn twice() -> Lanes {
        Lanes::assign(vec![
            Span {
                fork_row: None,
                origin: None,
                start: 0,
                end: 5,
            },
            Span {
                fork_row: Some(1),
                origin: Some(0),
                start: 5,
                end: 8,
            },
            Span {
                fork_row: Some(6),
                origin: Some(1),
                start: 8,
                end: 10,
            },
        ])
    }

    #[test]
    fn each_world_line_keeps_its_own_lane_oldest_leftmost() {
        let l = twice();
        assert_eq!(l.lane, vec![Some(0), Some(1), Some(2)]);
        assert_eq!(l.width, 3);
        assert_eq!(glyphs(&l, 0, 0), "●     ");
        assert_eq!(glyphs(&l, 1, 0), "●─╮   ");
        assert_eq!(glyphs(&l, 2, 0), "● │   ");
        assert_eq!(glyphs(&l, 5, 1), "  ●   ");
        // The third line branches right of its origin, never into lane 0.
        assert_eq!(glyphs(&l, 6, 1), "  ●─╮ ");
        assert_eq!(glyphs(&l, 7, 1), "  ● │ ");
        assert_eq!(glyphs(&l, 8, 2), "    ● ");
        // A new line appearing later moves no existing lane.
        let mut spans = l.spans.clone();
        spans.push(Span {
            fork_row: Some(3),
            origin: Some(0),
            start: 10,
            end: 12,
        });
        let more = Lanes::assign(spans);
        assert_eq!(&more.lane[..3], &l.lane[..]);
        assert_eq!(more.lane[3], Some(3));
    }

    #[test]
    fn a_folded_step_draws_the_forks_inside_it() {
        let l = twice();
        // Rows 0..3 drawn as one step: α's node and β's branch.
        let g: String = l
            .cells_over(0..3, 0, '●', 8)
            .iter()
            .map(|c| c.glyph)
            .collect();
        assert_eq!(g, "●─╮   ");
        // Rows 6..8 as one step of β: γ branches off it.
        let g: String = l
            .cells_over(6..8, 1, '●', 8)
            .iter()
            .map(|c| c.glyph)
            .collect();
        assert_eq!(g, "  ●─╮ ");
    }

    #[test]
    fn connectors_cross_pass_through_lanes() {
        let l = Lanes::assign(vec![
            Span {
                fork_row: None,
                origin: None,
                start: 0,
                end: 6,
            },
            Span {
                fork_row: Some(1),
                origin: Some(0),
                start: 6,
                end: 8,
            },
            Span {
                fork_row: Some(2),
                origin: Some(0),
                start: 8,
                end: 9,
            },
        ]);
        assert_eq!(glyphs(&l, 2, 0), "●─┼─╮ ");
        assert_eq!(glyphs(&l, 3, 0), "● │ │ ");
    }

    #[test]
    fn lines_without_rows_draw_nothing_and_lanes_are_capped() {
        let l = Lanes::assign(vec![
            Span {
                fork_row: None,
                origin: None,
                start: 0,
                end: 2,
            },
            Span {
                fork_row: Some(1),
                origin: Some(0),
                start: 2,
                end: 2,
            },
        ]);
        assert_eq!(glyphs(&l, 1, 0), "●   ");
        let wide = twice();
        let capped: String = wide.cells(2, 0, '●', 1).iter().map(|c| c.glyph).collect();
        assert_eq!(capped, "●›");
    }
}
