//! Man pages and shell completions, generated from the one clap definition
//! in [`crate::cli`], so they cannot drift from what the binary accepts.

use crate::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// The binary the pages and completions describe.
pub const BIN: &str = "userns-hostnet";

/// Write `man/userns-hostnet.1`, one `man/userns-hostnet-SUB.1` per visible
/// subcommand (and `userns-hostnet-hook-STAGE.1` per hook stage), and bash,
/// zsh and fish completions under `completions/`, below `out`. Returns the
/// files written.
pub fn write_all(out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let man_dir = out.join("man");
    let comp_dir = out.join("completions");
    std::fs::create_dir_all(&man_dir)?;
    std::fs::create_dir_all(&comp_dir)?;
    // The pages list subcommands by page: no `help` subcommand, which has
    // no page.
    let mut pages_cmd = Cli::command().disable_help_subcommand(true);
    pages_cmd.build();
    let mut written = Vec::new();
    let mut pages = Vec::new();
    collect_pages(&pages_cmd, BIN, &mut pages);
    let names: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    for (name, c) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c).title(&name).render(&mut buf)?;
        buf.extend_from_slice(extra_sections(&name, &names).as_bytes());
        let path = man_dir.join(format!("{name}.1"));
        std::fs::write(&path, buf)?;
        written.push(path);
    }
    for shell in crate::cli::SHELLS {
        let path = comp_dir.join(clap_complete::Generator::file_name(&shell, BIN));
        std::fs::write(&path, completion(shell))?;
        written.push(path);
    }
    Ok(written)
}

/// The completion script for `shell`, repaired: what the package ships and
/// `userns-hostnet completion SHELL` prints.
pub fn completion(shell: Shell) -> String {
    let mut cmd = Cli::command();
    cmd.build();
    let hidden = hidden_options(&cmd);
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut buf);
    repair(shell, &String::from_utf8_lossy(&buf), &hidden)
}

/// `userns-hostnet completion SHELL`: the script on standard output, for
/// installs without the package.
pub fn run_completion(args: &crate::cli::CompletionArgs) -> Result<i32, super::AdminError> {
    super::print(completion(args.shell).as_bytes())?;
    Ok(0)
}

/// Every page: the tool and its visible subcommands, depth first, each
/// named after its path (`userns-hostnet-hook-precreate`).
fn collect_pages(cmd: &clap::Command, name: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((
        name.to_owned(),
        cmd.clone().display_name(name).bin_name(name),
    ));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect_pages(sub, &format!("{name}-{}", sub.get_name()), out);
    }
}

/// (what, why) lines of a man page section.
type Pairs<'a> = &'a [(&'a str, &'a str)];

/// roff for a man page's FILES, ENVIRONMENT, EXIT STATUS, EXAMPLES and SEE
/// ALSO sections: what clap cannot say.
// Long: mostly the man pages' own text, one table per section.
fn extra_sections(page: &str, pages: &[String]) -> String {
    const CONFIG: (&str, &str) = (
        "/etc/userns-hostnet/config.toml",
        "The policies, the real runtime and the decision log, shared with the wrapper (a missing file means the defaults).",
    );
    const ENV_CONFIG: (&str, &str) = (
        "USERNS_HOSTNET_CONFIG",
        "The config file, instead of /etc/userns-hostnet/config.toml.",
    );
    const ENV_RUNTIME: (&str, &str) = (
        "USERNS_HOSTNET_RUNTIME",
        "The real runtime (a name looked up in PATH, or a path), as the wrapper reads it.",
    );
    let sub = page.strip_prefix(BIN).unwrap_or("").trim_start_matches('-');
    let (files, env, status, examples): (Pairs, Pairs, &str, Pairs) = match sub {
        "" => (
            &[
                CONFIG,
                ("/var/log/userns-hostnet.log", "The decision log the wrapper and the hooks append to."),
                ("/etc/userns-hostnet/handlers/", "The links of runtime handlers that keep a runtime binary of their own (install, uninstall)."),
                ("/usr/share/userns-hostnet/hooks.d/userns-hostnet.json", "The createRuntime hook definition, inert until linked into a hooks directory of podman or CRI-O."),
            ],
            &[ENV_CONFIG, ENV_RUNTIME],
            "0 on success; each subcommand's page gives its own meaning of 1; 2 on an error (unreadable input or file, bad arguments).",
            &[
                ("Is this node ready?", "userns-hostnet doctor"),
                ("What would the wrapper do to this bundle?", "userns-hostnet explain /path/to/bundle"),
                ("Register the wrapper with containerd, showing the change first:", "userns-hostnet install containerd --dry-run"),
            ],
        ),
        "explain" => (
            &[CONFIG],
            &[ENV_CONFIG, ENV_RUNTIME],
            "0 the container would start, 1 it would be refused, 2 the input or the config file could not be read.",
            &[
                ("A bundle directory:", "userns-hostnet explain /run/containerd/io.containerd.runtime.v2.task/k8s.io/ID"),
                ("A spec on standard input, as JSON:", "userns-hostnet explain --json - < config.json"),
                ("A live container of containerd's k8s.io namespace, found through runc's state:", "userns-hostnet explain --container ID --root /run/containerd/runc/k8s.io"),
                ("Write the converted spec; the last line says what was written:", "userns-hostnet explain --output converted.json /path/to/bundle"),
            ],
        ),
        "doctor" => (
            &[
                CONFIG,
                ("/etc/containerd/config.toml", "containerd's config and its imports (--containerd-config names another)."),
                ("/etc/crio/crio.conf, /etc/crio/crio.conf.d/", "CRI-O's config and drop-ins (--crio-config names another crio.conf)."),
                ("/run/containerd/containerd.sock, /run/crio/crio.sock", "Whether the daemon runs: without its socket a missing handler is a warning."),
                ("/etc/subuid, /etc/subgid, /etc/passwd", "The kubelet's ID ranges; it reads them only when a kubelet user exists and getsubids is installed."),
                ("/proc/sys/user/max_user_namespaces, /proc/sys/net/ipv4/ip_unprivileged_port_start", "Kernel settings checked."),
                ("/proc/PID/cmdline, /var/lib/kubelet/kubeadm-flags.env, /etc/default/kubelet, /etc/sysconfig/kubelet", "The kubelet's --container-runtime-endpoint: which daemon it uses, so the other is skipped."),
                ("/var/lib/kubelet/config.yaml", "The kubelet's containerRuntimeEndpoint and its UserNamespacesSupport and UserNamespacesHostNetworkSupport gates (a running kubelet's --config names another)."),
            ],
            &[ENV_CONFIG, ENV_RUNTIME, ("PATH", "Where the runtimes, containerd, crio and getsubids are looked for.")],
            "0 when no check fails (warnings allowed), 1 otherwise, 2 on an error.",
            &[
                ("This node:", "userns-hostnet doctor"),
                ("The config files install edited elsewhere, as JSON:", "userns-hostnet doctor --containerd-config /srv/containerd/config.toml --json"),
            ],
        ),
        "install" | "uninstall" => (
            &[
                ("/etc/containerd/config.toml", "Edited in place, comments and order kept, after a copy to config.toml.bak-YYYYmmddHHMMSS."),
                ("/etc/containerd/conf.d/99-userns-hostnet.toml", "The drop-in of --drop-in (containerd 2.0 and later), imported by config.toml."),
                ("/etc/crio/crio.conf.d/99-userns-hostnet.conf", "CRI-O's drop-in."),
                ("/etc/userns-hostnet/handlers/NAME/", "A handler's links to the wrapper and to its own runtime binary."),
            ],
            &[("PATH", "Where a handler's bare BinaryName is looked up, and containerd for --drop-in.")],
            if sub == "install" {
                "0 on success, 2 on an error (nothing is written then; with --json the error is {\"error\": MESSAGE} on standard output)."
            } else {
                "0 when nothing install added is left, 1 when a handler of that name stays registered (a line says why), 2 on an error (with --json, {\"error\": MESSAGE} on standard output)."
            },
            &[
                ("See the change, then make it:", "userns-hostnet install containerd --dry-run"),
                ("CRI-O, with another handler name:", "userns-hostnet install crio --handler userns-hostnet-crun --wrapper /usr/bin/userns-hostnet-runtime-crun"),
                ("Undo it:", "userns-hostnet uninstall containerd"),
            ],
        ),
        "registrations" => (
            &[
                ("/etc/userns-hostnet/handlers/", "Handlers' links to the packaged wrapper."),
                ("/etc/containerd/config.toml, /etc/crio/crio.conf, /etc/containers/containers.conf", "Daemon configs, and their conf.d, crio.conf.d, containers.conf.d drop-ins, read for handlers naming the packaged wrapper."),
                ("/etc/containers/oci/hooks.d, /usr/share/containers/oci/hooks.d", "OCI hook definitions naming the packaged binary."),
                ("/var/lib/userns-hostnet/deploy/state.json", "A deploy's record, when it wrote into /usr/bin."),
            ],
            &[],
            "0 when nothing names the packaged binaries, 1 when something does (one line each, with the command that undoes it), 2 on an error. The package's removal scripts refuse the removal on anything but 0.",
            &[("Before removing the package:", "userns-hostnet registrations")],
        ),
        "version" => (
            &[CONFIG],
            &[ENV_CONFIG, ENV_RUNTIME],
            "0; 2 on an error. A runtime that cannot be found is said in the output, not in the status.",
            &[
                ("What runs on this node:", "userns-hostnet version"),
                ("For an inventory script:", "userns-hostnet version --json"),
            ],
        ),
        "completion" => (
            &[
                ("/usr/share/bash-completion/completions/userns-hostnet", "The bash completion the package installs: the same script."),
                ("/usr/share/zsh/vendor-completions/_userns-hostnet", "The zsh completion the package installs."),
                ("/usr/share/fish/vendor_completions.d/userns-hostnet.fish", "The fish completion the package installs."),
            ],
            &[],
            "0; 2 on an error.",
            &[
                ("bash, for this shell:", "source <(userns-hostnet completion bash)"),
                ("zsh, installed for every user:", "userns-hostnet completion zsh > /usr/local/share/zsh/site-functions/_userns-hostnet"),
                ("fish:", "userns-hostnet completion fish > ~/.config/fish/completions/userns-hostnet.fish"),
            ],
        ),
        s if s == "config" || s.starts_with("config-") => (
            &[CONFIG],
            &[ENV_CONFIG, ENV_RUNTIME],
            "0 on success, 1 when a file is invalid or not trusted (check; set writes nothing then), 2 on an error.",
            &[
                ("Every setting, and where its value comes from:", "userns-hostnet config show"),
                ("Validate an edited copy before putting it in place:", "userns-hostnet config check /tmp/config.toml"),
                ("Accept a /sys whose submounts stay writable, keeping the file's comments:", "userns-hostnet config set sysfs.fallback=ro"),
            ],
        ),
        _ => (
            &[
                CONFIG,
                ("/usr/share/userns-hostnet/hooks.d/userns-hostnet.json", "The createRuntime hook definition; link it into /etc/containers/oci/hooks.d/ (podman) or a CRI-O hooks_dir to enable it."),
                ("/var/log/userns-hostnet.log", "Why a hook refused a container."),
            ],
            &[ENV_CONFIG],
            "0 the container may go on, non-zero it is refused (the reason in the decision log).",
            &[(
                "Enable the createRuntime hook for podman:",
                "ln -s /usr/share/userns-hostnet/hooks.d/userns-hostnet.json /etc/containers/oci/hooks.d/",
            )],
        ),
    };
    let esc = |t: &str| t.replace('\\', "\\e").replace('-', "\\-");
    let mut r = String::new();
    if !files.is_empty() {
        r.push_str(".SH FILES\n");
        for (f, what) in files {
            r.push_str(&format!(".TP\n{}\n{}\n", esc(f), esc(what)));
        }
    }
    r.push_str(".SH ENVIRONMENT\n");
    for (v, what) in env {
        r.push_str(&format!(".TP\n.B {}\n{}\n", esc(v), esc(what)));
    }
    r.push_str(&format!(".SH \"EXIT STATUS\"\n{}\n", esc(status)));
    r.push_str(".SH EXAMPLES\n");
    for (what, command) in examples {
        r.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            esc(what),
            esc(command)
        ));
    }
    let mut see: Vec<String> = pages
        .iter()
        .filter(|p| p.as_str() != page)
        .map(|p| format!(".BR {} (1)", esc(p)))
        .collect();
    see.push(".BR userns\\-hostnet\\-runtime (1)".to_owned());
    r.push_str(".SH \"SEE ALSO\"\n");
    r.push_str(&see.join(",\n"));
    r.push('\n');
    r
}

/// The long names of the hidden (test-only) options of every subcommand.
fn hidden_options(cmd: &clap::Command) -> Vec<String> {
    let mut out: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect();
    for sub in cmd.get_subcommands() {
        out.extend(hidden_options(sub));
    }
    out.sort();
    out.dedup();
    out
}

/// What clap_complete gets wrong for this binary, put right:
/// - bash: the case arms that pick a subcommand's options spell the
///   hyphenated binary name `userns__subcmd__hostnet`, while the loop that
///   finds the subcommand sets `userns__hostnet`, so nothing completed past
///   the first word;
/// - every shell: hidden options are offered; they are for tests only.
fn repair(shell: Shell, text: &str, hidden: &[String]) -> String {
    let fn_name = BIN.replace('-', "__");
    let wrong = BIN.replace('-', "__subcmd__");
    let text = match shell {
        Shell::Bash => text.replace(&wrong, &fn_name),
        _ => text.to_owned(),
    };
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.lines() {
        let t = line.trim();
        if skipping {
            skipping = t != ";;";
            continue;
        }
        if hidden.iter().any(|h| {
            let long = format!("--{h}");
            match shell {
                // A case arm for the option's value: up to its `;;`.
                Shell::Bash if t == format!("{long})") => {
                    skipping = true;
                    true
                }
                Shell::Zsh => {
                    t.starts_with(&format!("'{long}=")) || t.starts_with(&format!("'{long}["))
                }
                Shell::Fish => t.contains(&format!(" -l {h} ")) || t.ends_with(&format!(" -l {h}")),
                _ => false,
            }
        }) {
            continue;
        }
        let mut line = line.to_owned();
        if shell == Shell::Bash && t.starts_with("opts=\"") {
            for h in hidden {
                line = line.replace(&format!(" --{h} "), " ");
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
