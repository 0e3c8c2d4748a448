//! The admin tool: explain, doctor, install, the OCI hook mode, and deploy.

use clap::Parser;
use userns_hostnet_admin::cli::{Cli, Command, HookCommand};
use userns_hostnet_admin::{
    configcmd, deploy, docs, doctor, explain, hook, install, registrations, version,
};

fn main() {
    let cli = Cli::parse();
    let result: anyhow::Result<i32> = match &cli.command {
        Command::Explain(a) => explain::run(a).map_err(Into::into),
        Command::Doctor(a) => doctor::run(a).map_err(Into::into),
        Command::Install(a) => install::run(a).map_err(Into::into),
        Command::Uninstall(a) => install::uninstall::run(a).map_err(Into::into),
        Command::Hook(HookCommand::CreateRuntime) => hook::create_runtime().map_err(Into::into),
        Command::Hook(HookCommand::Precreate) => hook::precreate().map_err(Into::into),
        Command::Deploy(a) => deploy::run(a).map_err(Into::into),
        Command::Registrations(a) => registrations::run(a.json).map_err(Into::into),
        Command::Version(a) => version::run(a).map_err(Into::into),
        Command::Completion(a) => docs::run_completion(a).map_err(Into::into),
        Command::Config(c) => configcmd::run(c).map_err(Into::into),
    };
    match result {
        Ok(code) => std::process::exit(code),
        // The library's errors name their cause in their own line: the
        // chain under it would repeat it.
        Err(e) => {
            eprintln!("userns-hostnet: {e}");
            std::process::exit(userns_hostnet_admin::EXIT_ERROR);
        }
    }
}
