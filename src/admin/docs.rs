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
    let hidden = hidden_options(&cmd);
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path = clap_complete::generate_to(shell, &mut cmd, BIN, &comp_dir)?;
        let text = std::fs::read_to_string(&path)?;
        std::fs::write(&path, repair(shell, &text, &hidden))?;
        written.push(path);
    }
    Ok(written)
}

/// The long names of the hidden (test-only) options of every subcommand.
fn hidden_options(cmd: &clap::Command) -> Vec<String> {
    let mut out: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect();
    for sub in cmd.get_subcommands() {
        out.extend(hidden_options(sub));
    }
    out.sort();
    out.dedup();
    out
}

/// What clap_complete gets wrong for this binary, put right:
/// - bash: the case arms that pick a subcommand's options spell the
///   hyphenated binary name `userns__subcmd__hostnet`, while the loop that
///   finds the subcommand sets `userns__hostnet`, so nothing completed past
///   the first word;
/// - every shell: hidden options are offered; they are for tests only.
fn repair(shell: Shell, text: &str, hidden: &[String]) -> String {
    let fn_name = BIN.replace('-', "__");
    let wrong = BIN.replace('-', "__subcmd__");
    let text = match shell {
        Shell::Bash => text.replace(&wrong, &fn_name),
        _ => text.to_owned(),
    };
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.lines() {
        let t = line.trim();
        if skipping {
            skipping = t != ";;";
            continue;
        }
        if hidden.iter().any(|h| {
            let long = format!("--{h}");
            match shell {
                // A case arm for the option's value: up to its `;;`.
                Shell::Bash if t == format!("{long})") => {
                    skipping = true;
                    true
                }
                Shell::Zsh => {
                    t.starts_with(&format!("'{long}=")) || t.starts_with(&format!("'{long}["))
                }
                Shell::Fish => t.contains(&format!(" -l {h} ")) || t.ends_with(&format!(" -l {h}")),
                _ => false,
            }
        }) {
            continue;
        }
        let mut line = line.to_owned();
        if shell == Shell::Bash && t.starts_with("opts=\"") {
            for h in hidden {
                line = line.replace(&format!(" --{h} "), " ");
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
