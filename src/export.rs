//! Placeholder
pub fn tree_command(_args: &crate::cli::TreeArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
