//! Entering and leaving the full-screen terminal. Restoring happens on every
//! exit path: normal quit and errors (the guard's Drop), panics (the hook
//! restores before the message prints), Ctrl-C (a key in raw mode) and
//! SIGTERM/SIGHUP/SIGINT/SIGQUIT/SIGUSR1/SIGUSR2/SIGALRM (a flag the input
//! thread turns into a quit: their default action would end the process
//! with the alternate screen and the mouse still on).

use std::io::{self, Stdout};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Once};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

pub fn init() -> io::Result<(Term, Guard)> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    enable_raw_mode()?;
    // From here on the guard undoes whatever succeeded.
    let guard = Guard(());
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok((term, guard))
}

/// Best effort: each step runs even if an earlier one failed.
pub fn restore() {
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
}

/// A flag set by any signal whose default action ends the process and
/// that can be caught (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2,
/// SIGALRM).
pub fn signal_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGQUIT,
        signal_hook::consts::SIGUSR1,
        signal_hook::consts::SIGUSR2,
        signal_hook::consts::SIGALRM,
    ] {
        // Without the handler the default action still ends the process;
        // only the restore would be missed.
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}
