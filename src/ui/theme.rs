//! Colours and glyphs. With `NO_COLOR` set (non-empty) only modifiers are
//! used (bold, dim, reverse), so everything still reads in monochrome.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

const PALETTE: [Color; 6] = [
    Color::Cyan,
    Color::Magenta,
    Color::Yellow,
    Color::Green,
    Color::LightBlue,
    Color::LightRed,
];

pub use crate::worldline::names::{line_name, GREEK};

impl Theme {
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// The colour of world line `i`.
    pub fn line(&self, i: usize) -> Style {
        self.fg(PALETTE[crate::worldline::names::colour_slot(i, PALETTE.len())])
    }

    pub fn dim(&self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    pub fn bold(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn dmail(&self) -> Style {
        self.fg(Color::LightYellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(&self) -> Style {
        self.fg(Color::LightRed).add_modifier(Modifier::BOLD)
    }

    pub fn accent(&self) -> Style {
        self.fg(Color::LightCyan).add_modifier(Modifier::BOLD)
    }

    pub fn role(&self, role: &crate::model::Role) -> Style {
        use crate::model::Role;
        match role {
            Role::User => self.fg(Color::LightGreen),
            Role::Assistant => self.fg(Color::LightBlue),
            Role::Tool => self.fg(Color::LightMagenta),
            Role::Checkpoint => self.fg(Color::Yellow),
            _ => self.dim(),
        }
    }

    pub fn hit(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Black).bg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD)
        }
    }
}
