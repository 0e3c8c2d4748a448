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
    let files = userns_hostnet::admin::docs::write_all(dir.path()).unwrap();
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
    assert_eq!(files.len(), 7 + 3, "{files:?}");
}
