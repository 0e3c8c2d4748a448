//! The Kubernetes API calls deploy makes: a merge patch of its own node's
//! labels, and (the chart's uninstall hook) reads of the cleanup
//! DaemonSet and its pods, over HTTPS with the pod's service account (its
//! token and the cluster's CA, as Kubernetes mounts them). No client
//! library: one HTTP/1.0 request per call over rustls (so the answer is
//! never chunked: its body runs to the end of the connection).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The API server as the pod reaches it, and the node deploy runs on.
pub struct Api {
    /// NODE_NAME: the node it labels.
    node: Option<String>,
    /// Where the API server is, or why it cannot be reached.
    server: Result<Server, String>,
}

struct Server {
    host: String,
    port: String,
    /// The service account directory: the token is read again for each
    /// call (the kubelet rotates it).
    dir: PathBuf,
    tls: Arc<rustls::ClientConfig>,
}

/// The service account's files, as Kubernetes mounts them into a pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// [`SERVICE_ACCOUNT_DIR`]; builds with the `test-hooks` feature take
/// another from `USERNS_HOSTNET_SERVICE_ACCOUNT`, so that a test can run
/// deploy outside a pod.
fn service_account_dir() -> PathBuf {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = std::env::var_os("USERNS_HOSTNET_SERVICE_ACCOUNT").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    PathBuf::from(SERVICE_ACCOUNT_DIR)
}

const TIMEOUT: Duration = Duration::from_secs(15);

impl Api {
    /// From the pod's environment and service account; a call says
    /// what is missing.
    pub fn from_pod(node: Option<&str>) -> Api {
        Api {
            node: node.filter(|n| !n.is_empty()).map(str::to_owned),
            server: Server::from_pod(),
        }
    }

    /// The node's label `key` and annotation `note` as `mark` says, in
    /// one merge patch: a line saying what was done, or why not.
    pub fn mark(&self, key: &str, note: &str, mark: Mark) -> Result<String, String> {
        let what = if mark == Mark::Able {
            "labelled"
        } else {
            "unlabelled"
        };
        // A failure says what the node was to become.
        let not = if mark == Mark::Removed {
            "unlabelled"
        } else {
            "labelled"
        };
        let Some(node) = &self.node else {
            return Err(format!("node not {not}: NODE_NAME is not set"));
        };
        let value = match mark {
            Mark::Able => serde_json::json!("true"),
            _ => serde_json::Value::Null,
        };
        let mut meta = serde_json::json!({ "labels": { key: value } });
        if !note.is_empty() {
            meta["annotations"] = serde_json::json!({ note: match &mark {
                Mark::Unable(why) => serde_json::json!(why),
                _ => serde_json::Value::Null,
            } });
        }
        let body = serde_json::json!({ "metadata": meta }).to_string();
        let done = match &mark {
            Mark::Unable(why) => format!("node {node} {what}: {key} ({note}: {why})"),
            _ => format!("node {node} {what}: {key}"),
        };
        let path = format!("/api/v1/nodes/{node}");
        match self.request("PATCH", &path, Some(&body)) {
            Ok((200, _)) => Ok(done),
            Ok((code, _)) => Err(format!(
                "node {node} not {not}: the API server answered {code} (is the RBAC of deploy/ applied?)"
            )),
            Err(e) => Err(format!("node {node} not {not}: {e}")),
        }
    }

    /// GET `path`: the HTTP status and the body, JSON when the status is
    /// 200 (an error: why the API server could not be asked).
    pub fn get(&self, path: &str) -> Result<(u16, serde_json::Value), String> {
        let (code, body) = self.request("GET", path, None)?;
        if code != 200 {
            return Ok((code, serde_json::Value::Null));
        }
        let value = serde_json::from_slice(&body)
            .map_err(|e| format!("GET {path}: the answer is not JSON: {e}"))?;
        Ok((code, value))
    }

    /// One request, a merge patch when it has a body: the status and body.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, Vec<u8>), String> {
        let server = self.server.as_ref().map_err(String::clone)?;
        let token = String::from_utf8(read_in(&server.dir, "token")?)
            .map_err(|_| "the service account's token is not UTF-8".to_owned())?;
        exchange(server, method, path, token.trim(), body)
            .map_err(|e| format!("API unreachable: {e}"))
    }
}

impl Server {
    fn from_pod() -> Result<Server, String> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST")
            .ok()
            .filter(|h| !h.is_empty())
            .ok_or("KUBERNETES_SERVICE_HOST is not set (not in a pod)")?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
        let dir = service_account_dir();
        if !dir.is_dir() {
            return Err(format!("no service account ({})", dir.display()));
        }
        let ca = read_in(&dir, "ca.crt")?;
        let tls = tls_config(&ca)?;
        Ok(Server {
            host,
            port,
            dir,
            tls,
        })
    }
}

/// What deploy says of its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// Able to run the feature's pods through the handler: labelled.
    Able,
    /// Not able, and why: unlabelled, the reason in the annotation.
    Unable(String),
    /// The handler removed: unlabelled, the annotation removed.
    Removed,
}

fn read_in(dir: &Path, name: &str) -> Result<Vec<u8>, String> {
    std::fs::read(dir.join(name)).map_err(|e| format!("service account {name}: {e}"))
}

/// TLS trusting only the cluster's CA.
fn tls_config(ca_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    let certs: Vec<CertificateDer> = CertificateDer::pem_slice_iter(ca_pem)
        .filter_map(Result::ok)
        .collect();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err("the service account's ca.crt holds no usable certificate".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The most of an answer read: the largest is a list of the cleanup's
/// pods, one per node.
const MAX_ANSWER: u64 = 64 << 20;

/// One request (a JSON merge patch when it has a body); the HTTP status
/// and the body.
fn exchange(
    Server {
        host, port, tls, ..
    }: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host}: {e}"))?;
    let tcp = TcpStream::connect(&authority).map_err(|e| format!("{authority}: {e}"))?;
    let _ = tcp.set_read_timeout(Some(TIMEOUT));
    let _ = tcp.set_write_timeout(Some(TIMEOUT));
    let conn = rustls::ClientConnection::new(tls.clone(), name).map_err(|e| e.to_string())?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json\r\nUser-Agent: userns-hostnet-deploy\r\n"
    );
    if let Some(body) = body {
        request += &format!(
            "Content-Type: application/merge-patch+json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    } else {
        request += "\r\n";
    }
    s.write_all(request.as_bytes())
        .and_then(|()| s.flush())
        .map_err(|e| e.to_string())?;
    // An HTTP/1.0 answer ends with the connection; a peer closing without
    // close_notify after it is no failure.
    let mut got = Vec::new();
    if let Err(e) = Read::by_ref(&mut s).take(MAX_ANSWER).read_to_end(&mut got) {
        if got.is_empty() {
            return Err(e.to_string());
        }
    }
    let code = status_code(&got).ok_or("no HTTP status line in the answer")?;
    let body = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| got[at + 4..].to_vec())
        .unwrap_or_default();
    Ok((code, body))
}

/// The code of an HTTP/1.x status line.
fn status_code(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|b| *b == b'\r').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split(' ');
    parts.next().filter(|v| v.starts_with("HTTP/1."))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK\r\nX: y\r\n"), Some(200));
        assert_eq!(status_code(b"HTTP/1.1 403 Forbidden\r\n"), Some(403));
        assert_eq!(status_code(b"garbage"), None);
    }

    #[test]
    fn without_a_pod_nothing_is_labelled() {
        let api = Api::from_pod(None);
        let e = api.mark("k", "", Mark::Able).unwrap_err();
        assert_eq!(e, "node not labelled: NODE_NAME is not set");
    }

    #[test]
    fn a_ca_without_certificates_is_refused() {
        assert!(tls_config(b"not pem").is_err());
    }
}
