//! Man pages and shell completions, generated from the one clap definition
//! in [`crate::cli`], so they cannot drift from what the binary accepts.

use crate::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// The binary the pages and completions describe.
pub const BIN: &str = "userns-hostnet";

/// Write `man/userns-hostnet.1`, one `man/userns-hostnet-SUB.1` per visible
/// subcommand, and bash, zsh and fish completions under `completions/`,
/// below `out`. Returns the files written.
pub fn write_all(out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let man_dir = out.join("man");
    let comp_dir = out.join("completions");
    std::fs::create_dir_all(&man_dir)?;
    std::fs::create_dir_all(&comp_dir)?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = Vec::new();
    let mut page = |c: clap::Command, name: &str| -> std::io::Result<()> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c).title(name).render(&mut buf)?;
        let path = man_dir.join(format!("{name}.1"));
        std::fs::write(&path, buf)?;
        written.push(path);
        Ok(())
    };
    page(cmd.clone(), BIN)?;
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("{BIN}-{}", sub.get_name());
        page(
            sub.clone()
                .display_name(name.clone())
                .bin_name(name.clone()),
            &name,
        )?;
    }
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        written.push(clap_complete::generate_to(shell, &mut cmd, BIN, &comp_dir)?);
    }
    Ok(written)
}
