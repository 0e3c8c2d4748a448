//! `userns-hostnet explain`.

/// Run the subcommand; the exit status.
pub fn run(args: &crate::cli::ExplainArgs) -> anyhow::Result<i32> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
