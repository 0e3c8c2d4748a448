//! Man pages and completions come from the clap definition: one page for
//! the tool and one per subcommand, and bash, zsh and fish completions.

use std::path::Path;

fn non_empty(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(!text.trim().is_empty(), "{} is empty", p.display());
    text
}

#[test]
fn pages_and_completions_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let files = userns_hostnet_admin::docs::write_all(dir.path()).unwrap();
    let man = dir.path().join("man");
    let top = non_empty(&man.join("userns-hostnet.1"));
    assert!(top.contains(".TH userns-hostnet 1"), "{top}");
    for sub in [
        "explain",
        "doctor",
        "install",
        "uninstall",
        "hook",
        "deploy",
        "registrations",
        "version",
        "completion",
    ] {
        let page = non_empty(&man.join(format!("userns-hostnet-{sub}.1")));
        assert!(
            page.contains(&format!("userns\\-hostnet\\-{sub}")),
            "{sub}: {page}"
        );
    }
    let explain = non_empty(&man.join("userns-hostnet-explain.1"));
    assert!(explain.contains("\\-\\-json"), "{explain}");
    let comp = dir.path().join("completions");
    let bash = non_empty(&comp.join("userns-hostnet.bash"));
    assert!(
        bash.contains("doctor") && bash.contains("--drop-in"),
        "{bash}"
    );
    let zsh = non_empty(&comp.join("_userns-hostnet"));
    assert!(zsh.contains("#compdef userns-hostnet"), "{zsh}");
    let fish = non_empty(&comp.join("userns-hostnet.fish"));
    assert!(fish.contains("complete -c userns-hostnet"), "{fish}");
    // The config subcommand has a page, and one per subcommand of its own.
    assert_eq!(files.len(), 17 + 3, "{files:?}");
}

/// Every page has the sections an operator looks for, and names only pages
/// that are generated (or the wrapper's, shipped beside them): no
/// `userns-hostnet-help(1)`, no page per hook stage that is not there.
#[test]
fn pages_have_real_sections_and_name_only_real_pages() {
    let dir = tempfile::tempdir().unwrap();
    userns_hostnet_admin::docs::write_all(dir.path()).unwrap();
    let man = dir.path().join("man");
    let mut pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".1")
                .to_owned()
        })
        .collect();
    pages.sort();
    assert_eq!(pages.len(), 17, "{pages:?}");
    let runtime_page =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/userns-hostnet-runtime.1");
    let mut texts: Vec<(String, String)> = pages
        .iter()
        .map(|p| (p.clone(), non_empty(&man.join(format!("{p}.1")))))
        .collect();
    texts.push(("userns-hostnet-runtime".into(), non_empty(&runtime_page)));
    for (page, text) in &texts {
        for section in [
            ".SH FILES",
            ".SH ENVIRONMENT",
            ".SH \"EXIT STATUS\"",
            ".SH EXAMPLES",
            ".SH \"SEE ALSO\"",
        ] {
            let plain = section.replace('"', "");
            assert!(
                text.lines().any(|l| l == section || l == plain),
                "{page} has no {section}"
            );
        }
        let unescaped = text.replace("\\-", "-");
        for (at, _) in unescaped.match_indices("(1)") {
            let before = unescaped[..at].trim_end();
            let name: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if name.starts_with("userns-hostnet") {
                assert!(
                    name == "userns-hostnet-runtime" || pages.contains(&name),
                    "{page} names {name}(1), which is never generated"
                );
            }
        }
    }
}

/// What bash completes for the words typed so far (the last one being
/// completed), with the generated script loaded the way bash-completion
/// loads it: `complete -p` names the function, called as bash calls it.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        r#"source '{}'
spec=$(complete -p userns-hostnet) || exit 3
fn=$(sed -n 's/.*-F \([^ ]*\) .*/\1/p' <<<"$spec")
[ -n "$fn" ] || exit 4
COMP_WORDS=({})
COMP_CWORD={cword}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$fn" userns-hostnet '{}' '{prev}'
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script.display(),
        quoted.join(" "),
        words[cword],
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash is installed");
    assert!(
        out.status.success(),
        "{words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Completion past the first word: a subcommand's options and values.
/// clap_complete's bash script, for a hyphenated binary name, completed
/// nothing after the subcommand.
#[test]
fn bash_completes_past_the_first_word() {
    let dir = tempfile::tempdir().unwrap();
    userns_hostnet_admin::docs::write_all(dir.path()).unwrap();
    let script = dir.path().join("completions/userns-hostnet.bash");
    let first = bash_complete(&script, &["userns-hostnet", "do"]);
    assert_eq!(first, ["doctor"]);
    let doctor = bash_complete(&script, &["userns-hostnet", "doctor", "--"]);
    for want in [
        "--json",
        "--runtime",
        "--containerd-config",
        "--crio-config",
    ] {
        assert!(doctor.iter().any(|o| o == want), "{want}: {doctor:?}");
    }
    let install = bash_complete(&script, &["userns-hostnet", "install", "--dr"]);
    assert_eq!(install, ["--drop-in", "--dry-run"]);
    let daemons = bash_complete(&script, &["userns-hostnet", "uninstall", "c"]);
    assert!(
        daemons.iter().any(|d| d == "containerd") && daemons.iter().any(|d| d == "crio"),
        "{daemons:?}"
    );
    let hook = bash_complete(&script, &["userns-hostnet", "hook", "pre"]);
    assert_eq!(hook, ["precreate"]);
    // The test-only options are offered nowhere.
    for sub in ["doctor", "install", "uninstall"] {
        let all = bash_complete(&script, &["userns-hostnet", sub, "--"]);
        assert!(
            !all.iter()
                .any(|o| o == "--root-dir" || o == "--handlers-dir"),
            "{sub}: {all:?}"
        );
    }
}

/// No shell's completions offer the hidden test-only options.
#[test]
fn no_completion_offers_a_hidden_option() {
    let dir = tempfile::tempdir().unwrap();
    userns_hostnet_admin::docs::write_all(dir.path()).unwrap();
    for f in [
        "userns-hostnet.bash",
        "_userns-hostnet",
        "userns-hostnet.fish",
    ] {
        let text = non_empty(&dir.path().join("completions").join(f));
        for hidden in ["root-dir", "handlers-dir"] {
            assert!(!text.contains(hidden), "{f} offers {hidden}:\n{text}");
        }
    }
    let page = non_empty(&dir.path().join("man/userns-hostnet-doctor.1"));
    assert!(!page.contains("root\\-dir"), "{page}");
}

/// `userns-hostnet completion SHELL` prints the very script the package
/// ships (the generated, repaired file), and that script completes it.
#[test]
fn completion_subcommand_prints_the_shipped_script() {
    let dir = tempfile::tempdir().unwrap();
    userns_hostnet_admin::docs::write_all(dir.path()).unwrap();
    let comp = dir.path().join("completions");
    for (shell, file) in [
        ("bash", "userns-hostnet.bash"),
        ("zsh", "_userns-hostnet"),
        ("fish", "userns-hostnet.fish"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_userns-hostnet"))
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {out:?}");
        assert!(out.stderr.is_empty(), "{shell}: {out:?}");
        let shipped = non_empty(&comp.join(file));
        assert!(
            out.stdout == shipped.as_bytes(),
            "{shell}: the output differs from {file}"
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_userns-hostnet"))
        .args(["completion", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let script = comp.join("userns-hostnet.bash");
    let shells = bash_complete(&script, &["userns-hostnet", "completion", ""]);
    assert_eq!(shells, ["-h", "--help", "bash", "zsh", "fish"]);
}
