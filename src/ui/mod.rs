//! The terminal UI (not built yet).
pub fn run(_args: &crate::cli::ViewArgs) -> anyhow::Result<()> {
    anyhow::bail!("the TUI is not built yet; use `worldline tree`")
}
