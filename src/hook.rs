//! OCI hook mode, for stacks that run without the wrapper.

/// `hook create-runtime`: the exit status.
pub fn create_runtime() -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}

/// `hook precreate`: the exit status.
pub fn precreate() -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
