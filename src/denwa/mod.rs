//! D-Mail delivery: DenwaRenji's rules, the denwa/1 socket protocol, its server
//! (inside an agent) and its client (TUI and `worldline send`).

pub mod renji;

pub use renji::{DMail, DenwaRenji, DenwaRenjiError};

/// `worldline send` (not built yet).
pub fn send_command(_args: &crate::cli::SendArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("`worldline send` is not built yet")
}
