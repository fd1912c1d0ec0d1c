//! The simulated demo agent (not built yet).
pub fn run(_args: &crate::cli::DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!("`worldline demo` is not built yet")
}
