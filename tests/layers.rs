//! The layering ARCHITECTURE.md describes, checked on the source: the
//! module import graph read from the workspace's crates (`src/**/*.rs`,
//! `crates/engine/src` as `engine::..`, `crates/admin/src` as `admin::..`;
//! `crate::`, `super::` and `self::` paths and those that start with a
//! crate's name (`userns_hostnet::`, `userns_hostnet_engine::`), in `use`
//! lines and in code) has no circle, the engine imports nothing outside
//! itself, `src/sys/` nothing but `src/sys/`, and no entry point is
//! imported by another module. And the
//! engine crate stays pure: no dependency outside an allow-list, no
//! `std` module that reaches the system.
//!
//! A module and the files below it count as one: a child reading its
//! parent (`super::`) or a parent its child is no circle and no layering
//! breach.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Groups of modules that import each other in a circle today, being
/// untangled on another branch: edges between members of one group are
/// let pass. A group that no longer holds a circle fails the test, so the
/// list only shrinks.
const KNOWN_CIRCLES: &[(&[&str], &str)] = &[];

/// The crates besides the root one (`src/`): the module prefix their
/// files get, and their source directory.
const CRATES: &[(&str, &str)] = &[
    ("engine", "crates/engine/src"),
    ("admin", "crates/admin/src"),
];

/// Each crate's name in a path, and the module prefix of its files (the
/// root crate's are unprefixed).
const CRATE_NAMES: &[(&str, &str)] = &[
    ("userns_hostnet", ""),
    ("userns_hostnet_engine", "engine"),
    ("userns_hostnet_admin", "admin"),
];

/// Pure helpers below both the engine and the system layer (which do not
/// import each other): either may import them; they import nothing.
const PURE_LEAVES: &[&str] = &["engine::path"];

/// The only crates the engine may depend on: none of them reads a file,
/// the environment, the clock or the network.
const ENGINE_DEPENDENCIES: &[&str] = &["memchr", "oci-spec", "serde", "serde_json", "thiserror"];

/// The `std` modules that reach the system, which the engine's code (its
/// tests aside) does not name.
const SYSTEM_MODULES: &[&str] = &["env", "fs", "net", "os", "process", "thread"];

/// Single import edges that break a layer rule today, being removed on
/// another branch: `(from, to, why)`. An entry whose edge is gone fails the
/// test.
const KNOWN_EDGES: &[(&str, &str, &str)] = &[];

/// Modules a binary starts in: only a crate's `src/bin` and their own children may
/// import them (the admin tool's modules import each other, but not the
/// hook's).
const ENTRY_POINTS: &[&str] = &["wrapper", "admin", "admin::hook"];

#[test]
fn the_source_keeps_its_layers() {
    let files = workspace_sources();
    for (module, crate_dir) in [
        ("engine::decision", "crates/engine/src"),
        ("admin::doctor", "crates/admin/src"),
        ("admin::hook", "crates/admin/src"),
        ("wrapper", "src"),
    ] {
        assert!(
            files.iter().any(|(m, _)| m == module),
            "no {module} among {} files read under {crate_dir}: the module paths are wrong",
            files.len(),
        );
    }
    let graph = Graph::read(&files);
    // Paths that name a crate: the admin tool's into the root crate, the
    // root crate's into the engine.
    for (from, to) in [
        ("admin::explain", "plan"),
        ("admin::hook", "plan"),
        ("plan", "engine"),
    ] {
        assert!(
            graph.has_edge(from, to),
            "no edge {from} -> {to} read: the reader misses paths that name a crate"
        );
    }
    let count: usize = graph.edges.values().map(BTreeSet::len).sum();
    assert!(
        count > 100,
        "only {count} import edges read: the reader misses imports"
    );
    let mut allowed: BTreeSet<(String, String)> = KNOWN_EDGES
        .iter()
        .map(|(a, b, _)| (a.to_string(), b.to_string()))
        .collect();
    let mut stale = Vec::new();
    for (from, to, why) in KNOWN_EDGES {
        if !graph.has_edge(from, to) {
            stale.push(format!(
                "the known edge {from} -> {to} ({why}) is gone: delete its entry in KNOWN_EDGES"
            ));
        }
    }
    for (group, why) in KNOWN_CIRCLES {
        let within: BTreeSet<(String, String)> = graph
            .edges
            .iter()
            .filter(|(from, _)| group.contains(&from.as_str()))
            .flat_map(|(from, tos)| {
                tos.iter()
                    .filter(|to| group.contains(&to.as_str()))
                    .map(|to| (from.clone(), to.clone()))
            })
            .collect();
        let outside: BTreeSet<(String, String)> = graph
            .edges
            .iter()
            .flat_map(|(f, tos)| tos.iter().map(|t| (f.clone(), t.clone())))
            .filter(|e| !within.contains(e))
            .collect();
        // With every edge but the group's let pass, a circle must be left.
        if graph
            .breaches(&outside)
            .iter()
            .all(|p| !p.starts_with("import circle"))
        {
            stale.push(format!(
                "the known circle of {group:?} ({why}) is gone: delete its entry in KNOWN_CIRCLES"
            ));
        }
        allowed.extend(within);
    }
    let mut problems = graph.breaches(&allowed);
    problems.extend(stale);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_hand_made_circle_is_found_with_its_path() {
    let files = [
        ("a", "use crate::b::Thing;\nfn f() {}"),
        ("b", "pub struct Thing; fn g() { crate::c::h() }"),
        (
            "c",
            "use super::a; // a child of the root, so super is the root\n",
        ),
        // A child reading its parent is no circle.
        ("a::child", "use super::*;\nuse crate::a::x;"),
        // Paths in comments and strings are not imports.
        (
            "d",
            "// crate::a\nconst S: &str = \"crate::b\"; const R: &str = r#\"crate::c\"#;",
        ),
    ];
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    let graph = Graph::read(&files);
    assert!(graph.has_edge("c", "a"), "{:?}", graph.edges);
    assert!(!graph.has_edge("a::child", "a"), "{:?}", graph.edges);
    assert!(
        graph.edges.get("d").is_none_or(|e| e.is_empty()),
        "{:?}",
        graph.edges
    );
    let problems = graph.breaches(&BTreeSet::new());
    assert_eq!(problems, ["import circle: a -> b -> c -> a"]);
    // Allowing one edge of it breaks the circle.
    let allowed = BTreeSet::from([("c".to_string(), "a".to_string())]);
    assert!(graph.breaches(&allowed).is_empty());
}

#[test]
fn hand_made_layer_breaches_are_found() {
    let files = [
        ("engine", "pub mod rules;"),
        (
            "engine::rules",
            "use crate::Spec; use userns_hostnet::config::Policy;",
        ),
        ("config", ""),
        ("sys", "use crate::sys::atomic; fn f() { crate::host::x() }"),
        ("sys::atomic", "fn f() { userns_hostnet_engine::path::x() }"),
        ("host", "use userns_hostnet_engine::{Spec, path};"),
        ("engine::path", ""),
        ("wrapper", "use crate::config;"),
        ("admin", "pub mod hook;"),
        (
            "admin::explain",
            "use crate::hook::stage; use userns_hostnet::wrapper;",
        ),
        ("admin::hook", "use userns_hostnet::{config, host};"),
        ("admin::hook::stage", "use super::*;"),
    ];
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    let graph = Graph::read(&files);
    // A crate named by its name is read as a path from its root.
    assert!(graph.has_edge("host", "engine"), "{:?}", graph.edges);
    assert!(graph.has_edge("host", "engine::path"), "{:?}", graph.edges);
    assert!(graph.has_edge("admin::hook", "config"), "{:?}", graph.edges);
    assert_eq!(
        graph.breaches(&BTreeSet::new()),
        [
            "admin::explain imports admin::hook::stage: an entry point is imported only by src/bin and its own children",
            "admin::explain imports wrapper: an entry point is imported only by src/bin and its own children",
            "engine::rules imports config: the engine imports nothing outside crates/engine/",
            "sys imports host: src/sys/ imports nothing but src/sys/",
        ]
    );
}

#[test]
fn the_engine_crate_depends_on_nothing_that_does_io() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    let mut section = String::new();
    let mut dependencies = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or_default().trim();
            dependencies.push(name.to_string());
        } else if section.starts_with("[dependencies.") || section.starts_with("[target.") {
            panic!(
                "{}: {section}: list the engine's dependencies as lines of [dependencies]",
                manifest.display()
            );
        }
    }
    assert!(
        dependencies.iter().any(|d| d == "serde_json"),
        "no serde_json among {dependencies:?} read from {}: the reader misses them",
        manifest.display()
    );
    let outside: Vec<&String> = dependencies
        .iter()
        .filter(|d| !ENGINE_DEPENDENCIES.contains(&d.as_str()))
        .collect();
    assert!(
        outside.is_empty(),
        "the engine depends on {outside:?}, outside {ENGINE_DEPENDENCIES:?}: code that does I/O belongs in the root crate"
    );

    let mut uses = Vec::new();
    let mut read = 0;
    for (module, source) in workspace_sources() {
        if !is_within(&module, "engine") || module.ends_with("::tests") {
            continue;
        }
        // A file's tests come last, after its `#[cfg(test)]`.
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        read += 1;
        for path in std_paths(&tokens(code)) {
            if path
                .get(1)
                .is_some_and(|m| SYSTEM_MODULES.contains(&m.as_str()))
            {
                uses.push(format!("{module} uses {}", path.join("::")));
            }
        }
    }
    assert!(read > 20, "only {read} files of the engine read");
    assert!(
        uses.is_empty(),
        "the engine does no I/O:\n{}",
        uses.join("\n")
    );
}

#[test]
fn no_crate_names_another_by_another_name() {
    let files = workspace_sources();
    let found = aliases(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn hand_made_aliases_are_found() {
    let files = [
        ("engine", "use crate as engine; pub use spec::Spec;"),
        (
            "",
            "pub use userns_hostnet_engine as engine;\npub use userns_hostnet_engine::path;",
        ),
        ("admin", "use userns_hostnet::{config, host};"),
        (
            "admin::doctor",
            "use userns_hostnet::config; pub use crate::check::Check;",
        ),
        (
            "admin::hook",
            "pub use userns_hostnet::sys::mountinfo::{parse, Mount};",
        ),
    ];
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    assert_eq!(
        aliases(&files),
        [
            "engine renames crate: name its modules from `crate::`",
            "src/lib.rs renames userns_hostnet_engine: name it by its crate",
            "src/lib.rs re-exports userns_hostnet_engine: name it by its crate",
            "admin brings in userns_hostnet at its crate root, where its children would name it as their own: name it by its crate",
            "admin::hook re-exports userns_hostnet: name it by its crate",
        ]
    );
}

/// Every place a crate names itself or another crate under another name:
/// `use crate as ..`, `use <crate> as ..`, a `pub use` of another crate's
/// path, or a crate root's `use` of another crate's path (which its
/// children would reach as `crate::..`).
fn aliases(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (module, source) in files {
        let is_root = module.is_empty() || CRATES.iter().any(|(prefix, _)| prefix == module);
        let module = if module.is_empty() {
            "src/lib.rs"
        } else {
            module.as_str()
        };
        let tokens = tokens(source);
        let mut depth = 0usize;
        for (i, token) in tokens.iter().enumerate() {
            match token {
                Token::Open => depth += 1,
                Token::Close => depth = depth.saturating_sub(1),
                Token::Ident(w) if w == "use" => {
                    let Some(Token::Ident(first)) = tokens.get(i + 1) else {
                        continue;
                    };
                    let other = CRATE_NAMES.iter().any(|(name, _)| name == first);
                    let renamed = tokens.get(i + 2) == Some(&Token::Ident("as".to_string()));
                    let public = i
                        .checked_sub(1)
                        .is_some_and(|p| tokens[p] == Token::Ident("pub".to_string()));
                    if first == "crate" && renamed {
                        out.push(format!(
                            "{module} renames crate: name its modules from `crate::`"
                        ));
                    } else if other && renamed {
                        out.push(format!("{module} renames {first}: name it by its crate"));
                    } else if other && public {
                        out.push(format!("{module} re-exports {first}: name it by its crate"));
                    } else if other && is_root && depth == 0 {
                        out.push(format!(
                            "{module} brings in {first} at its crate root, where its children would name it as their own: name it by its crate"
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn std_paths_are_found_in_use_trees() {
    let code = "use std::{fs, collections::BTreeMap}; fn f() { std::process::exit(1) } // std::net\nconst S: &str = \"std::env\";";
    let found: Vec<String> = std_paths(&tokens(code))
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "std::fs",
            "std::collections::BTreeMap",
            "std::process::exit"
        ]
    );
}

/// Every `std::` path in `tokens`, use trees expanded.
fn std_paths(tokens: &[Token]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Ident("std".to_string())
            && tokens.get(i + 1) == Some(&Token::Colons)
            && !matches!(i.checked_sub(1).map(|p| &tokens[p]), Some(Token::Colons))
        {
            let (found, end) = tree(tokens, i, Vec::new());
            out.extend(found);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Every `.rs` file of the workspace's crates as (module path, source).
fn workspace_sources() -> Vec<(String, String)> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for (prefix, dir) in [("", "src")].iter().chain(CRATES) {
        let root = top.join(dir);
        collect(prefix, &root, &root, &mut files);
    }
    files
}

/// Every `.rs` file under `dir` as (module path, source), its module path
/// below `prefix`; `src/bin` left out (binaries are no modules of the
/// library).
fn collect(prefix: &str, root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path.strip_prefix(root).expect("below src");
        if rel == Path::new("bin") {
            continue;
        }
        if path.is_dir() {
            collect(prefix, root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let module = match (prefix, module_of(rel)) {
                (prefix, module) if module.is_empty() => prefix.to_string(),
                ("", module) => module,
                (prefix, module) => format!("{prefix}::{module}"),
            };
            out.push((module, source));
        }
    }
}

/// `lib.rs` is the root (""), `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is
/// `a::b`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

fn is_within(module: &str, ancestor: &str) -> bool {
    ancestor.is_empty()
        || module == ancestor
        || module
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with("::"))
}

struct Graph {
    modules: BTreeSet<String>,
    /// from -> to, between file modules, with no edge between a module and
    /// one within it.
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn read(files: &[(String, String)]) -> Graph {
        let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, source) in files {
            let crate_root: Vec<String> = CRATES
                .iter()
                .find(|(prefix, _)| is_within(module, prefix))
                .map(|(prefix, _)| vec![prefix.to_string()])
                .unwrap_or_default();
            for path in paths(module, &crate_root, &tokens(source)) {
                // The longest prefix that is a file module: an item's path
                // names the module that holds it.
                let target = (1..=path.len())
                    .rev()
                    .map(|n| path[..n].join("::"))
                    .find(|m| modules.contains(m))
                    .unwrap_or_default();
                if is_within(&target, module) || is_within(module, &target) {
                    continue;
                }
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
        Graph { modules, edges }
    }

    fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges.get(from).is_some_and(|e| e.contains(to))
    }

    /// Every rule broken, one line each: layer breaches first, then each
    /// circle with its path.
    fn breaches(&self, allowed: &BTreeSet<(String, String)>) -> Vec<String> {
        let mut out = Vec::new();
        let live = |from: &str, to: &str| !allowed.contains(&(from.to_string(), to.to_string()));
        for (from, tos) in &self.edges {
            if PURE_LEAVES.contains(&from.as_str()) {
                out.push(format!(
                    "{from} imports {}: a pure helper shared by the engine and sys imports nothing",
                    tos.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            for to in tos.iter().filter(|to| live(from, to)) {
                if PURE_LEAVES.contains(&to.as_str()) {
                    continue;
                }
                if is_within(from, "engine") && !is_within(to, "engine") {
                    out.push(format!(
                        "{from} imports {to}: the engine imports nothing outside crates/engine/"
                    ));
                }
                if is_within(from, "sys") && !is_within(to, "sys") {
                    out.push(format!(
                        "{from} imports {to}: src/sys/ imports nothing but src/sys/"
                    ));
                }
                for entry in ENTRY_POINTS {
                    if is_within(to, entry) && !is_within(from, entry) {
                        out.push(format!(
                            "{from} imports {to}: an entry point is imported only by src/bin and its own children"
                        ));
                    }
                }
            }
        }
        let mut seen = BTreeSet::new();
        for start in &self.modules {
            if let Some(circle) = self.circle_from(start, &live, &seen) {
                out.push(format!("import circle: {}", circle.join(" -> ")));
                seen.extend(circle);
            }
        }
        out
    }

    /// The shortest path from `start` back to itself over live edges
    /// (breadth first), unless it passes a module of a circle already
    /// reported.
    fn circle_from(
        &self,
        start: &str,
        live: &dyn Fn(&str, &str) -> bool,
        seen: &BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if seen.contains(start) {
            return None;
        }
        let mut came_from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.to_string()]);
        while let Some(at) = queue.pop_front() {
            for next in self.edges.get(&at).into_iter().flatten() {
                if !live(&at, next) || seen.contains(next) {
                    continue;
                }
                if next == start {
                    // Back from `at` to `start`, then turned around.
                    let mut path = vec![at.clone()];
                    while path.last().map(String::as_str) != Some(start) {
                        let step = &came_from[path.last().expect("not empty")];
                        path.push(step.clone());
                    }
                    path.reverse();
                    path.push(start.to_string());
                    return Some(path);
                }
                if !came_from.contains_key(next) {
                    came_from.insert(next.clone(), at.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        None
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// The tokens that make paths, with comments, strings and characters left
/// out.
fn tokens(source: &str) -> Vec<Token> {
    let s: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&s, i + 1);
        } else if c == '\'' {
            // A character literal, or a lifetime (no closing quote).
            if next == Some('\\') {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let begin = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[begin..i].iter().collect();
            // Raw and byte strings: r"..", r#".."#, b"..", br#".."#.
            if matches!(word.as_str(), "r" | "br" | "b" | "c" | "cr")
                && i < s.len()
                && (s[i] == '"' || s[i] == '#')
            {
                let mut hashes = 0;
                while i < s.len() && s[i] == '#' {
                    hashes += 1;
                    i += 1;
                }
                if i < s.len() && s[i] == '"' {
                    if word.contains('r') {
                        i = skip_raw(&s, i + 1, hashes);
                    } else {
                        i = skip_string(&s, i + 1);
                    }
                    continue;
                }
            }
            if word == "b" && i < s.len() && s[i] == '\'' {
                continue; // b'x': the quote is read next as a character.
            }
            out.push(Token::Ident(word));
        } else if c == ':' && next == Some(':') {
            out.push(Token::Colons);
            i += 2;
        } else {
            // White space does not break a path; any other character does.
            if !c.is_whitespace() {
                out.push(match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    '*' => Token::Star,
                    _ => Token::Other,
                });
            }
            i += 1;
        }
    }
    out
}

/// The index after the closing quote of a string whose body starts at `i`.
fn skip_string(s: &[char], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index after `"` and `hashes` `#` closing a raw string.
fn skip_raw(s: &[char], mut i: usize, hashes: usize) -> usize {
    while i < s.len() {
        if s[i] == '"' && (0..hashes).all(|k| s.get(i + 1 + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Every crate-internal path in `tokens` of the file module `module`, as
/// absolute segments (use trees expanded), with `crate` read as
/// `crate_root`, a crate's name (`CRATE_NAMES`) as that crate's root, and
/// `super` and `self` resolved against the inline module (`mod tests {
/// .. }`) they stand in.
fn paths(module: &str, crate_root: &[String], tokens: &[Token]) -> Vec<Vec<String>> {
    let base: Vec<String> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(String::from).collect()
    };
    // Inline modules open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Ident(w) if w == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(w)
                if CRATE_NAMES.iter().any(|(name, _)| name == w)
                    && tokens.get(i + 1) == Some(&Token::Colons)
                    && !matches!(i.checked_sub(1).map(|p| &tokens[p]), Some(Token::Colons)) =>
            {
                let prefix = CRATE_NAMES
                    .iter()
                    .find(|(name, _)| name == w)
                    .map(|(_, prefix)| *prefix)
                    .unwrap_or_default();
                let root: Vec<String> = prefix
                    .split("::")
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect();
                let (found, end) = tree(tokens, i + 2, root);
                out.extend(found);
                i = end;
                continue;
            }
            Token::Ident(w)
                if (w == "crate" || w == "super" || w == "self")
                    && tokens.get(i + 1) == Some(&Token::Colons)
                    && !matches!(i.checked_sub(1).map(|p| &tokens[p]), Some(Token::Colons)) =>
            {
                let mut here = base.clone();
                here.extend(inline.iter().map(|(n, _)| n.clone()));
                let (found, end) = tree(tokens, i, Vec::new());
                for segments in found {
                    if let Some(abs) = absolute(&here, crate_root, &segments) {
                        out.push(abs);
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The paths of the use tree (or plain path) starting at `i`, each prefixed
/// by `prefix`, and the index after it.
fn tree(tokens: &[Token], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        match tokens.get(i) {
            Some(Token::Ident(w)) => {
                path.push(w.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::Colons) {
                    i += 1;
                    continue;
                }
                return (vec![path], i);
            }
            Some(Token::Star) => return (vec![path], i + 1),
            Some(Token::Open) => {
                let mut all = Vec::new();
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Close) => return (all, i + 1),
                        Some(Token::Comma) => i += 1,
                        None => return (all, i),
                        _ => {
                            let (found, end) = tree(tokens, i, path.clone());
                            all.extend(found);
                            // `a as b`: skip to the next comma or brace.
                            i = end;
                            while !matches!(
                                tokens.get(i),
                                Some(Token::Comma) | Some(Token::Close) | None
                            ) {
                                i += 1;
                            }
                        }
                    }
                }
            }
            _ => return (vec![path], i),
        }
    }
}

/// `segments` (starting with crate, super or self) from the module `here`
/// of the crate whose root is `crate_root`.
fn absolute(here: &[String], crate_root: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String> = here.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at = crate_root.to_vec();
            rest = &rest[1..];
        }
        _ => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        at.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
    }
    at.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(at)
}

/// The admin tool's folders (the modules at the top of
/// `crates/admin/src`, `""` its `lib.rs`), from the top down. A module
/// imports only folders of a tier below its own: peers do not import each
/// other, and no arrow runs back up. On top the commands; below them the
/// two that others read (deploy's state, which `registrations` reads; the
/// docs' names, which `version` prints); then install, which deploy
/// registers through; the command line, whose value lists come from the
/// daemon registry; the daemons (`daemon/`: the registry, one folder per
/// daemon, what registering and doctor's checks of them share); the pure
/// helpers at the bottom.
const ADMIN_TIERS: &[&[&str]] = &[
    &[
        "configcmd",
        "doctor",
        "explain",
        "hook",
        "registrations",
        "version",
    ],
    &["deploy", "docs"],
    &["install"],
    &["cli"],
    &["daemon"],
    &["deploy_api", "files", "matrix"],
    &["", "check"],
];

/// The daemons' names, as code names them: a string, or a type or
/// variant.
const DAEMON_NAMES: &[&str] = &["containerd", "crio", "cri-o", "podman"];

/// Where a daemon may be told apart by its name: its own folder, and the
/// registry that lists them.
const DAEMON_HOMES: &[&str] = &[
    "admin::daemon::containerd",
    "admin::daemon::crio",
    "admin::daemon::podman",
];
const DAEMON_REGISTRY: &str = "admin::daemon";

/// The admin tool's folder of a module: `admin::daemon::crio::plan` is in
/// `daemon`, `admin` (lib.rs) in `""`; `None` outside the admin crate.
fn admin_folder(module: &str) -> Option<&str> {
    if module == "admin" {
        return Some("");
    }
    let rest = module.strip_prefix("admin::")?;
    Some(rest.split("::").next().unwrap_or(rest))
}

/// Every import that runs sideways or back up between the admin tool's
/// folders ([`ADMIN_TIERS`]), and every folder the tiers do not place.
fn admin_arrows_up(graph: &Graph) -> Vec<String> {
    let tier = |folder: &str| ADMIN_TIERS.iter().position(|t| t.contains(&folder));
    let mut out = Vec::new();
    let folders: BTreeSet<&str> = graph
        .modules
        .iter()
        .filter_map(|m| admin_folder(m))
        .collect();
    for f in folders.iter().filter(|f| tier(f).is_none()) {
        out.push(format!(
            "admin folder {f:?} has no place in ADMIN_TIERS: put it in the tier below everything that imports it"
        ));
    }
    for (from, tos) in &graph.edges {
        let Some(a) = admin_folder(from) else {
            continue;
        };
        for to in tos {
            let Some(b) = admin_folder(to) else { continue };
            if a == b {
                continue;
            }
            if let (Some(ta), Some(tb)) = (tier(a), tier(b)) {
                if ta >= tb {
                    out.push(format!(
                        "{from} imports {to}: an arrow {} between the admin tool's folders ({a:?} is in tier {ta}, {b:?} in tier {tb} of ADMIN_TIERS)",
                        if ta == tb { "sideways" } else { "back up" }
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn no_arrow_runs_back_up_between_the_admin_folders() {
    let graph = Graph::read(&workspace_sources());
    // The reader sees the arrows that must be there.
    for (from, to) in [
        ("admin::install", "admin::daemon"),
        ("admin::doctor", "admin::daemon::health"),
        ("admin::cli", "admin::daemon"),
    ] {
        assert!(graph.has_edge(from, to), "no edge {from} -> {to} read");
    }
    let problems = admin_arrows_up(&graph);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn hand_made_arrows_back_up_are_found() {
    let files = [
        ("admin", ""),
        ("admin::install", "use crate::daemon::Registration;"),
        (
            "admin::daemon",
            "use crate::install::edit::Plan; use super::check;",
        ),
        ("admin::daemon::crio::plan", "use crate::cli::InstallArgs;"),
        ("admin::cli", "use crate::daemon::ALL;"),
        ("admin::check", ""),
        ("admin::doctor", "use crate::deploy::x;"),
        ("admin::deploy", "use crate::docs::BIN;"),
        ("admin::docs", ""),
        ("admin::newcomer", ""),
    ];
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    assert_eq!(
        admin_arrows_up(&Graph::read(&files)),
        [
            "admin folder \"newcomer\" has no place in ADMIN_TIERS: put it in the tier below everything that imports it",
            "admin::daemon imports admin::install: an arrow back up between the admin tool's folders (\"daemon\" is in tier 4, \"install\" in tier 2 of ADMIN_TIERS)",
            "admin::daemon::crio::plan imports admin::cli: an arrow back up between the admin tool's folders (\"daemon\" is in tier 4, \"cli\" in tier 3 of ADMIN_TIERS)",
            "admin::deploy imports admin::docs: an arrow sideways between the admin tool's folders (\"deploy\" is in tier 1, \"docs\" in tier 1 of ADMIN_TIERS)",
        ]
    );
}

/// A word of code: a name, a string literal (its text), or punctuation
/// (`=>`, `==`, `!=`, `::` as one).
#[derive(Debug, PartialEq)]
enum Lexeme {
    Name(String),
    Str(String),
    Punct(String),
}

/// The code's lexemes, comments left out, strings kept.
fn lexemes(source: &str) -> Vec<Lexeme> {
    let s: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let end = source_index_after(&s, i + 2, &['*', '/']);
            i = end;
        } else if c == '"' {
            let end = skip_string(&s, i + 1);
            out.push(Lexeme::Str(s[i + 1..end - 1].iter().collect()));
            i = end;
        } else if c == '\'' {
            if next == Some('\\') {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let begin = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[begin..i].iter().collect();
            if matches!(word.as_str(), "r" | "br") && i < s.len() && (s[i] == '"' || s[i] == '#') {
                let mut hashes = 0;
                while i < s.len() && s[i] == '#' {
                    hashes += 1;
                    i += 1;
                }
                if i < s.len() && s[i] == '"' {
                    let end = skip_raw(&s, i + 1, hashes);
                    out.push(Lexeme::Str(s[i + 1..end - 1 - hashes].iter().collect()));
                    i = end;
                    continue;
                }
            }
            out.push(Lexeme::Name(word));
        } else if !c.is_whitespace() {
            let two: String = [c, next.unwrap_or(' ')].iter().collect();
            if matches!(two.as_str(), "=>" | "==" | "!=" | "::") {
                out.push(Lexeme::Punct(two));
                i += 2;
            } else {
                out.push(Lexeme::Punct(c.to_string()));
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The index after the first `end` sequence from `i` (or the end).
fn source_index_after(s: &[char], mut i: usize, end: &[char]) -> usize {
    while i < s.len() {
        if s[i..].starts_with(end) {
            return i + end.len();
        }
        i += 1;
    }
    s.len()
}

/// Is this lexeme a daemon's name: a string that is one (`"crio"`,
/// `"CRI-O"`), or a capitalized name that is one (`Crio`, `Containerd`),
/// which is how a type or an enum variant names it (a lowercase one is a
/// module or a variable). A path string that contains one
/// (`/etc/containerd/config.toml`) is not.
fn names_a_daemon(l: &Lexeme) -> bool {
    match l {
        Lexeme::Str(s) => DAEMON_NAMES.contains(&s.to_lowercase().as_str()),
        Lexeme::Name(n) => {
            n.starts_with(|c: char| c.is_ascii_uppercase())
                && DAEMON_NAMES
                    .iter()
                    .any(|d| d.replace('-', "") == n.to_lowercase().replace('_', ""))
        }
        Lexeme::Punct(_) => false,
    }
}

/// Where code branches on which daemon it has: a daemon's name as a
/// pattern (a `match` arm, `if let`/`let .. else`, `matches!`: the name,
/// with any fields in braces or parentheses, followed by `=>`, `|`, `=`
/// or `)`) or compared (`==`, `!=` before or after it). A name merely
/// used (a daemon's module, a call) is not branching on it.
fn daemon_branches(source: &str) -> Vec<String> {
    let lx = lexemes(source);
    let punct = |i: usize| match lx.get(i) {
        Some(Lexeme::Punct(p)) => p.as_str(),
        _ => "",
    };
    let mut out = Vec::new();
    for (i, l) in lx.iter().enumerate() {
        if !names_a_daemon(l) {
            continue;
        }
        // The name is the last segment of its path.
        if punct(i + 1) == "::" {
            continue;
        }
        let mut start = i;
        while start >= 2 && punct(start - 1) == "::" {
            start -= 2;
        }
        // Skip fields after a variant: `X { .. }`, `X(..)`.
        let mut after = i + 1;
        if matches!(punct(after), "{" | "(") {
            let mut depth = 0;
            while after < lx.len() {
                match punct(after) {
                    "{" | "(" => depth += 1,
                    "}" | ")" => depth -= 1,
                    _ => {}
                }
                after += 1;
                if depth == 0 {
                    break;
                }
            }
        }
        let before = if start > 0 { punct(start - 1) } else { "" };
        let is_pattern = matches!(punct(after), "=>" | "|" | "=")
            || (before == "|" && matches!(punct(after), "=>" | ")"));
        let compared = matches!(punct(after), "==" | "!=") || matches!(before, "==" | "!=");
        if is_pattern || compared {
            out.push(match l {
                Lexeme::Str(s) => format!("{s:?}"),
                Lexeme::Name(n) => n.clone(),
                Lexeme::Punct(p) => p.clone(),
            });
        }
    }
    out
}

#[test]
fn only_a_daemons_folder_and_the_registry_branch_on_its_name() {
    let files = workspace_sources();
    let mut problems = Vec::new();
    let mut read = 0;
    for (module, source) in &files {
        if admin_folder(module).is_none()
            || module == DAEMON_REGISTRY
            || DAEMON_HOMES.iter().any(|h| is_within(module, h))
        {
            continue;
        }
        read += 1;
        for name in daemon_branches(source) {
            problems.push(format!(
                "{module} branches on the daemon {name}: what differs per daemon belongs to its DaemonModule (crates/admin/src/daemon/<name>/), reached through the registry daemon::ALL"
            ));
        }
    }
    assert!(read > 40, "only {read} admin files read");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn hand_made_daemon_branches_are_found() {
    let branching = r#"
        fn f(d: Daemon, h: &Handler, n: &str) {
            match d { Daemon::Containerd => 1, Daemon::Crio | Daemon::Podman => 2 };
            let Handler::Podman { binaries } = h else { return };
            if d == Engine::Crio {}
            if "containerd" != n {}
            match n { "CRI-O" => {}, _ => {} }
            if let Cri::Containerd(v) = x {}
            matches!(d, Daemon::Containerd | Daemon::Crio);
        }
    "#;
    assert_eq!(
        daemon_branches(branching),
        [
            "Containerd",
            "Crio",
            "Podman",
            "Podman",
            "Crio",
            "\"containerd\"",
            "\"CRI-O\"",
            "Containerd",
            "Containerd",
            "Crio"
        ]
    );
    // Naming is not branching: modules, calls, paths inside strings,
    // a name in a comment or a table.
    let naming = r##"
        use crate::daemon::containerd::node::CONFIG; // match d { Crio => 1 }
        fn g() {
            let p = "/etc/containerd/config.toml";
            let m = &daemon::crio::Crio;
            crio::live::runroot(&files);
            let named = [("containerd", a), ("crio", b)];
            let crio = podman | containerd;
            let s = r#"Containerd => 1"#;
        }
    "##;
    assert_eq!(daemon_branches(naming), Vec::<String>::new());
}
