//! What one install or uninstall changes: the files with their old and new
//! text, the links, and what it leaves and says.

use super::*;

/// One file's change: `None` is an absent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub old: Option<String>,
    pub new: Option<String>,
    /// Copy the old file aside first; never in a drop-in directory, where
    /// the daemon could read the copy as one more drop-in.
    pub backup: bool,
}

impl FileChange {
    pub(crate) fn changes(&self) -> bool {
        self.old != self.new
    }
}

/// A symbolic link install makes or uninstall removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkChange {
    Create { path: PathBuf, target: PathBuf },
    Remove { path: PathBuf, target: PathBuf },
}

/// Everything one install or uninstall does, and what it says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InstallPlan {
    pub files: Vec<FileChange>,
    pub links: Vec<LinkChange>,
    /// Lines for the operator: the real runtime, what was left and why.
    pub notes: Vec<String>,
    /// uninstall: a handler of that name stays registered.
    pub left: bool,
    /// `--hook`: the daemon must restart to read a changed config.
    pub restart: bool,
}

impl InstallPlan {
    /// Something of that name stays as it is, for the reason `note` gives;
    /// for uninstall, that means the handler stays registered.
    pub(crate) fn leave(&mut self, install: bool, note: String) {
        self.notes.push(note);
        if !install {
            self.left = true;
        }
    }
}
