//! The configuration snippets of the operator documentation are real files
//! under docs/, shown verbatim in docs/registering.md. Each one must parse;
//! the containerd 1.6 one must be what the real containerd 1.6 loads; the
//! YAML ones must say what Kubernetes needs. And the pages hold together:
//! every relative link and anchor resolves, the top pages name only files
//! that exist, every page under docs/ is in the README's index, and the
//! packages ship every page the README links where its links find them.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")
}

fn read(name: &str) -> String {
    let path = docs().join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"))
}

fn parse_toml(name: &str) -> toml::Table {
    read(name)
        .parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("docs/{name} is not valid TOML: {e}"))
}

/// `table[k1][k2]...`, or a panic naming the missing key.
fn at<'a>(table: &'a toml::Table, keys: &[&str], what: &str) -> &'a toml::Value {
    let mut cur: Option<&toml::Value> = None;
    let mut t = table;
    for (i, k) in keys.iter().enumerate() {
        let v = t
            .get(*k)
            .unwrap_or_else(|| panic!("{what}: no key {:?}", &keys[..=i]));
        cur = Some(v);
        if i + 1 < keys.len() {
            t = v
                .as_table()
                .unwrap_or_else(|| panic!("{what}: {:?} is not a table", &keys[..=i]));
        }
    }
    cur.unwrap()
}

fn str_at<'a>(table: &'a toml::Table, keys: &[&str], what: &str) -> &'a str {
    at(table, keys, what)
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {keys:?} is not a string"))
}

const SNIPPETS: &[&str] = &[
    "containerd-v2.toml",
    "containerd-v3.toml",
    "crio-userns-hostnet.conf",
    "runtimeclass.yaml",
    "pod.yaml",
    "containers.conf",
];

const WRAPPER_PATH: &str = "/usr/bin/userns-hostnet-runtime";

/// Every snippet is named in docs/registering.md and shown there exactly as
/// the file says, so the text operators copy is the text that is tested.
#[test]
fn every_snippet_is_shown_verbatim_in_the_docs() {
    let doc = read("registering.md");
    for name in SNIPPETS {
        assert!(
            doc.contains(&format!("`docs/{name}`")),
            "docs/registering.md does not name docs/{name}"
        );
        let body = read(name);
        assert!(
            doc.contains(&body),
            "docs/registering.md does not show docs/{name} verbatim"
        );
    }
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md");
    assert!(
        readme.contains("## Registering the wrapper") && readme.contains("docs/registering.md"),
        "README.md must point to docs/registering.md"
    );
}

fn containerd_v2_handlers(t: &toml::Table, what: &str) {
    let runtimes = [
        "plugins",
        "io.containerd.grpc.v1.cri",
        "containerd",
        "runtimes",
    ];
    for (handler, binary) in [
        ("userns-hostnet", WRAPPER_PATH.to_string()),
        ("userns-hostnet-crun", format!("{WRAPPER_PATH}-crun")),
    ] {
        let mut keys = runtimes.to_vec();
        keys.push(handler);
        let mut rt = keys.clone();
        rt.push("runtime_type");
        assert_eq!(str_at(t, &rt, what), "io.containerd.runc.v2");
        let mut bin = keys.clone();
        bin.extend(["options", "BinaryName"]);
        assert_eq!(str_at(t, &bin, what), binary);
    }
}

#[test]
fn containerd_v2_snippet_parses() {
    let t = parse_toml("containerd-v2.toml");
    assert_eq!(t.get("version").and_then(toml::Value::as_integer), Some(2));
    containerd_v2_handlers(&t, "docs/containerd-v2.toml");
}

fn containerd_config_dump(file: &Path) -> String {
    assert!(
        which("containerd"),
        "`containerd` is missing: install the Debian package containerd"
    );
    let out = Command::new("containerd")
        .arg("--config")
        .arg(file)
        .args(["config", "dump"])
        .output()
        .expect("run containerd config dump");
    assert!(
        out.status.success(),
        "containerd --config {file:?} config dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("config dump is UTF-8")
}

/// The real containerd 1.6 loads the snippet and keeps both handlers with
/// their runtime type and BinaryName.
#[test]
fn containerd_16_loads_the_v2_snippet() {
    let dump = containerd_config_dump(&docs().join("containerd-v2.toml"));
    let t: toml::Table = dump
        .parse()
        .unwrap_or_else(|e| panic!("config dump is not TOML: {e}\n{dump}"));
    containerd_v2_handlers(&t, "containerd config dump of docs/containerd-v2.toml");
}

#[test]
fn containerd_v3_snippet_parses() {
    let t = parse_toml("containerd-v3.toml");
    let what = "docs/containerd-v3.toml";
    assert_eq!(t.get("version").and_then(toml::Value::as_integer), Some(3));
    let base = [
        "plugins",
        "io.containerd.cri.v1.runtime",
        "containerd",
        "runtimes",
        "userns-hostnet",
    ];
    let mut rt = base.to_vec();
    rt.push("runtime_type");
    assert_eq!(str_at(&t, &rt, what), "io.containerd.runc.v2");
    let mut bin = base.to_vec();
    bin.extend(["options", "BinaryName"]);
    assert_eq!(str_at(&t, &bin, what), WRAPPER_PATH);
}

/// As the docs say: containerd 1.6 ignores a version 3 file's CRI tables.
#[test]
fn containerd_16_ignores_the_v3_snippet() {
    let dump = containerd_config_dump(&docs().join("containerd-v3.toml"));
    assert!(
        !dump.contains("userns-hostnet"),
        "containerd 1.6 was expected to ignore the version 3 tables:\n{dump}"
    );
}

#[test]
fn crio_snippet_parses() {
    let t = parse_toml("crio-userns-hostnet.conf");
    let what = "docs/crio-userns-hostnet.conf";
    let base = ["crio", "runtime", "runtimes", "userns-hostnet"];
    let key = |k: &str| {
        let mut v = base.to_vec();
        v.push(k);
        str_at(&t, &v, what).to_string()
    };
    assert_eq!(key("runtime_path"), WRAPPER_PATH);
    assert_eq!(key("runtime_type"), "oci");
    let root = key("runtime_root");
    assert!(root.starts_with("/run/"), "runtime_root {root}");
    assert_ne!(
        root, "/run/userns-hostnet",
        "the wrapper's own cache lives there"
    );
    assert_eq!(
        t.len(),
        1,
        "a drop-in sets only its own runtime: {:?}",
        t.keys().collect::<Vec<_>>()
    );
}

#[test]
fn containers_conf_snippet_parses() {
    let t = parse_toml("containers.conf");
    let what = "docs/containers.conf";
    let list = at(&t, &["engine", "runtimes", "userns-hostnet"], what)
        .as_array()
        .unwrap_or_else(|| panic!("{what}: engine.runtimes.userns-hostnet is not a list"));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].as_str(), Some(WRAPPER_PATH));
    let crun = at(&t, &["engine", "runtimes", "userns-hostnet-crun"], what)
        .as_array()
        .unwrap();
    assert_eq!(
        crun[0].as_str().map(str::to_string),
        Some(format!("{WRAPPER_PATH}-crun"))
    );
}

fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// The YAML files, parsed by PyYAML (Debian's python3-yaml) into JSON.
fn parse_yaml(name: &str) -> Value {
    assert!(
        which("python3"),
        "`python3` is missing: install the Debian packages python3 and python3-yaml"
    );
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(docs().join(name))
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "docs/{name} does not parse as YAML (needs python3-yaml): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python3 printed JSON")
}

#[test]
fn runtimeclass_names_the_handler() {
    let rc = parse_yaml("runtimeclass.yaml");
    assert_eq!(rc["apiVersion"], "node.k8s.io/v1");
    assert_eq!(rc["kind"], "RuntimeClass");
    assert_eq!(rc["metadata"]["name"], "userns-hostnet");
    assert_eq!(
        rc["handler"], "userns-hostnet",
        "the handler is the containerd / CRI-O runtime name"
    );
    let ctd = parse_toml("containerd-v2.toml");
    assert!(at(
        &ctd,
        &[
            "plugins",
            "io.containerd.grpc.v1.cri",
            "containerd",
            "runtimes",
            "userns-hostnet"
        ],
        "containerd-v2"
    )
    .is_table());
}

#[test]
fn pod_uses_host_network_a_user_namespace_and_the_runtime_class() {
    let pod = parse_yaml("pod.yaml");
    assert_eq!(pod["apiVersion"], "v1");
    assert_eq!(pod["kind"], "Pod");
    let spec = &pod["spec"];
    assert_eq!(spec["hostNetwork"], true);
    assert_eq!(spec["hostUsers"], false);
    assert_eq!(spec["runtimeClassName"], "userns-hostnet");
    let containers = spec["containers"].as_array().expect("containers list");
    assert!(!containers.is_empty());
    for c in containers {
        for p in c["ports"].as_array().into_iter().flatten() {
            let port = p["containerPort"].as_u64().expect("containerPort");
            assert!(
                port >= 1024,
                "port {port} is below net.ipv4.ip_unprivileged_port_start's default"
            );
        }
    }
    assert!(
        read("pod.yaml").contains("UserNamespacesHostNetworkSupport"),
        "the pod snippet names the feature gate it needs"
    );
}

const TOOL: &str = common::TOOL;

/// What `install --dry-run` would write: for each file of its diff, the
/// file's name and its new text (the context and added lines; the configs
/// given are small enough for the hunks to hold all of it).
fn dry_run(args: &[&str]) -> Vec<(PathBuf, String)> {
    let out = Command::new(TOOL)
        .args(args)
        .arg("--dry-run")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("+++ ") {
            files.push((PathBuf::from(name), String::new()));
        } else if line.starts_with("--- ") || line.starts_with("@@") {
            continue;
        } else if let Some(body) = line.strip_prefix('+').or_else(|| line.strip_prefix(' ')) {
            if let Some((_, t)) = files.last_mut() {
                t.push_str(body);
                t.push('\n');
            }
        }
    }
    files
}

/// The handler table `keys` of a TOML text.
fn table_of(text: &str, keys: &[&str], what: &str) -> toml::Value {
    let t: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("{what}: not TOML: {e}\n{text}"));
    at(&t, keys, what).clone()
}

/// The shipped snippets say what `install` writes and where the packages
/// put the wrapper: one set of paths (wrapper, CRI-O drop-in name,
/// runtime_root) for docs, install and the packages.
#[test]
fn snippets_agree_with_install_and_the_packages() {
    let dir = tempfile::tempdir().unwrap();
    let handlers = dir.path().join("handlers");
    let handlers = handlers.to_str().unwrap();
    for (name, version, plugin) in [
        ("containerd-v2.toml", 2, "io.containerd.grpc.v1.cri"),
        ("containerd-v3.toml", 3, "io.containerd.cri.v1.runtime"),
    ] {
        let cfg = dir.path().join(format!("v{version}.toml"));
        fs::write(&cfg, format!("version = {version}\n")).unwrap();
        let files = dry_run(&[
            "install",
            "containerd",
            "--config",
            cfg.to_str().unwrap(),
            "--handlers-dir",
            handlers,
        ]);
        assert_eq!(files.len(), 1, "{files:?}");
        let keys = [
            "plugins",
            plugin,
            "containerd",
            "runtimes",
            "userns-hostnet",
        ];
        assert_eq!(
            table_of(&files[0].1, &keys, "install --dry-run"),
            table_of(&read(name), &keys, name),
            "docs/{name} and install disagree"
        );
    }

    let crio_conf = dir.path().join("crio.conf");
    let files = dry_run(&[
        "install",
        "crio",
        "--config",
        crio_conf.to_str().unwrap(),
        "--handlers-dir",
        handlers,
    ]);
    assert_eq!(files.len(), 1, "{files:?}");
    let (path, text) = &files[0];
    let drop_in = path.strip_prefix(dir.path()).unwrap().to_str().unwrap();
    let snippet = read("crio-userns-hostnet.conf");
    assert!(
        snippet.contains(&format!("save as /etc/crio/{drop_in} ")),
        "docs/crio-userns-hostnet.conf does not name {drop_in}:\n{snippet}"
    );
    let keys = ["crio", "runtime", "runtimes", "userns-hostnet"];
    assert_eq!(
        table_of(text, &keys, "install crio --dry-run"),
        table_of(&snippet, &keys, "docs/crio-userns-hostnet.conf"),
    );

    // Both packages put the wrapper (and its crun link) where the snippets
    // name it.
    let cargo: toml::Table =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
    let assets = |k: &str| {
        at(&cargo, &["package", "metadata", k, "assets"], "Cargo.toml")
            .as_array()
            .unwrap()
            .clone()
    };
    let dest = |a: &toml::Value| {
        a.get("dest")
            .or_else(|| a.as_array().and_then(|l| l.get(1)))
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let deb: Vec<String> = assets("deb").iter().map(dest).collect();
    assert!(
        deb.iter()
            .any(|d| format!("/{d}userns-hostnet-runtime") == WRAPPER_PATH),
        "{deb:?}"
    );
    assert!(
        deb.iter()
            .any(|d| format!("/{d}") == format!("{WRAPPER_PATH}-crun")),
        "{deb:?}"
    );
    let rpm: Vec<String> = assets("generate-rpm").iter().map(dest).collect();
    assert!(rpm.iter().any(|d| d == WRAPPER_PATH), "{rpm:?}");
}

/// The operator documentation: the README, DEVELOPMENT.md, ARCHITECTURE.md
/// and every page under docs/.
fn documentation_pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = ["README.md", "DEVELOPMENT.md", "ARCHITECTURE.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    let mut in_docs: Vec<PathBuf> = fs::read_dir(docs())
        .expect("read docs/")
        .map(|entry| entry.expect("read docs/").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    in_docs.sort();
    pages.extend(in_docs);
    pages
}

/// The lines of a Markdown page outside fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// A line without its inline code spans, which hold text, not links.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The anchor GitHub gives a heading: lower case, punctuation other than
/// `-` and `_` removed, spaces made hyphens.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a page: one per heading, a repeated one with `-1`,
/// `-2`... as GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = heading_anchor(&line[hashes..].replace('`', ""));
        let repeats = seen
            .iter()
            .filter(|a| {
                **a == base
                    || a.strip_prefix(&format!("{base}-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        seen.push(if repeats == 0 {
            base.clone()
        } else {
            format!("{base}-{repeats}")
        });
    }
    seen
}

/// The relative link targets of a page (`](target)`), web addresses left out.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for line in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    links
}

#[test]
fn heading_anchors_are_githubs() {
    assert_eq!(
        heading_anchor("A spec the runtimes could read otherwise"),
        "a-spec-the-runtimes-could-read-otherwise"
    );
    assert_eq!(
        heading_anchor("Version matrix (measured)"),
        "version-matrix-measured"
    );
    assert_eq!(
        heading_anchor("What containers saw under /sys"),
        "what-containers-saw-under-sys"
    );
    assert_eq!(heading_anchor("explain: JSON"), "explain-json");
    assert_eq!(
        anchors("# A\n## `hook precreate` (podman only)\n```\n# not a heading\n```\n## A\n#nope\n"),
        ["a", "hook-precreate-podman-only", "a-1"]
    );
    assert_eq!(
        relative_links("[x](docs/a.md#b) `[y](not/a/link.md)` [z](https://example.org) [w](#c)"),
        ["docs/a.md#b", "#c"]
    );
}

/// Every relative link of the documentation names a file or directory that
/// exists, and every anchor a heading of the page it points into: pages
/// move, and a link to a section that left is found here, not by a reader.
#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in documentation_pages() {
        let text = fs::read_to_string(&page).unwrap_or_else(|e| panic!("read {page:?}: {e}"));
        let dir = page.parent().expect("a page has a directory");
        for link in relative_links(&text) {
            checked += 1;
            let (path, anchor) = match link.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                page.clone()
            } else {
                dir.join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if target.extension().is_none_or(|ext| ext != "md") {
                broken.push(format!(
                    "{}: {link}: an anchor into a page that is not Markdown",
                    page.display()
                ));
                continue;
            }
            let target_text =
                fs::read_to_string(&target).unwrap_or_else(|e| panic!("read {target:?}: {e}"));
            if !anchors(&target_text).iter().any(|a| a == anchor) {
                broken.push(format!(
                    "{}: {link}: no heading with anchor #{anchor}",
                    page.display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links in the documentation:\n{}",
        broken.join("\n")
    );
    assert!(
        checked > 50,
        "only {checked} relative links found: is the scan reading the pages?"
    );
}

/// The repository's own paths a page names, in prose, code spans and
/// command lines alike (`tests/e2e_cri.rs`, `kubectl apply -k deploy/`):
/// words whose first component is a top-level directory of the checkout
/// (build output left out). Patterns and placeholders (`*`, `<...>`) are
/// not names of one file.
fn named_paths(text: &str, top: &[String]) -> Vec<String> {
    let mut named = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "`()[],;\"'|".contains(c)) {
        // An anchor, or a Rust path into the file (`tests/common::TOOL`).
        let word = word.split('#').next().unwrap_or_default();
        let word = word.split("::").next().unwrap_or_default();
        let word = word.trim_end_matches(['.', ':']);
        let Some((first, _)) = word.split_once('/') else {
            continue;
        };
        if !top.iter().any(|t| t == first) || word.contains(['*', '<', '>', '{', '$']) {
            continue;
        }
        named.push(word.to_owned());
    }
    named
}

/// The top-level directories of the checkout, build output and hidden
/// ones left out.
fn top_level_directories() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<String> = fs::read_dir(root)
        .expect("read the checkout")
        .map(|e| e.expect("read the checkout"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "target" && !n.starts_with('.'))
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn named_paths_are_the_checkouts() {
    let top = ["docs".to_owned(), "tests".to_owned()];
    assert_eq!(
        named_paths(
            "`tests/e2e_cri.rs` and [x](docs/a.md#b), `kubectl apply -k docs/`. target/x/y, docs/*.md, /usr/share/doc/x, crio.conf.d/a, tests/common::TOOL",
            &top
        ),
        ["tests/e2e_cri.rs", "docs/a.md", "docs/", "tests/common"]
    );
}

/// The README, DEVELOPMENT.md and ARCHITECTURE.md name files of the
/// checkout (tests, scripts, snippets, source directories) that exist: a
/// file moved or removed leaves no page pointing at it.
#[test]
fn the_top_pages_name_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let top = top_level_directories();
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in ["README.md", "DEVELOPMENT.md", "ARCHITECTURE.md"] {
        let text = fs::read_to_string(root.join(page)).unwrap();
        for path in named_paths(&text, &top) {
            checked += 1;
            if !root.join(&path).exists() {
                missing.push(format!("{page}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files named by the documentation that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(
        checked > 30,
        "only {checked} paths found: is the scan reading the pages?"
    );
}

/// The README's index ("Where each topic lives"): its relative link targets.
fn readme_index_links() -> Vec<String> {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = text
        .find("\n## Where each topic lives\n")
        .expect("the README has its index, \"## Where each topic lives\"");
    let section = &text[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    relative_links(&section[..end])
}

/// Every page under docs/ is in the README's index: a page nobody links
/// is a page nobody finds.
#[test]
fn every_page_under_docs_is_in_the_readme_index() {
    let index: Vec<String> = readme_index_links()
        .iter()
        .map(|l| l.split('#').next().unwrap_or_default().to_owned())
        .collect();
    let unlisted: Vec<String> = fs::read_dir(docs())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .filter(|p| !index.contains(p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages under docs/ missing from the README's index (\"Where each topic lives\"): {unlisted:?}"
    );
}

/// Where a package puts the checkout's file `source`, by its asset list
/// (`[source, dest, mode]` for cargo-deb, `{source, dest}` for
/// cargo-generate-rpm; a dest ending in `/` is a directory, a source may
/// end in a `*` pattern of one directory).
fn shipped_at(assets: &[toml::Value], source: &str) -> Option<String> {
    assets.iter().find_map(|a| {
        let field = |key: &str, index: usize| {
            a.get(key)
                .or_else(|| a.as_array().and_then(|l| l.get(index)))
                .and_then(toml::Value::as_str)
        };
        let (from, dest) = (field("source", 0)?, field("dest", 1)?);
        let matches = match from.split_once('*') {
            Some((prefix, suffix)) => {
                source.starts_with(prefix)
                    && source.ends_with(suffix)
                    && !source[prefix.len()..].contains('/')
            }
            None => from == source,
        };
        if !matches {
            return None;
        }
        let dest = dest.trim_start_matches('/');
        Some(if dest.ends_with('/') {
            format!("{dest}{}", source.rsplit('/').next().unwrap_or(source))
        } else {
            dest.to_owned()
        })
    })
}

#[test]
fn shipped_at_reads_both_asset_forms() {
    let assets: toml::Table = r#"
deb = [["README.md", "usr/share/doc/x/README.md", "644"], ["docs/*.md", "usr/share/doc/x/docs/", "644"]]
rpm = [{ source = "docs/*.md", dest = "/usr/share/doc/x/docs/", doc = true }]
"#
    .parse()
    .unwrap();
    let deb = assets["deb"].as_array().unwrap();
    let rpm = assets["rpm"].as_array().unwrap();
    assert_eq!(
        shipped_at(deb, "README.md").as_deref(),
        Some("usr/share/doc/x/README.md")
    );
    assert_eq!(
        shipped_at(deb, "docs/a.md").as_deref(),
        Some("usr/share/doc/x/docs/a.md")
    );
    assert_eq!(
        shipped_at(rpm, "docs/a.md").as_deref(),
        Some("usr/share/doc/x/docs/a.md")
    );
    assert_eq!(shipped_at(rpm, "docs/a/b.md"), None);
    assert_eq!(shipped_at(deb, "ARCHITECTURE.md"), None);
}

/// The packages ship the README and every page it links, laid out as in
/// the checkout beside it, so that its relative links work in
/// /usr/share/doc too.
#[test]
fn the_packages_ship_every_page_the_readme_links() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo: toml::Table = fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let mut pages: Vec<String> = relative_links(&readme)
        .iter()
        .map(|l| l.split('#').next().unwrap_or_default().to_owned())
        .filter(|p| !p.is_empty() && !p.ends_with('/'))
        .collect();
    pages.sort();
    pages.dedup();
    assert!(pages.len() > 10, "only {pages:?} linked from the README");
    let mut wrong = Vec::new();
    for package in ["deb", "generate-rpm"] {
        let assets = at(
            &cargo,
            &["package", "metadata", package, "assets"],
            "Cargo.toml",
        )
        .as_array()
        .unwrap();
        let Some(readme_at) = shipped_at(assets, "README.md") else {
            wrong.push(format!("{package}: README.md is not shipped"));
            continue;
        };
        let doc_dir = readme_at.trim_end_matches("README.md");
        for page in &pages {
            let want = format!("{doc_dir}{page}");
            match shipped_at(assets, page) {
                Some(dest) if dest == want => {}
                Some(dest) => wrong.push(format!("{package}: {page} goes to {dest}, not {want}")),
                None => wrong.push(format!("{package}: {page} is not shipped (want {want})")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the packages break the README's links:\n{}",
        wrong.join("\n")
    );
}
