//! Placeholder
pub fn list_command(_args: &crate::cli::ListArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
