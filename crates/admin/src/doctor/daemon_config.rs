//! doctor's check of a daemon's config as the daemon that serves it reads
//! it: found, asked, and what it would be missing at start.

use super::*;

/// The daemon binary that serves its config (`daemon::binary::find`).
pub(super) fn serving_binary(
    root: &Root,
    daemon: &'static dyn daemon::DaemonModule,
    config: &Path,
    named: Option<&Path>,
) -> Option<daemon::binary::Binary> {
    // Under --root, the host's usual binary directories; else doctor's PATH.
    let path_env = if root.fake {
        daemon::binary::SERVICE_PATH.to_owned()
    } else {
        std::env::var("PATH").unwrap_or_default()
    };
    daemon::binary::find(daemon, config, named, &path_env, &|p| root.at(p))
}

/// The daemon's own check of its config file (`containerd config dump`,
/// `crio config`), then the binaries each handler needs, which CRI-O
/// checks only when it starts: any of them missing stops the daemon
/// (CRI-O) or loses the handler. What differs per daemon is its module's
/// ([`daemon::ConfigCheck`]).
pub(super) fn daemon_config(
    root: &Root,
    daemon: &'static dyn daemon::DaemonModule,
    host: &Path,
    bin: Option<&daemon::binary::Binary>,
    fx: &Fixes,
) -> Option<Check> {
    let cc = daemon.config_check()?;
    let host = host.to_owned();
    let run = ConfigRun {
        root,
        daemon,
        cc,
        file: root.at(&host),
        host,
        fx,
    };
    let Some(bin) = bin else {
        return Some(run.without_binary());
    };
    // Each step's finding, when it has one, is the check's.
    Some(run.with_binary(bin).unwrap_or_else(|finding| finding))
}

/// One daemon's config check: what each of its steps reads.
struct ConfigRun<'a> {
    root: &'a Root,
    daemon: &'static dyn daemon::DaemonModule,
    cc: daemon::ConfigCheck,
    /// The config file, as the node names it.
    host: PathBuf,
    /// The config file here.
    file: PathBuf,
    fx: &'a Fixes,
}

impl ConfigRun<'_> {
    fn map(&self) -> impl Fn(&Path) -> PathBuf + '_ {
        |p: &Path| self.root.at(p)
    }

    /// No binary serves the file: a warning, unless what the daemon
    /// checks on start, read from its files alone, already fails.
    fn without_binary(&self) -> Check {
        let (daemon, shown) = (self.daemon, self.host.display());
        let mut c = check(
            self.cc.name,
            Status::Warn,
            format!(
                "no {0} binary found (no running {0} that doctor can see reads {shown}, none in PATH): its own check of the file was not run",
                daemon.name()
            ),
        )
        .fix(format!(
            "name the binary that serves the file: userns-hostnet doctor {} PATH",
            daemon::binary::flag(daemon)
        ));
        // What the daemon checks on start, read from its files alone.
        if let Some(missing) = self.daemon.missing_without_binary(&self.host, &self.map()) {
            if let Some(fail) =
                missing_check(&self.cc, daemon, &missing, &shown.to_string(), "", self.fx)
            {
                c = fail;
            }
        }
        c
    }

    /// The binary's own check of the file, then what the config it read
    /// would be missing at start.
    fn with_binary(&self, bin: &daemon::binary::Binary) -> Result<Check, Check> {
        let cc = &self.cc;
        let shown = self.host.display();
        let asked = bin.describe();
        // `_staged` (a temporary copy) is read until the check is made.
        let (read, _staged, config_dir) = self.file_to_read(&asked)?;
        let effective = self.effective(bin, &asked, &read, config_dir.as_deref())?;
        let dumped = effective.parse::<DocumentMut>();
        if let Ok(doc) = &dumped {
            self.reads_less(&asked, doc)?;
        }
        let missing = dumped
            .map(|doc| {
                self.daemon
                    .missing_at_start(&doc, &bin.search_path, &self.map())
            })
            .unwrap_or_default();
        if let Some(fail) = missing_check(
            cc,
            self.daemon,
            &missing,
            &shown.to_string(),
            &asked,
            self.fx,
        ) {
            return Err(fail);
        }
        Ok(check(
            cc.name,
            Status::Ok,
            format!(
                "{asked} accepts {shown} (`{}`), and every handler's {} is there",
                cc.verb, cc.needs
            ),
        ))
    }

    /// What the binary is given to read: the staged copy (kept with it),
    /// the file, or (no main file, the daemon reads its drop-ins alone,
    /// `--config ""`) nothing; and the drop-in directory.
    fn file_to_read(
        &self,
        asked: &str,
    ) -> Result<(PathBuf, Option<StagedCopy>, Option<PathBuf>), Check> {
        let root = self.root;
        let config_dir = self
            .cc
            .drop_ins
            .map(|d| root.at(self.host.parent().unwrap_or(Path::new("/")).join(d)));
        let staged = if self.cc.stages_imports && root.fake {
            StagedCopy::of_containerd(root, &self.host)
        } else {
            None
        };
        let read = if let Some(copy) = &staged {
            copy.0.clone()
        } else if self.file.is_file() {
            self.file.clone()
        } else if config_dir.is_some() {
            // No main file: the daemon reads its drop-ins alone (`--config ""`).
            PathBuf::new()
        } else {
            return Err(check(
                self.cc.name,
                Status::Skip,
                format!(
                    "{}: no file, so {asked} has nothing to check",
                    self.host.display()
                ),
            ));
        };
        Ok((read, staged, config_dir))
    }

    /// The config as the binary reads it, or its refusal.
    fn effective(
        &self,
        bin: &daemon::binary::Binary,
        asked: &str,
        read: &Path,
        config_dir: Option<&Path>,
    ) -> Result<String, Check> {
        let (name, daemon, fx) = (self.cc.name, self.daemon, self.fx);
        let shown = self.host.display();
        match daemon::binary::check_config(bin, read, config_dir) {
            daemon::binary::Verdict::Accepts(text) => Ok(text),
            // Not root: the daemon may refuse for want of root's files alone.
            daemon::binary::Verdict::Refuses(said) if !fx.as_root.is_empty() => {
                Err(not_as_root(name, format!("{asked} refuses {shown}: {said}"), fx))
            }
            daemon::binary::Verdict::Refuses(said) => Err(check(
                name,
                Status::Fail,
                format!("{asked} refuses {shown}: {said}"),
            )
            .fix(format!(
                "{}correct {shown} (the daemon will not start on it); if another {} binary serves it, name that one: userns-hostnet doctor {} PATH",
                fx.as_root,
                daemon.name(),
                daemon::binary::flag(daemon)
            ))),
            daemon::binary::Verdict::NotRun(why) => Err(check(
                name,
                Status::Warn,
                format!("{asked}: cannot run its config check: {why}"),
            )
            .fix(format!(
                "name the binary that serves {shown}: userns-hostnet doctor {} PATH",
                daemon::binary::flag(daemon)
            ))),
        }
    }

    /// containerd 1.x reads a newer file without a word, as a version 2
    /// file whose plugin tables it does not know: none of them counts.
    fn reads_less(&self, asked: &str, dumped: &DocumentMut) -> Result<(), Check> {
        let shown = self.host.display();
        let Ok(own) = toml::read(&self.file) else {
            return Ok(());
        };
        if let Some((theirs, read)) = self.daemon.reads_less(&own, dumped) {
            return Err(check(
                self.cc.name,
                Status::Fail,
                format!("{asked} reads config version {read} at most, and {shown} is version {theirs}: it ignores that file's plugin tables, its runtime handlers included"),
            )
            .fix(format!(
                "run a containerd that reads version {theirs} (if one does and is not running, name it: userns-hostnet doctor --containerd PATH); or write {shown} for this one: {}containerd config default > FILE, then userns-hostnet install containerd --config FILE",
                self.fx.as_root
            )));
        }
        Ok(())
    }
}

/// Under `--root`, containerd would read a config's absolute imports on
/// this host: it reads a temporary copy whose imports name the files
/// under the root instead (removed when dropped).
pub(super) struct StagedCopy(PathBuf);

impl StagedCopy {
    /// `node`: the config as the node names it; relative imports are
    /// relative to its directory, as containerd takes them.
    pub(super) fn of_containerd(root: &Root, node: &Path) -> Option<StagedCopy> {
        let file = root.at(node);
        let mut doc = toml::read(&file).ok()?;
        let dir = node.parent().unwrap_or(Path::new("/"));
        let list = doc.get("imports").and_then(toml_edit::Item::as_array)?;
        let mapped: toml_edit::Array = list
            .iter()
            .filter_map(|v| v.as_str())
            .map(|e| root.at(dir.join(e)).to_string_lossy().into_owned())
            .collect();
        doc["imports"] = toml_edit::value(mapped);
        let path = std::env::temp_dir().join(format!(
            "userns-hostnet-doctor-{}-{}",
            std::process::id(),
            file.file_name()?.to_string_lossy()
        ));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        let copy = StagedCopy(path);
        std::io::Write::write_all(&mut f, doc.to_string().as_bytes()).ok()?;
        Some(copy)
    }
}

impl Drop for StagedCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The handlers' missing binaries as one check: a failure when the daemon
/// will not start or a handler of the wrapper is lost, else a warning.
pub(super) fn missing_check(
    cc: &daemon::ConfigCheck,
    daemon: &dyn daemon::DaemonModule,
    missing: &[daemon::binary::Missing],
    shown: &str,
    asked: &str,
    fx: &Fixes,
) -> Option<Check> {
    if missing.is_empty() {
        return None;
    }
    let list = missing
        .iter()
        .map(daemon::binary::Missing::sentence)
        .collect::<Vec<_>>()
        .join("; ");
    let fatal = missing.iter().any(|m| m.fatal);
    let ours = missing
        .iter()
        .any(|m| m.role != "monitor_path" && daemon::config::is_wrapper(&m.what));
    let by = if asked.is_empty() {
        String::new()
    } else {
        format!(", as {asked} reads it")
    };
    let (status, effect) = match (fatal, ours) {
        (true, _) => (Status::Fail, format!("{} will not start", daemon.name())),
        (false, true) => (
            Status::Fail,
            "the wrapper's handler cannot run a container".to_owned(),
        ),
        (false, false) => (Status::Warn, cc.other_missing.to_owned()),
    };
    Some(
        check(cc.name, status, format!("{shown}{by}: {list}: {effect}")).fix(format!(
            "{}install what is missing, or point the handler at the binary that is there{}",
            fx.as_root, cc.packaged
        )),
    )
}
