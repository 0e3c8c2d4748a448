//! `userns-hostnet config`: the wrapper's config file as the wrapper reads
//! it. `show` gives each setting's effective value and where it comes
//! from, `default` the shipped file, `check` validates a file, `set` edits
//! one setting keeping the file's comments. Every read goes through
//! [`userns_hostnet::config::load_from`], so the trust rules and the validation are
//! the wrapper's own.

use crate::cli::ConfigCommand;
use serde::Serialize;
use std::path::{Path, PathBuf};
use toml_edit::DocumentMut;
use userns_hostnet::config::{self, ConfigError, NodeConfig, SHIPPED};
use userns_hostnet::runtime::RUNTIME_ENV;

/// Every setting, as a dotted key: `section.name`, or `name` at the top.
pub const KEYS: &[&str] = &[
    "runtime",
    "sysfs.fallback",
    "capabilities.net",
    "sysctl.net",
    "idmap.allow_host_root",
    "idmap.allowed_ranges",
    "idmap.require_process_user_mapped",
    "cgroup.own_view",
    "cgroup.allow_writable_v1",
    "log.file",
    "log.level",
];

/// Why `config` stops, besides a file it finds invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigCmdError {
    #[error(transparent)]
    Admin(#[from] super::AdminError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Toml { path: PathBuf, message: String },
    #[error("{0:?}: not key=value")]
    NotAssignment(String),
    #[error("{key}: unknown setting; the settings are {}", KEYS.join(", "))]
    UnknownKey { key: String },
}

/// Run the subcommand; the exit status.
pub fn run(cmd: &ConfigCommand) -> Result<i32, ConfigCmdError> {
    match cmd {
        ConfigCommand::Show { json } => show(*json),
        ConfigCommand::Default => {
            super::print(SHIPPED.as_bytes())?;
            Ok(0)
        }
        ConfigCommand::Check { file } => check(file),
        ConfigCommand::Set { assignment, file } => set(assignment, file.as_deref()),
    }
}

/// Where a setting's effective value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "name")]
pub enum Source {
    /// The config file (its path).
    File(PathBuf),
    /// An environment variable that wins over the file.
    Env(String),
    /// The built-in default.
    Default,
}

#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    pub key: &'static str,
    /// As TOML, for the text output.
    #[serde(skip)]
    pub value: String,
    /// As a JSON value (`null`: not set, with no default value).
    #[serde(rename = "value")]
    pub json: serde_json::Value,
    pub source: Source,
}

impl Setting {
    fn new(key: &'static str, value: String, source: Source) -> Setting {
        let json = toml_to_json(&value);
        Setting {
            key,
            value,
            json,
            source,
        }
    }
}

/// A TOML value's text as the JSON value it stands for; text that is
/// no TOML value (a note such as "(not set: ...)") is `null`.
pub fn toml_to_json(text: &str) -> serde_json::Value {
    serde::Deserialize::deserialize(::toml::de::ValueDeserializer::new(text))
        .unwrap_or(serde_json::Value::Null)
}

#[derive(Debug, Serialize)]
struct Shown {
    /// The file the wrapper reads.
    file: PathBuf,
    /// Why that file: `USERNS_HOSTNET_CONFIG`, or the default path.
    file_from: Source,
    /// Whether it exists; without it the defaults apply.
    exists: bool,
    settings: Vec<Setting>,
}

/// Each setting's effective value and its source, for the file at `path`
/// (already loaded as `config`) and a runtime named by the environment.
pub fn effective(
    path: &Path,
    text: Option<&str>,
    runtime_env: Option<&str>,
) -> Result<Vec<Setting>, ConfigCmdError> {
    let doc = match text {
        Some(t) => Some(parse_doc(path, t)?),
        None => None,
    };
    let defaults = NodeConfig::default();
    Ok(KEYS
        .iter()
        .map(|&key| {
            if key == "runtime" {
                if let Some(r) = runtime_env {
                    return Setting::new(
                        key,
                        toml_edit::Value::from(r).to_string(),
                        Source::Env(RUNTIME_ENV.to_owned()),
                    );
                }
            }
            match doc.as_ref().and_then(|d| lookup(d, key)) {
                Some(v) => Setting::new(key, v, Source::File(path.to_owned())),
                None => Setting::new(key, default_value(&defaults, key), Source::Default),
            }
        })
        .collect())
}

fn parse_doc(path: &Path, text: &str) -> Result<DocumentMut, ConfigCmdError> {
    text.parse()
        .map_err(|e: toml_edit::TomlError| ConfigCmdError::Toml {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })
}

/// A setting's value as the file writes it, when it does.
fn lookup(doc: &DocumentMut, key: &str) -> Option<String> {
    let item = match key.split_once('.') {
        Some((section, name)) => doc.get(section)?.get(name)?,
        None => doc.get(key)?,
    };
    let mut v = item.as_value()?.clone();
    v.decor_mut().clear();
    Some(v.to_string())
}

/// The built-in default of a setting, as TOML.
fn default_value(d: &NodeConfig, key: &str) -> String {
    let json = |v: serde_json::Result<serde_json::Value>| match v {
        Ok(serde_json::Value::String(s)) => toml_edit::Value::from(s).to_string(),
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    };
    let p = &d.policy;
    match key {
        "runtime" => {
            let list: toml_edit::Array = d.runtime.iter().map(String::as_str).collect();
            list.to_string()
        }
        "sysfs.fallback" => json(serde_json::to_value(p.sysfs_fallback)),
        "capabilities.net" => json(serde_json::to_value(p.net_capabilities)),
        "sysctl.net" => json(serde_json::to_value(p.net_sysctls)),
        "idmap.allow_host_root" => p.idmap.allow_host_root.to_string(),
        // Not set: any range.
        "idmap.allowed_ranges" => "(not set: any host range)".to_owned(),
        "idmap.require_process_user_mapped" => p.idmap.require_process_user_mapped.to_string(),
        "cgroup.own_view" => p.own_cgroup_view.to_string(),
        "cgroup.allow_writable_v1" => p.allow_writable_cgroup_v1.to_string(),
        "log.file" => toml_edit::Value::from(d.log.file.display().to_string()).to_string(),
        "log.level" => {
            toml_edit::Value::from(format!("{:?}", d.log.level).to_lowercase()).to_string()
        }
        _ => String::new(),
    }
}

/// The text output: `key = value  # source`.
pub fn render(file: &Path, file_from: &Source, exists: bool, settings: &[Setting]) -> String {
    let mut s = format!(
        "# {} ({}){}\n",
        file.display(),
        match file_from {
            Source::Env(v) => format!("named by {v}"),
            _ => "the default path".to_owned(),
        },
        if exists {
            ""
        } else {
            ": no such file, the defaults apply"
        }
    );
    let width = settings
        .iter()
        .map(|c| c.key.len() + c.value.len() + 3)
        .max()
        .unwrap_or(0);
    for c in settings {
        let from = match &c.source {
            Source::File(p) => p.display().to_string(),
            Source::Env(v) => format!("environment {v}"),
            Source::Default => "default".to_owned(),
        };
        let line = format!("{} = {}", c.key, c.value);
        s.push_str(&format!("{line:<width$}  # {from}\n"));
    }
    s
}

fn show(json: bool) -> Result<i32, ConfigCmdError> {
    let env = std::env::var_os(config::CONFIG_ENV).filter(|v| !v.is_empty());
    let file_from = match env {
        Some(_) => Source::Env(config::CONFIG_ENV.to_owned()),
        None => Source::Default,
    };
    let path = config::path_from_env();
    // The wrapper's own read: the trust rules and the validation.
    let loaded = config::load_from(&path)?;
    let text = match &loaded.source {
        Some(p) => Some(
            std::fs::read_to_string(p).map_err(|source| ConfigCmdError::Read {
                path: p.clone(),
                source,
            })?,
        ),
        None => None,
    };
    let runtime_env = std::env::var(RUNTIME_ENV).ok().filter(|v| !v.is_empty());
    let settings = effective(&path, text.as_deref(), runtime_env.as_deref())?;
    let shown = Shown {
        file: path,
        file_from,
        exists: text.is_some(),
        settings,
    };
    super::report(json, &shown, |s| {
        render(&s.file, &s.file_from, s.exists, &s.settings)
    })?;
    Ok(0)
}

/// Validate a file as the wrapper would read it: one line, exit 1, when
/// it would refuse it.
fn check(file: &Path) -> Result<i32, ConfigCmdError> {
    if !file.exists() {
        return Err(ConfigCmdError::Read {
            path: file.to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    match config::load_from(file) {
        Ok(_) => {
            super::print(format!("{}: ok\n", file.display()).as_bytes())?;
            Ok(0)
        }
        Err(e @ ConfigError::Read { .. }) => Err(e.into()),
        Err(e) => {
            eprintln!("userns-hostnet: {e}");
            Ok(1)
        }
    }
}

/// `key=value`: the key checked against [`KEYS`], the value read as TOML
/// (a bare word is a string: `log.level=debug`).
pub fn parse_assignment(
    assignment: &str,
) -> Result<(&'static str, toml_edit::Value), ConfigCmdError> {
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| ConfigCmdError::NotAssignment(assignment.to_owned()))?;
    let key = key.trim();
    let known = KEYS
        .iter()
        .find(|k| **k == key)
        .ok_or_else(|| ConfigCmdError::UnknownKey {
            key: key.to_owned(),
        })?;
    let value = value.trim();
    let parsed = value
        .parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(value));
    Ok((known, parsed))
}

/// `text` with `key` set to `value`, every other line kept. A setting
/// already there is changed in place; a new one goes into its table when
/// the file has it, else where the file documents it (after the
/// commented-out block holding `# [section]`, or `# runtime =` for a
/// top-level key, as the shipped file has them), else a top-level key
/// after the file's header comment and a section's key into a new table
/// at the end.
pub fn edited(
    path: &Path,
    text: &str,
    key: &str,
    value: toml_edit::Value,
) -> Result<String, ConfigCmdError> {
    let doc = parse_doc(path, text)?;
    let present = match key.split_once('.') {
        Some((section, name)) => doc.get(section).map(|t| t.get(name).is_some()),
        None => Some(doc.contains_key(key)),
    };
    // Not in the file, nor its table: placed by its documentation.
    if present.is_none() || present == Some(false) && !key.contains('.') {
        if let Some(placed) = placed_by_comments(text, key, &value) {
            // Only when every other setting reads as it did.
            let same = parse_doc(path, &placed).is_ok_and(|d| {
                lookup(&d, key).is_some()
                    && KEYS
                        .iter()
                        .filter(|k| **k != key)
                        .all(|k| lookup(&d, k) == lookup(&doc, k))
            });
            if same {
                return Ok(placed);
            }
        }
    }
    edited_in_doc(path, doc, key, value)
}

/// The line number (0-based) after which a new `key` goes, by the text's
/// comments: the end of the comment block holding `# [section]` (or `#
/// key =` for a top-level key), else, for a top-level key, the end of the
/// file's header comment. A top-level key must come before every table.
fn comment_anchor(lines: &[&str], key: &str) -> Option<usize> {
    let first_table = lines
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .unwrap_or(lines.len());
    let bare = |l: &str| l.trim_start_matches('#').trim().to_owned();
    let start = match key.split_once('.') {
        Some((section, _)) => lines
            .iter()
            .position(|l| l.trim_start().starts_with('#') && bare(l) == format!("[{section}]"))?,
        None => {
            let documented = lines[..first_table].iter().position(|l| {
                l.trim_start().starts_with('#')
                    && bare(l)
                        .strip_prefix(key)
                        .is_some_and(|rest| rest.trim_start().starts_with('='))
            });
            match documented {
                Some(at) => at,
                // The header comment: the file's first block of comments.
                None if lines
                    .first()
                    .is_some_and(|l| l.trim_start().starts_with('#')) =>
                {
                    0
                }
                None => return None,
            }
        }
    };
    // The block ends at the first line that is not a comment.
    let end = lines[start..]
        .iter()
        .position(|l| !l.trim_start().starts_with('#'))
        .map_or(lines.len(), |n| start + n);
    (key.contains('.') || end <= first_table).then_some(end)
}

fn placed_by_comments(text: &str, key: &str, value: &toml_edit::Value) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = comment_anchor(&lines, key)?;
    let mut value = value.clone();
    value.decor_mut().clear();
    let mut out: Vec<String> = lines[..at].iter().map(|l| (*l).to_owned()).collect();
    let name = match key.split_once('.') {
        Some((section, name)) => {
            out.push(format!("[{section}]"));
            name
        }
        None => key,
    };
    out.push(format!("{name} = {value}"));
    out.extend(lines[at..].iter().map(|l| (*l).to_owned()));
    Some(out.join("\n") + "\n")
}

/// The edit on the parsed document: in place, or in its table, or a new
/// table at the end.
fn edited_in_doc(
    path: &Path,
    mut doc: DocumentMut,
    key: &str,
    value: toml_edit::Value,
) -> Result<String, ConfigCmdError> {
    let (table, name) = match key.split_once('.') {
        Some((section, name)) => {
            // Comments after the last setting (all of a file whose settings
            // are commented out, as shipped) stay above a section added at
            // the end.
            if !doc.contains_key(section) {
                let trailing = doc.trailing().as_str().unwrap_or("").to_owned();
                let mut table = toml_edit::Table::new();
                if !trailing.is_empty() {
                    table.decor_mut().set_prefix(format!("{trailing}\n"));
                    doc.set_trailing("");
                }
                doc.insert(section, toml_edit::Item::Table(table));
            }
            let table = doc[section]
                .as_table_like_mut()
                .ok_or_else(|| ConfigCmdError::Toml {
                    path: path.to_owned(),
                    message: format!("{section} is not a table"),
                })?;
            (table, name)
        }
        None => (doc.as_table_mut() as &mut dyn toml_edit::TableLike, key),
    };
    // A setting already there keeps its comments, before it and after.
    match table.get_mut(name).and_then(toml_edit::Item::as_value_mut) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = value;
            *old.decor_mut() = decor;
        }
        None => {
            table.insert(name, toml_edit::Item::Value(value.decorated(" ", "")));
        }
    }
    Ok(doc.to_string())
}

fn set(assignment: &str, file: Option<&Path>) -> Result<i32, ConfigCmdError> {
    let path = file.map_or_else(config::path_from_env, Path::to_owned);
    let (key, value) = parse_assignment(assignment)?;
    // An existing file is edited only if the wrapper trusts it (an
    // invalid one may be mended by this very edit).
    let text = match config::load_from(&path) {
        Ok(c) if c.source.is_none() => String::new(),
        Ok(_) | Err(ConfigError::Invalid { .. }) => {
            std::fs::read_to_string(&path).map_err(|source| ConfigCmdError::Read {
                path: path.clone(),
                source,
            })?
        }
        Err(e) => return Err(e.into()),
    };
    let new = edited(&path, &text, key, value)?;
    // The wrapper's own validation of the result, before anything is
    // written.
    if let Err(e) = config::parse(&new, &path) {
        eprintln!("userns-hostnet: {e}");
        return Ok(1);
    }
    let set_in = |text: &str| parse_doc(&path, text).ok().and_then(|d| lookup(&d, key));
    let before = set_in(&text).map_or_else(
        || {
            format!(
                "not set, the default {}",
                default_value(&NodeConfig::default(), key)
            )
        },
        |v| format!("was {v}"),
    );
    let after = set_in(&new).unwrap_or_default();
    if new == text {
        super::print(
            format!(
                "{}: {key} = {after} already; nothing written\n",
                path.display()
            )
            .as_bytes(),
        )?;
        return Ok(0);
    }
    super::files::write_atomic(&path, new.as_bytes()).map_err(|source| {
        super::AdminError::Write {
            path: path.clone(),
            source,
        }
    })?;
    super::print(format!("{}: {key} = {after} ({before})\n", path.display()).as_bytes())?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("/etc/userns-hostnet/config.toml")
    }

    #[test]
    fn every_key_is_a_setting_the_wrapper_reads() {
        // Each key, set to its default, parses; a key not in KEYS would
        // be refused by the wrapper as unknown.
        let d = NodeConfig::default();
        for key in KEYS {
            if *key == "idmap.allowed_ranges" {
                continue;
            }
            let (k, v) = parse_assignment(&format!("{key}={}", default_value(&d, key))).unwrap();
            let text = edited(p(), "", k, v).unwrap();
            let c = config::parse(&text, p()).unwrap_or_else(|e| panic!("{key}: {e}\n{text}"));
            assert_eq!(c.policy, d.policy, "{key}");
            assert_eq!(c.runtime, d.runtime, "{key}");
            assert_eq!(c.log, d.log, "{key}");
        }
    }

    #[test]
    fn sources() {
        let text = "# mine\n[log]\nlevel = \"debug\" # louder\n";
        let s = effective(p(), Some(text), Some("crun")).unwrap();
        let get = |k: &str| s.iter().find(|c| c.key == k).unwrap().clone();
        assert_eq!(get("log.level").value, "\"debug\"");
        assert_eq!(get("log.level").source, Source::File(p().to_owned()));
        assert_eq!(get("runtime").value, "\"crun\"");
        assert_eq!(get("runtime").source, Source::Env(RUNTIME_ENV.to_owned()));
        assert_eq!(get("sysfs.fallback").value, "\"refuse\"");
        assert_eq!(get("sysfs.fallback").source, Source::Default);
        assert_eq!(get("log.file").value, "\"/var/log/userns-hostnet.log\"");
        let s = effective(p(), None, None).unwrap();
        assert_eq!(s[0].value, "[\"runc\", \"crun\"]");
        assert!(s.iter().all(|c| c.source == Source::Default));
    }

    #[test]
    fn an_edit_keeps_comments_and_order() {
        let text = "# top\nruntime = \"runc\" # pinned\n\n[log]\n# how much\nlevel = \"info\"\n";
        let (k, v) = parse_assignment("log.level=debug").unwrap();
        assert_eq!(
            edited(p(), text, k, v).unwrap(),
            "# top\nruntime = \"runc\" # pinned\n\n[log]\n# how much\nlevel = \"debug\"\n"
        );
        let (k, v) = parse_assignment("sysfs.fallback = \"ro\"").unwrap();
        assert_eq!(
            edited(p(), text, k, v).unwrap(),
            format!("{text}\n[sysfs]\nfallback = \"ro\"\n")
        );
        let (k, v) = parse_assignment("runtime=[\"crun\", \"runc\"]").unwrap();
        assert!(edited(p(), text, k, v)
            .unwrap()
            .starts_with("# top\nruntime = [\"crun\", \"runc\"] # pinned\n"));
    }

    #[test]
    fn a_new_key_goes_where_the_file_documents_it() {
        let header = "# my header\n# more\n\n";
        // A top-level key with no example: after the header comment.
        let (k, v) = parse_assignment("runtime=crun").unwrap();
        assert_eq!(
            edited(p(), &format!("{header}[log]\nlevel = \"info\"\n"), k, v).unwrap(),
            "# my header\n# more\nruntime = \"crun\"\n\n[log]\nlevel = \"info\"\n"
        );
        // Its example after a table: a top-level key cannot go there.
        let text = "[log]\nlevel = \"info\"\n# runtime = \"runc\"\n";
        let (k, v) = parse_assignment("runtime=crun").unwrap();
        let out = edited(p(), text, k, v).unwrap();
        assert!(out.starts_with("runtime = \"crun\"\n"), "{out}");
        // A documented section whose header would capture a setting below
        // it: the new table goes at the end instead.
        let text = "# [sysfs]\n# fallback = \"refuse\"\n\nruntime = \"runc\"\n";
        let (k, v) = parse_assignment("sysfs.fallback=ro").unwrap();
        let out = edited(p(), text, k, v).unwrap();
        assert_eq!(config::parse(&out, p()).unwrap().runtime, ["runc"], "{out}");
        assert!(out.ends_with("[sysfs]\nfallback = \"ro\"\n"), "{out}");
    }

    #[test]
    fn shown_values_are_json_values() {
        use serde_json::json;
        assert_eq!(toml_to_json("\"refuse\""), json!("refuse"));
        assert_eq!(
            toml_to_json("[\"runc\", \"crun\"]"),
            json!(["runc", "crun"])
        );
        assert_eq!(toml_to_json("false"), json!(false));
        assert_eq!(
            toml_to_json("{ subid_user = \"kubelet\" }"),
            json!({"subid_user": "kubelet"})
        );
        assert_eq!(
            toml_to_json("[{ start = 100000, count = 65536 }]"),
            json!([{"start": 100000, "count": 65536}])
        );
        assert_eq!(
            toml_to_json("(not set: any host range)"),
            serde_json::Value::Null
        );
    }

    #[test]
    fn unknown_keys_and_bad_assignments() {
        assert_eq!(
            parse_assignment("log.levle=debug").unwrap_err().to_string(),
            format!(
                "log.levle: unknown setting; the settings are {}",
                KEYS.join(", ")
            )
        );
        assert!(matches!(
            parse_assignment("log.level"),
            Err(ConfigCmdError::NotAssignment(_))
        ));
    }
}
