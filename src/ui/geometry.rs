//! Screen geometry (pure): where the header, the world-line map, the step
//! list, the detail pane and the footer sit for a terminal size. Drawing and
//! mouse hit-testing both ask here, so they can never disagree.

use ratatui::layout::{Constraint, Layout, Rect, Size};

/// Screen regions of the session screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    /// The world-line map: its title rule, one row per shown track and the
    /// arc row; zero height when hidden.
    pub map: Rect,
    /// Rows of the list, without borders.
    pub graph: Rect,
    /// Detail pane including its border.
    pub detail: Rect,
    pub footer: Rect,
    /// Side by side (wide) or stacked (narrow).
    pub wide: bool,
}

/// Widths from which the detail pane sits beside the list.
pub const WIDE: u16 = 110;

/// Rows the map takes for `tracks` world lines: a title rule, one row per
/// track (at most a third of the screen) and the arc row. Hidden: none.
pub fn map_height(size: Size, tracks: usize, shown: bool) -> u16 {
    if !shown || tracks == 0 {
        return 0;
    }
    let cap = (size.height.saturating_sub(3) / 3).max(2);
    let rows = (tracks as u16).min(cap.saturating_sub(1)).max(1);
    // The arc row only when there is room for it.
    let arc = u16::from(size.height >= 30);
    1 + rows + arc
}

/// How many track rows fit in a map of height `h` (see `map_height`).
pub fn map_track_rows(size: Size, h: u16) -> usize {
    let arc = u16::from(size.height >= 30);
    h.saturating_sub(1 + arc) as usize
}

pub fn areas(size: Size, expanded: bool, map_h: u16) -> Areas {
    let full = Rect::new(0, 0, size.width, size.height);
    let map_h = if expanded { 0 } else { map_h };
    let [header, map, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(map_h),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(full);
    let wide = size.width >= WIDE;
    if expanded {
        return Areas {
            header,
            map,
            graph: Rect::new(body.x, body.y, body.width, 0),
            detail: body,
            footer,
            wide,
        };
    }
    let (graph, detail) = if wide {
        let [g, d] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)])
            .areas(body);
        (g, d)
    } else {
        let detail_h = (body.height * 2 / 5)
            .max(5)
            .min(body.height.saturating_sub(3));
        let [g, d] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(detail_h)]).areas(body);
        (g, d)
    };
    Areas {
        header,
        map,
        graph,
        detail,
        footer,
        wide,
    }
}

pub fn picker_list_area(size: Size) -> Rect {
    let full = Rect::new(0, 0, size.width, size.height);
    let [_, list, _] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(full);
    list
}

/// Rows kept above and below the selection when it moves (scroll-off).
pub fn scroll_off(list_height: usize) -> usize {
    (list_height / 6).min(3)
}

/// `base` moved by `d`, saturating at both ends.
pub fn offset(base: usize, d: isize) -> usize {
    if d < 0 {
        base.saturating_sub(d.unsigned_abs())
    } else {
        base.saturating_add(d as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_and_list_share_the_screen_at_both_sizes() {
        let big = Size::new(120, 40);
        let h = map_height(big, 4, true);
        assert_eq!(h, 1 + 4 + 1, "four tracks, a title and an arc row");
        let a = areas(big, false, h);
        assert_eq!(a.map.y, 1);
        assert_eq!(a.graph.y, 1 + h);
        assert!(a.wide);
        assert_eq!(a.footer.y, 39);
        assert!(a.graph.height >= 30);

        let small = Size::new(80, 24);
        let h = map_height(small, 4, true);
        // A third of the screen at most; no arc row at 24 rows.
        assert_eq!(h, 1 + 4);
        assert_eq!(map_track_rows(small, h), 4);
        let a = areas(small, false, h);
        assert!(!a.wide);
        assert!(a.graph.height >= 8, "{a:?}");
        assert_eq!(a.detail.y + a.detail.height, 23);
        // Many tracks are capped.
        assert_eq!(map_track_rows(small, map_height(small, 12, true)), 6);
        // Hidden or expanded: no map.
        assert_eq!(map_height(small, 4, false), 0);
        assert_eq!(areas(small, true, 5).map.height, 0);
    }

    #[test]
    fn scroll_off_is_small_on_small_lists() {
        assert_eq!(scroll_off(40), 3);
        assert_eq!(scroll_off(9), 1);
        assert_eq!(scroll_off(3), 0);
    }
}
