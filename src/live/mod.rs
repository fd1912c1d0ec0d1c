//! Following a live session (not built yet).
pub fn watch_command(_args: &crate::cli::WatchArgs) -> anyhow::Result<()> {
    anyhow::bail!("`worldline watch` is not built yet")
}
