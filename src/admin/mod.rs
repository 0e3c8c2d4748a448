//! The admin tool's subcommands. Each shares the wrapper's engine: no rule
//! is implemented twice.

pub mod daemons;
pub mod docs;
pub mod doctor;
pub mod explain;
pub mod files;
pub mod install;
