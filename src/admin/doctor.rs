//! `userns-hostnet doctor`.

/// Run the subcommand; the exit status.
pub fn run(args: &crate::cli::DoctorArgs) -> anyhow::Result<i32> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
