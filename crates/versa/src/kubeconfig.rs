//! Where versa's clients find kube-apiserver (or a running versa): kubeconfigs for `versa
//! migrate` and `versa serve --kubeconfig`, and the pod's service account in cluster mode.
//!
//! The files are read by kube-rs (`kube::config`), so a kubeconfig means here what it means to
//! kubectl: `exec` credential plugins (every EKS, GKE and AKS kubeconfig has one), client
//! certificates and tokens inline or in files (relative paths from the kubeconfig's directory),
//! `http://` servers such as `kubectl proxy`, `proxy-url` and `HTTPS_PROXY`/`NO_PROXY`,
//! `tls-server-name`, `insecure-skip-tls-verify`. What this module decides is only which
//! files ([`locate`]: kubectl's order, with versa's own admin kubeconfig as the last resort),
//! how several are merged ([`load`]: the first file to set a value wins, files that do not exist
//! are skipped, as kubectl does) and which context is used (`--context`, else
//! `current-context`). The connection itself is `versa_server::cluster::kube::KubeClient`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

/// Errors finding or reading a kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the kubeconfig {path}: {source} (pass --kubeconfig FILE or set KUBECONFIG)")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `files` is the file, or the `:`-separated list of files merged.
    #[error("invalid kubeconfig {files}: {message}")]
    Invalid { files: String, message: String },
    #[error("in-cluster configuration (the pod's service account): {0}")]
    InCluster(#[source] kube::config::InClusterError),
}

/// `Result` with this module's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a pod's service-account files are.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The kubeconfig files to use, in kubectl's order: `--kubeconfig` (that file alone), else the
/// files of `$KUBECONFIG` that exist (a path list, merged by [`load`]; the first entry when none
/// exists, so that the error names it), else `./versa-data/admin.kubeconfig` — where `versa
/// serve` writes it by default.
pub fn locate(flag: Option<&Path>, env: Option<&OsStr>) -> Vec<PathBuf> {
    if let Some(path) = flag {
        return vec![path.to_path_buf()];
    }
    let listed: Vec<PathBuf> =
        env.map(|e| std::env::split_paths(e).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default();
    let existing: Vec<PathBuf> = listed.iter().filter(|p| p.exists()).cloned().collect();
    match (existing.is_empty(), listed.into_iter().next()) {
        (false, _) => existing,
        (true, Some(first)) => vec![first],
        (true, None) => vec![Path::new("versa-data").join(versa_server::pki::KUBECONFIG)],
    }
}

/// Reads `files`, merges them (the first to set a value or name wins) and resolves `context`
/// (default: the merged `current-context`) into a client configuration. Credential plugins
/// are not run here; the client runs them when it is built or first used.
pub async fn load(files: &[PathBuf], context: Option<&str>) -> Result<kube::Config> {
    let shown = std::env::join_paths(files)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" "));
    let invalid = |message: String| Error::Invalid { files: shown.clone(), message };
    let mut merged: Option<Kubeconfig> = None;
    for path in files {
        let file = Kubeconfig::read_from(path).map_err(|e| match e {
            KubeconfigError::ReadConfig(source, _) => Error::Read { path: path.clone(), source },
            other => Error::Invalid { files: path.display().to_string(), message: explain(other) },
        })?;
        merged = Some(match merged {
            None => file,
            Some(earlier) => earlier.merge(file).map_err(|e| invalid(explain(e)))?,
        });
    }
    let options = KubeConfigOptions { context: context.map(str::to_owned), cluster: None, user: None };
    kube::Config::from_custom_kubeconfig(merged.unwrap_or_default(), &options).await.map_err(|e| invalid(explain(e)))
}

/// A server given on the command line as kubectl's flags give it (`--server`,
/// `--certificate-authority`, `--token` from a file, `--tls-server-name`): what a CronJob's pod
/// uses to reach versa's Service with its service account's token.
pub async fn explicit(
    server: &str,
    certificate_authority: Option<&Path>,
    token_file: Option<&Path>,
    tls_server_name: Option<&str>,
) -> Result<kube::Config> {
    let doc = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "server", "cluster": {
            "server": server,
            "certificate-authority": certificate_authority.map(|p| p.display().to_string()),
            "tls-server-name": tls_server_name,
        }}],
        "users": [{"name": "user", "user": {"tokenFile": token_file.map(|p| p.display().to_string())}}],
        "contexts": [{"name": "server", "context": {"cluster": "server", "user": "user"}}],
        "current-context": "server",
    });
    let invalid = |message: String| Error::Invalid { files: "--server".into(), message };
    let config = Kubeconfig::from_yaml(&doc.to_string()).map_err(|e| invalid(explain(e)))?;
    kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default()).await.map_err(|e| invalid(explain(e)))
}

/// The pod's kube-apiserver, as client-go's `rest.InClusterConfig` finds it:
/// `KUBERNETES_SERVICE_HOST`/`_PORT`, trusted by the service account's `ca.crt`, authenticated
/// by its token (both re-read as they rotate).
pub fn in_cluster() -> Result<kube::Config> {
    kube::Config::incluster().map_err(Error::InCluster)
}

/// kube-rs's message, in kubectl's terms where they differ.
fn explain(e: KubeconfigError) -> String {
    match e {
        KubeconfigError::CurrentContextNotSet => {
            "current-context is not set (kubectl config use-context NAME sets it; or pass --context NAME)".into()
        }
        KubeconfigError::LoadContext(name) => format!("context {name:?} is not defined"),
        KubeconfigError::LoadClusterOfContext(name) => format!("cluster {name:?} is not defined"),
        KubeconfigError::MissingClusterUrl => "the cluster has no server".into(),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(&other);
            while let Some(inner) = source {
                let more = inner.to_string();
                if !text.contains(&more) {
                    text = format!("{text}: {more}");
                }
                source = inner.source();
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

    use super::*;

    #[test]
    fn locate_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let missing = dir.path().join("missing");
        let flag = Path::new("/flag");
        let list = std::env::join_paths([&missing, &a, &b]).unwrap();
        assert_eq!(locate(Some(flag), Some(&list)), [flag]);
        assert_eq!(locate(None, Some(&list)), [a.as_path(), b.as_path()], "every existing file, in order");
        assert_eq!(locate(None, Some(missing.as_os_str())), [missing.as_path()], "named in the error");
        let default = Path::new("versa-data/admin.kubeconfig");
        assert_eq!(locate(None, Some(OsStr::new(""))), [default]);
        assert_eq!(locate(None, None), [default]);
    }

    fn kubeconfig(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Merged files (the first to set a value wins), contexts, and the errors users meet.
    #[tokio::test]
    async fn merging_and_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let first = kubeconfig(
            dir.path(),
            "first",
            "apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n- name: a\n  context: {cluster: one, user: u}\n\
             clusters:\n- name: one\n  cluster: {server: 'http://127.0.0.1:1001'}\n",
        );
        let second = kubeconfig(
            dir.path(),
            "second",
            "apiVersion: v1\nkind: Config\ncurrent-context: b\ncontexts:\n- name: a\n  context: {cluster: two}\n\
             - name: b\n  context: {cluster: two, user: u}\nclusters:\n- name: one\n  cluster: {server: 'https://ignored'}\n\
             - name: two\n  cluster: {server: 'https://127.0.0.1:1002/prefix', tls-server-name: versa.internal}\n\
             users:\n- name: u\n  user: {token: t}\n",
        );
        let files = [first.clone(), second.clone()];
        let config = load(&files, None).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:1001/", "first file's context and cluster");
        let config = load(&files, Some("b")).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:1002/prefix");
        assert_eq!(config.tls_server_name.as_deref(), Some("versa.internal"));
        assert!(config.auth_info.token.is_some(), "user from the second file");

        let err = |files: &[PathBuf], context: Option<&str>| {
            let files = files.to_vec();
            let context = context.map(str::to_owned);
            async move { load(&files, context.as_deref()).await.unwrap_err().to_string() }
        };
        let shown = format!("{}:{}", first.display(), second.display());
        assert_eq!(
            err(&files, Some("nope")).await,
            format!("invalid kubeconfig {shown}: context \"nope\" is not defined")
        );
        let no_current = kubeconfig(dir.path(), "none", "apiVersion: v1\nkind: Config\nclusters: []\n");
        assert_eq!(
            err(std::slice::from_ref(&no_current), None).await,
            format!(
                "invalid kubeconfig {}: current-context is not set (kubectl config use-context NAME sets it; or pass --context NAME)",
                no_current.display()
            )
        );
        let missing = dir.path().join("missing");
        assert!(err(&[missing], None).await.starts_with("cannot read the kubeconfig "), "read errors name the file");
    }

    /// The kubeconfig `versa serve` writes (from the server's own PKI code) loads: the server,
    /// its CA and the admin's client certificate.
    #[tokio::test]
    async fn the_admin_kubeconfig_of_versa_serve() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["127.0.0.1".to_owned()];
        let pki = versa_server::pki::load_or_create(dir.path(), &hosts, "https://127.0.0.1:8443").unwrap();
        let config = load(&[pki.kubeconfig], None).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:8443/");
        assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
        assert!(config.auth_info.client_certificate_data.is_some());
        // A client can be built from it (certificate and key parse).
        versa_server::cluster::kube::KubeClient::new(config).unwrap();
    }
}
