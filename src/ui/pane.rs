//! A list pane's position: the selected row and the first row drawn, kept
//! so the selection has a few rows of context above and below. One type for
//! every list: the session screen's rows, the compare screen's aligned
//! steps (both of its panes move together, so they share one), the session
//! picker. Pure: lengths and heights come in, nothing is drawn here.

use std::ops::Range;

use super::geometry::{offset, scroll_off};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListPane {
    cursor: usize,
    scroll: usize,
}

impl ListPane {
    /// Position of the selected row.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Position of the first row drawn.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// Selects `pos`, clamped to a list of `len` rows, and scrolls so it
    /// shows in `height` rows.
    pub fn select(&mut self, pos: usize, len: usize, height: usize) {
        self.cursor = pos.min(len.saturating_sub(1));
        self.keep_in_view(len, height);
    }

    /// Moves the selection by `d` rows.
    pub fn move_by(&mut self, d: isize, len: usize, height: usize) {
        self.select(offset(self.cursor, d), len, height);
    }

    /// Sets the selection without scrolling (a rebuilt list that keeps its
    /// place; `keep_in_view` follows).
    pub fn set_cursor(&mut self, pos: usize) {
        self.cursor = pos;
    }

    /// Back to the top.
    pub fn reset(&mut self) {
        *self = ListPane::default();
    }

    /// Scrolls so the selection has a few rows of context above and below,
    /// never past the end of the list.
    pub fn keep_in_view(&mut self, len: usize, height: usize) {
        let h = height.max(1);
        let off = scroll_off(h);
        if self.cursor < self.scroll + off {
            self.scroll = self.cursor.saturating_sub(off);
        } else if self.cursor + off >= self.scroll + h {
            self.scroll = (self.cursor + off + 1).saturating_sub(h);
        }
        self.scroll = self.scroll.min(len.saturating_sub(h));
    }

    /// Positions drawn in `height` rows of a list of `len`.
    pub fn shown(&self, len: usize, height: usize) -> Range<usize> {
        self.scroll.min(len)..(self.scroll + height).min(len)
    }

    /// The position drawn `y` rows below the top, if there is one.
    pub fn at(&self, y: usize, len: usize) -> Option<usize> {
        Some(self.scroll + y).filter(|&p| p < len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selection_stays_in_view_with_context_and_clamped() {
        let mut p = ListPane::default();
        p.select(50, 100, 20);
        assert_eq!(p.cursor(), 50);
        assert!(p.shown(100, 20).contains(&(50 + 3)), "context below");
        p.move_by(-40, 100, 20);
        assert_eq!(p.cursor(), 10);
        assert!(p.shown(100, 20).contains(&(10 - 3)), "context above");
        p.select(1_000, 100, 20);
        assert_eq!(p.cursor(), 99);
        assert_eq!(p.shown(100, 20), 80..100, "never scrolled past the end");
        assert_eq!(p.at(19, 100), Some(99));
        assert_eq!(p.at(20, 100), None);
        p.move_by(-1_000, 100, 20);
        assert_eq!((p.cursor(), p.scroll()), (0, 0));
        // An empty list and a zero-height pane are no trouble.
        p.select(5, 0, 0);
        assert_eq!((p.cursor(), p.shown(0, 0)), (0, 0..0));
    }
}
