//! What registering the wrapper with a daemon plans from, as plain values
//! made once from the command line (install, uninstall) or by deploy: the
//! [`Registration`], and what the daemons' planners share: the plan they
//! return ([`edit`]), why they stop ([`error`]), the handler edits
//! ([`handler`]) and the node's paths under the root ([`paths`]).

pub mod edit;
pub mod error;
pub mod handler;
pub mod paths;
use edit::*;
use error::*;
use paths::*;

use super::config::{Derived, Layout, Owner};
use super::{in_use, DaemonModule};
use crate::daemon;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, Table};
use userns_hostnet::runtime::{self, HANDLER_RUNTIME_LINK};
use userns_hostnet::sys::in_root::{InRootError, NodeRoot};
use userns_hostnet::sys::toml::{self, TomlError};

/// One registration of the wrapper with a daemon, as install and
/// uninstall plan it: the handler, its runtime's paths, where the files
/// are, and what the run may write.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The daemon whose configuration is edited.
    pub daemon: &'static dyn DaemonModule,
    /// The runtime handler's name.
    pub handler: String,
    /// The daemon's configuration file, as the node names it (default:
    /// the daemon's own).
    pub config: Option<PathBuf>,
    /// containerd: the handler in its own drop-in file.
    pub drop_in: bool,
    /// The binary that reads the config, whose version decides how it
    /// merges (containerd's `--containerd`; else the daemon's name,
    /// looked up in PATH).
    pub reader: PathBuf,
    /// The wrapper binary the handler runs.
    pub wrapper: PathBuf,
    /// Where a handler's links go (default: the node's handlers directory).
    pub handlers_dir: Option<PathBuf>,
    /// The createRuntime hook definition instead of a runtime handler.
    pub hook: bool,
    /// With `hook`: the hooks directory, instead of the one the daemon's
    /// config names.
    pub hooks_dir: Option<PathBuf>,
    /// Make the handler the daemon's default.
    pub set_as_default: bool,
    /// A node's root file system: every file read or written is under it.
    pub root: Option<PathBuf>,
    /// With `hook`: this program's path even when it is a temporary one.
    pub force: bool,
    /// Write nothing, print the change as a diff.
    pub dry_run: bool,
    /// Write nothing, say whether anything would change.
    pub check: bool,
    /// Report as one JSON document.
    pub json: bool,
    /// Copy the main config aside before changing it.
    pub backup: bool,
}

impl Registration {
    /// Handler `handler` of `daemon` on this host, with the packaged
    /// wrapper, every other setting at install's default.
    pub fn new(daemon: &'static dyn DaemonModule, handler: &str) -> Registration {
        Registration {
            daemon,
            handler: handler.to_owned(),
            config: None,
            drop_in: false,
            reader: PathBuf::from(daemon.name()),
            wrapper: PathBuf::from(format!("/usr/bin/{}", userns_hostnet::WRAPPER_NAME)),
            handlers_dir: None,
            hook: false,
            hooks_dir: None,
            set_as_default: false,
            root: None,
            force: false,
            dry_run: false,
            check: false,
            json: false,
            backup: false,
        }
    }
}
