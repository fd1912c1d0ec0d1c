//! One key table: it maps keys to actions and is what the help and every
//! footer are made from, so a key can't work without being listed or be
//! listed without working. Only key presses count (Windows and the kitty
//! protocol also report releases and repeats).

use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Size};

use super::app::{Action, Msg};

/// How keys are read right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing a search query.
    SearchInput,
    /// Typing a D-Mail: every key goes to the text but Ctrl-S, Esc, Ctrl-C.
    Compose,
    /// The compare screen ([`COMPARE`]).
    Compare,
    /// The filter menu or the subagent list is open ([`MENU`]).
    Menu,
    /// The help is open ([`HELP`]).
    Help,
    /// Choosing a session ([`PICKER`]).
    Picker,
}

/// A key: its code and whether Ctrl is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub KeyCode, pub bool);

const fn ch(c: char) -> Code {
    Code(KeyCode::Char(c), false)
}

const fn ctrl(c: char) -> Code {
    Code(KeyCode::Char(c), true)
}

const fn k(code: KeyCode) -> Code {
    Code(code, false)
}

/// One line of the key table.
pub struct Binding {
    /// The keys as the help shows them; empty when another line covers it.
    pub keys: &'static str,
    pub what: &'static str,
    /// Short footer text and its rank (lower is kept first on a narrow
    /// screen); `None` stays out of the footer.
    pub footer: Option<(&'static str, u8)>,
    pub codes: &'static [Code],
    pub action: fn() -> Action,
}

// Lines several tables share.

/// k and ↑: up a row (listed with j).
const UP: Binding = Binding {
    keys: "",
    what: "",
    footer: None,
    codes: &[ch('k'), k(KeyCode::Up)],
    action: || Action::Move(-1),
};

/// G and End: the last row (listed with g).
const TO_BOTTOM: Binding = Binding {
    keys: "",
    what: "",
    footer: None,
    codes: &[ch('G'), k(KeyCode::End)],
    action: || Action::Bottom,
};

/// ? opens the help.
const HELP_KEY: Binding = Binding {
    keys: "?",
    what: "this help",
    footer: None,
    codes: &[ch('?')],
    action: || Action::Help,
};

/// q quits (^C too, everywhere).
const QUIT: Binding = Binding {
    keys: "q ^C",
    what: "quit",
    footer: None,
    codes: &[ch('q')],
    action: || Action::Quit,
};

/// PgUp: a page up (listed with PgDn).
const PAGE_UP: Binding = Binding {
    keys: "",
    what: "",
    footer: None,
    codes: &[k(KeyCode::PageUp)],
    action: || Action::Page(-1),
};

/// g and Home: the first row.
const TO_TOP: Binding = Binding {
    keys: "g/G",
    what: "first, last",
    footer: None,
    codes: &[ch('g'), k(KeyCode::Home)],
    action: || Action::Top,
};

/// The session screen's keys.
pub const TABLE: &[Binding] = &[
    Binding {
        keys: "j/k ↑/↓",
        what: "move by a row (a step, or a record when unfolded)",
        footer: Some(("j/k step", 0)),
        codes: &[ch('j'), k(KeyCode::Down)],
        action: || Action::Move(1),
    },
    UP,
    Binding {
        keys: "PgDn Space ^D",
        what: "page down",
        footer: None,
        codes: &[k(KeyCode::PageDown), ch(' '), ctrl('d')],
        action: || Action::Page(1),
    },
    Binding {
        keys: "PgUp ^U",
        what: "page up",
        footer: None,
        codes: &[k(KeyCode::PageUp), ctrl('u')],
        action: || Action::Page(-1),
    },
    Binding {
        keys: "g/G Home/End",
        what: "first row, last row",
        footer: None,
        codes: &[ch('g'), k(KeyCode::Home)],
        action: || Action::Top,
    },
    TO_BOTTOM,
    Binding {
        keys: "Enter →",
        what: "unfold / fold a step; on a record: the whole record",
        footer: Some(("⏎ unfold", 1)),
        codes: &[k(KeyCode::Enter), k(KeyCode::Right)],
        action: || Action::Expand,
    },
    Binding {
        keys: "←",
        what: "fold the step the selection is in",
        footer: None,
        codes: &[k(KeyCode::Left)],
        action: || Action::Fold,
    },
    Binding {
        keys: "h/l Tab",
        what: "previous / next world line, keeping the equivalent point",
        footer: Some(("h/l world line", 2)),
        codes: &[ch('l'), k(KeyCode::Tab)],
        action: || Action::SwitchLine(1),
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('h'), k(KeyCode::BackTab)],
        action: || Action::SwitchLine(-1),
    },
    Binding {
        keys: "] [",
        what: "next / previous fork or D-Mail",
        footer: Some(("]/[ fork", 3)),
        codes: &[ch(']')],
        action: || Action::Mark(1),
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('[')],
        action: || Action::Mark(-1),
    },
    Binding {
        keys: "/ n N",
        what: "search bodies (smart case), next / previous match",
        footer: Some(("/ search", 4)),
        codes: &[ch('/')],
        action: || Action::SearchOpen,
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('n')],
        action: || Action::Hit(1),
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('N')],
        action: || Action::Hit(-1),
    },
    Binding {
        keys: "e E",
        what: "next / previous tool error or refused D-Mail",
        footer: Some(("e error", 6)),
        codes: &[ch('e')],
        action: || Action::Error(1),
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('E')],
        action: || Action::Error(-1),
    },
    Binding {
        keys: "f",
        what: "filter menu: steps, every record, by role or tool, with counts",
        footer: Some(("f filter", 5)),
        codes: &[ch('f')],
        action: || Action::FilterMenu,
    },
    Binding {
        keys: "a ^O",
        what: "every record, bookkeeping included (again: back to steps)",
        footer: Some(("a all", 9)),
        codes: &[ch('a'), ctrl('o')],
        action: || Action::Every,
    },
    Binding {
        keys: "m",
        what: "show / hide the world-line map (click a track to go there)",
        footer: Some(("m map", 8)),
        codes: &[ch('m')],
        action: || Action::MapToggle,
    },
    Binding {
        keys: "d",
        what: "D-Mail to the selected ⚑ or turn of the current line",
        footer: Some(("d D-Mail", 7)),
        codes: &[ch('d')],
        action: || Action::DMail,
    },
    Binding {
        keys: "c",
        what: "compare the focused world line with the marked one (C), else its parent",
        footer: Some(("c compare", 13)),
        codes: &[ch('c')],
        action: || Action::Compare,
    },
    Binding {
        keys: "C",
        what: "mark the focused world line: c on another then compares the two",
        footer: None,
        codes: &[ch('C')],
        action: || Action::CompareMark,
    },
    Binding {
        keys: "s",
        what: "subagents (on an Agent call: enter it); Esc goes back",
        footer: Some(("s subagents", 10)),
        codes: &[ch('s')],
        action: || Action::Subagents,
    },
    Binding {
        keys: "o",
        what: "into the /fork or /undo session at this ⑂ (else: next ⑂); on a fork: its source",
        footer: Some(("o fork session", 12)),
        codes: &[ch('o')],
        action: || Action::Fork,
    },
    Binding {
        keys: "F",
        what: "follow the newest record (shows each new world line's leap)",
        footer: Some(("F follow", 11)),
        codes: &[ch('F')],
        action: || Action::Follow,
    },
    Binding {
        keys: "Esc Bksp",
        what: "back: close the record, leave a subagent or a fork session",
        footer: None,
        codes: &[k(KeyCode::Esc), k(KeyCode::Backspace)],
        action: || Action::Back,
    },
    HELP_KEY,
    QUIT,
];

/// The compare screen's keys: what they do here, its help and its footer.
pub const COMPARE: &[Binding] = &[
    Binding {
        keys: "j/k ↑/↓",
        what: "move both panes together, a step at a time",
        footer: Some(("j/k step", 0)),
        codes: &[ch('j'), k(KeyCode::Down)],
        action: || Action::Move(1),
    },
    UP,
    Binding {
        keys: "PgDn PgUp",
        what: "page down / up",
        footer: None,
        codes: &[k(KeyCode::PageDown), ch(' ')],
        action: || Action::Page(1),
    },
    PAGE_UP,
    Binding {
        keys: "g/G",
        what: "the shared part, the last step",
        footer: None,
        codes: &[ch('g'), k(KeyCode::Home)],
        action: || Action::Top,
    },
    TO_BOTTOM,
    Binding {
        keys: "Tab",
        what: "switch pane",
        footer: Some(("Tab pane", 1)),
        codes: &[k(KeyCode::Tab), k(KeyCode::BackTab)],
        action: || Action::SwitchLine(1),
    },
    Binding {
        keys: "h/l",
        what: "compare another world line in this pane (previous / next)",
        footer: Some(("h/l line", 3)),
        codes: &[ch('l')],
        action: || Action::Mark(1),
    },
    Binding {
        keys: "",
        what: "",
        footer: None,
        codes: &[ch('h')],
        action: || Action::Mark(-1),
    },
    Binding {
        keys: "Enter",
        what: "open the step of this pane: its text, calls, edits as diffs",
        footer: Some(("⏎ open", 2)),
        codes: &[k(KeyCode::Enter), k(KeyCode::Right)],
        action: || Action::Expand,
    },
    Binding {
        keys: "Esc Bksp",
        what: "close the step; again: back to the session",
        footer: Some(("Esc back", 4)),
        codes: &[k(KeyCode::Esc), k(KeyCode::Backspace), k(KeyCode::Left)],
        action: || Action::Back,
    },
    HELP_KEY,
    QUIT,
];

/// The filter menu's and the subagent list's keys; any key not here
/// closes the menu too.
pub const MENU: &[Binding] = &[
    Binding {
        keys: "j/k ↑/↓",
        what: "choose",
        footer: Some(("j/k choose", 0)),
        codes: &[ch('j'), k(KeyCode::Down)],
        action: || Action::Move(1),
    },
    UP,
    TO_TOP,
    TO_BOTTOM,
    Binding {
        keys: "Enter →",
        what: "pick",
        footer: Some(("Enter picks", 1)),
        codes: &[k(KeyCode::Enter), k(KeyCode::Right)],
        action: || Action::Expand,
    },
    Binding {
        keys: "Esc",
        what: "close (any other key too)",
        footer: Some(("Esc closes", 2)),
        codes: &[k(KeyCode::Esc), k(KeyCode::Backspace), k(KeyCode::Left)],
        action: || Action::Back,
    },
    QUIT,
];

/// The help's keys; any other key closes it.
pub const HELP: &[Binding] = &[
    Binding {
        keys: "j/k ↑/↓",
        what: "scroll",
        footer: Some(("j/k scroll", 0)),
        codes: &[ch('j'), k(KeyCode::Down)],
        action: || Action::Move(1),
    },
    UP,
    Binding {
        keys: "PgDn PgUp",
        what: "scroll a page",
        footer: None,
        codes: &[k(KeyCode::PageDown), ch(' ')],
        action: || Action::Page(1),
    },
    PAGE_UP,
    Binding {
        keys: "Esc",
        what: "close (any other key too)",
        footer: Some(("any other key closes", 1)),
        codes: &[k(KeyCode::Esc)],
        action: || Action::Back,
    },
];

/// The session picker's keys.
pub const PICKER: &[Binding] = &[
    Binding {
        keys: "j/k ↑/↓",
        what: "choose a session",
        footer: Some(("↑/↓ choose", 0)),
        codes: &[ch('j'), k(KeyCode::Down)],
        action: || Action::Move(1),
    },
    UP,
    Binding {
        keys: "PgDn PgUp",
        what: "a page down / up",
        footer: None,
        codes: &[k(KeyCode::PageDown), ch(' ')],
        action: || Action::Page(1),
    },
    PAGE_UP,
    TO_TOP,
    TO_BOTTOM,
    Binding {
        keys: "Enter",
        what: "open it",
        footer: Some(("Enter open", 1)),
        codes: &[k(KeyCode::Enter), k(KeyCode::Right)],
        action: || Action::Expand,
    },
    Binding {
        keys: "?",
        what: "what the keys do, on the status line",
        footer: None,
        codes: &[ch('?')],
        action: || Action::Help,
    },
    Binding {
        keys: "q ^C Esc",
        what: "quit",
        footer: Some(("q quit", 2)),
        codes: &[ch('q'), k(KeyCode::Esc)],
        action: || Action::Quit,
    },
];

/// The D-Mail compose box's keys; every other key is typed into the text.
pub const COMPOSE: &[Binding] = &[
    Binding {
        keys: "^S",
        what: "send the D-Mail",
        footer: Some(("Ctrl-S send", 0)),
        codes: &[ctrl('s')],
        action: || Action::ComposeSend,
    },
    Binding {
        keys: "^O",
        what: "insert what a revert leaves on disk",
        footer: Some(("Ctrl-O insert what stays", 1)),
        codes: &[ctrl(super::compose::INSERT_KEY)],
        action: || Action::ComposeInsertKept,
    },
    Binding {
        keys: "Esc",
        what: "cancel",
        footer: Some(("Esc cancel", 2)),
        codes: &[k(KeyCode::Esc)],
        action: || Action::ComposeCancel,
    },
];

/// The table that reads keys in `mode` (none while typing a search).
pub fn table(mode: Mode) -> &'static [Binding] {
    match mode {
        Mode::Normal => TABLE,
        Mode::Compare => COMPARE,
        Mode::Menu => MENU,
        Mode::Help => HELP,
        Mode::Picker => PICKER,
        Mode::Compose => COMPOSE,
        Mode::SearchInput => &[],
    }
}

/// Always at the end of a footer, whatever the width.
pub const FOOTER_TAIL: &str = "? help  q quit";

/// The footer of the session screen for `width` columns: the best-ranked
/// keys that fit, then `? help  q quit`. Also returns the keys left out.
pub fn footer(width: usize) -> (String, Vec<&'static str>) {
    footer_where(width, |_| true)
}

/// `footer` of the bindings `offered` keeps (a key that can't work on
/// this session, like `d` where there are no checkpoints, stays out).
pub fn footer_where(
    width: usize,
    offered: impl Fn(&Binding) -> bool,
) -> (String, Vec<&'static str>) {
    footer_of(TABLE, width, offered)
}

/// The footer of `table` for `width` columns: its best-ranked keys that
/// fit (of those `offered` keeps), then `? help  q quit`; and the keys left
/// out.
pub fn footer_of(
    table: &'static [Binding],
    width: usize,
    offered: impl Fn(&Binding) -> bool,
) -> (String, Vec<&'static str>) {
    let mut items: Vec<(&str, u8)> = table
        .iter()
        .filter(|b| offered(b))
        .filter_map(|b| b.footer)
        .collect();
    items.sort_by_key(|&(_, rank)| rank);
    let budget = width.saturating_sub(crate::text::width(FOOTER_TAIL) + 2);
    let mut out = String::from(" ");
    let mut hidden = Vec::new();
    for (label, _) in items {
        let w = crate::text::width(label) + 2;
        if crate::text::width(&out) + w <= budget && hidden.is_empty() {
            out.push_str(label);
            out.push_str("  ");
        } else {
            hidden.push(label);
        }
    }
    out.push_str(FOOTER_TAIL);
    (out, hidden)
}

/// A terminal event as a message: a key through the table, the mouse, a
/// paste into the compose box, a resize.
pub fn message_for(mode: Mode, ev: &Event) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => key(mode, k).map(Msg::Input),
        // The compose box has no mouse use, and a click must not move the
        // selection under it.
        Event::Mouse(_) if mode == Mode::Compose => None,
        Event::Mouse(m) => mouse(m).map(Msg::Input),
        Event::Paste(s) if mode == Mode::Compose => {
            Some(Msg::Input(Action::ComposePaste(s.clone())))
        }
        Event::Resize(w, h) => Some(Msg::Resize(Size::new(*w, *h))),
        _ => None,
    }
}

pub fn key(mode: Mode, k: &KeyEvent) -> Option<Action> {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Raw mode turns Ctrl-C into a key; it always quits.
    if ctrl && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('q')) {
        return Some(Action::Quit);
    }
    if mode == Mode::Compose {
        let code = Code(k.code, ctrl);
        return Some(
            COMPOSE
                .iter()
                .find(|b| b.codes.contains(&code))
                .map_or_else(|| Action::ComposeKey((*k).into()), |b| (b.action)()),
        );
    }
    if mode == Mode::SearchInput {
        return match k.code {
            KeyCode::Esc => Some(Action::SearchCancel),
            KeyCode::Enter => Some(Action::SearchSubmit),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::SearchChar(c)),
            _ => None,
        };
    }
    let code = Code(k.code, ctrl);
    let bound = table(mode)
        .iter()
        .find(|b| b.codes.contains(&code))
        .map(|b| (b.action)());
    match mode {
        // A popup closes on any key it has no use for.
        Mode::Menu | Mode::Help => bound.or(Some(Action::Back)),
        _ => bound,
    }
}

/// One line naming what `table`'s keys do, for a popup's title.
pub fn title_of(table: &'static [Binding]) -> String {
    let mut items: Vec<(&str, u8)> = table.iter().filter_map(|b| b.footer).collect();
    items.sort_by_key(|&(_, rank)| rank);
    items
        .iter()
        .map(|(label, _)| *label)
        .collect::<Vec<_>>()
        .join(" · ")
}

fn mouse(m: &MouseEvent) -> Option<Action> {
    match m.kind {
        MouseEventKind::ScrollDown => Some(Action::Wheel(3)),
        MouseEventKind::ScrollUp => Some(Action::Wheel(-3)),
        MouseEventKind::Down(MouseButton::Left) => {
            Some(Action::Click(Position::new(m.column, m.row)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_ignored_and_ctrl_c_quits_everywhere() {
        let mut k = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
        assert!(matches!(
            message_for(Mode::Normal, &Event::Key(k)),
            Some(Msg::Input(Action::Move(1)))
        ));
        k.kind = KeyEventKind::Release;
        assert!(message_for(Mode::Normal, &Event::Key(k)).is_none());
        assert!(matches!(
            message_for(Mode::Normal, &Event::Resize(80, 24)),
            Some(Msg::Resize(_))
        ));
        let c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(key(Mode::SearchInput, &c), Some(Action::Quit)));
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert!(matches!(
            key(Mode::SearchInput, &q),
            Some(Action::SearchChar('q'))
        ));
        let o = KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL);
        assert!(matches!(key(Mode::Normal, &o), Some(Action::Every)));
        assert!(matches!(
            key(Mode::Compose, &o),
            Some(Action::ComposeInsertKept)
        ));
    }

    #[test]
    fn no_key_is_bound_twice_and_every_bound_key_is_in_the_help() {
        for mode in [
            Mode::Normal,
            Mode::Compare,
            Mode::Menu,
            Mode::Help,
            Mode::Picker,
            Mode::Compose,
        ] {
            let table = table(mode);
            let mut seen = Vec::new();
            for b in table {
                for c in b.codes {
                    assert!(!seen.contains(c), "{mode:?}: {c:?} bound twice");
                    seen.push(*c);
                }
            }
            // A line without its own help text shares the line above it.
            assert!(!table[0].keys.is_empty(), "{mode:?}");
            // Each says in one line what its keys do (a popup's title).
            assert!(!title_of(table).is_empty(), "{mode:?}");
        }
    }

    #[test]
    fn a_popup_closes_on_a_key_it_has_no_use_for_and_the_session_screen_does_not() {
        let press = |mode, c| key(mode, &KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        assert!(matches!(press(Mode::Menu, 'x'), Some(Action::Back)));
        assert!(matches!(press(Mode::Help, 'x'), Some(Action::Back)));
        assert!(press(Mode::Normal, 'x').is_none());
        assert!(press(Mode::Picker, 'x').is_none());
        // The menu's own keys are its own: `j` moves in it, `q` quits.
        assert!(matches!(press(Mode::Menu, 'j'), Some(Action::Move(1))));
        assert!(matches!(press(Mode::Menu, 'q'), Some(Action::Quit)));
        // The session screen's `c` is not a menu key: it closes the menu.
        assert!(matches!(press(Mode::Menu, 'c'), Some(Action::Back)));
    }

    #[test]
    fn the_footer_always_keeps_help_and_quit() {
        for w in [40, 80, 100, 120, 200] {
            let (f, hidden) = footer(w);
            assert!(f.ends_with(FOOTER_TAIL), "{w}: {f}");
            assert!(crate::text::width(&f) <= w.max(crate::text::width(FOOTER_TAIL) + 1));
            let shown = TABLE.iter().filter(|b| b.footer.is_some()).count();
            assert_eq!(
                f.matches("  ").count() - 1 + hidden.len(),
                shown,
                "{w}: {f}"
            );
        }
        let (narrow, hidden) = footer(80);
        assert!(narrow.contains("j/k step"));
        assert!(!hidden.is_empty());
        assert!(footer(200).1.is_empty());
    }
}
