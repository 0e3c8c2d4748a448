//! `userns-hostnet install`.

/// Run the subcommand; the exit status.
pub fn run(args: &crate::cli::InstallArgs) -> anyhow::Result<i32> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}

/// `uninstall`: the exit status.
pub fn run_uninstall(args: &crate::cli::InstallArgs) -> anyhow::Result<i32> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
