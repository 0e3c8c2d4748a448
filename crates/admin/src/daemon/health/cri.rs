//! doctor's `containerd.cri` and `crio.cri`: the kubelet's view of the
//! wrapper's handlers, as the daemon declares them through the CRI
//! (`crictl info`: `runtimeHandlers` and their features), when its socket
//! answers. A handler that is registered in the files but not served
//! (no restart yet), or served without user namespace support, cannot
//! run the feature's pods whatever the files say.

use super::*;

/// How long the daemon has to answer.
const CRICTL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The CRI socket a config names (`grpc.address`, CRI-O's
/// `crio.api.listen`), else the daemon's default.
fn socket(docs: &[DocumentMut], keys: &[&str], default: &str) -> String {
    docs.iter()
        .rev()
        .find_map(|d| daemon::config::dig(d.as_item(), keys)?.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| default.to_owned())
}

/// What the daemon declares for one handler, by name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Declared {
    /// The daemon lists no handler features at all (containerd 1.7).
    NoList,
    /// Not among the handlers the daemon serves.
    NotServed,
    /// Served; whether with user namespaces.
    Served { user_namespaces: bool },
}

/// `crictl info --output json`'s view of `handler`, and whether the
/// daemon declares `user_namespaces_host_network`.
pub(crate) fn declared(info: &serde_json::Value, handler: &str) -> (Declared, bool) {
    let host_network = info["features"]["user_namespaces_host_network"] == true;
    let Some(list) = info["runtimeHandlers"].as_array() else {
        return (Declared::NoList, host_network);
    };
    let found = list
        .iter()
        .find(|h| h["name"] == handler)
        .map(|h| Declared::Served {
            user_namespaces: h["features"]["user_namespaces"] == true,
        });
    (found.unwrap_or(Declared::NotServed), host_network)
}

/// The check over `handlers`, or none when no socket answers (no
/// crictl, no daemon, a fake root).
pub(crate) fn cri_view(
    name: &'static str,
    (docs, default_socket, daemon): (&[DocumentMut], &str, &str),
    keys: &[&str],
    handlers: &[Handler],
    root: &Root,
) -> Option<Check> {
    if root.fake || handlers.is_empty() {
        return None;
    }
    let sock = socket(docs, keys, default_socket);
    if !Path::new(&sock).exists() {
        return None;
    }
    let crictl = in_path("crictl")?;
    let endpoint = format!("unix://{sock}");
    let out = deadline::run_args(
        &crictl,
        &["--runtime-endpoint", &endpoint, "info", "--output", "json"],
        Instant::now() + CRICTL_TIMEOUT,
    )
    .ok()
    .filter(|o| o.status.success())?;
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let mut worst = Status::Ok;
    let mut said = Vec::new();
    for h in handlers {
        let (d, host_network) = declared(&info, &h.name);
        let (status, text) = match d {
            Declared::NoList => (
                Status::Warn,
                format!("{daemon} declares no runtime handlers, so the kubelet finds none with user namespace support for {}", h.name),
            ),
            Declared::NotServed => (
                Status::Warn,
                format!("{daemon} does not serve handler {} yet (restart it to read its config)", h.name),
            ),
            Declared::Served { user_namespaces: false } => (
                Status::Fail,
                format!("{daemon} declares handler {} without user namespace support: the kubelet refuses its pods with hostUsers: false", h.name),
            ),
            Declared::Served { user_namespaces: true } => (
                Status::Ok,
                format!(
                    "{daemon} declares handler {} with user namespace support{}",
                    h.name,
                    if host_network {
                        ", and user_namespaces_host_network"
                    } else {
                        ""
                    }
                ),
            ),
        };
        worst = worst.max(status);
        said.push(text);
    }
    let c = check(
        name,
        worst,
        format!("crictl info on {endpoint}: {}", said.join("; ")),
    );
    Some(if worst == Status::Ok {
        c
    } else {
        c.fix(format!(
            "restart {daemon} after install; a handler served without user namespaces needs a runtime whose `features` lists them and idmapped mounts (doctor's {}.runtime names the handler's)",
            name.split('.').next().unwrap_or(name)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_daemon_declares() {
        let info: serde_json::Value = serde_json::from_str(
            r#"{"features":{"user_namespaces_host_network":true},"runtimeHandlers":[{"name":"uhn","features":{"user_namespaces":true,"recursive_read_only_mounts":true}},{"name":"old","features":{"user_namespaces":false}},{"name":"crun","features":null}]}"#,
        )
        .unwrap();
        assert_eq!(
            declared(&info, "uhn"),
            (
                Declared::Served {
                    user_namespaces: true
                },
                true
            )
        );
        assert_eq!(
            declared(&info, "old").0,
            Declared::Served {
                user_namespaces: false
            }
        );
        assert_eq!(
            declared(&info, "crun").0,
            Declared::Served {
                user_namespaces: false
            }
        );
        assert_eq!(declared(&info, "none").0, Declared::NotServed);
        let v17: serde_json::Value = serde_json::from_str(r#"{"config":{}}"#).unwrap();
        assert_eq!(declared(&v17, "uhn"), (Declared::NoList, false));
    }

    #[test]
    fn the_socket_a_config_names() {
        let d: DocumentMut = "[grpc]\naddress = \"/run/x.sock\"\n".parse().unwrap();
        assert_eq!(
            socket(&[d], &["grpc", "address"], "/run/d.sock"),
            "/run/x.sock"
        );
        assert_eq!(
            socket(&[], &["grpc", "address"], "/run/d.sock"),
            "/run/d.sock"
        );
    }
}
