//! `versa kubeconfig`: a kubeconfig for a standalone server's user, with a new client
//! certificate signed by the CA in the data directory (CN the user, one O per group, as kube's
//! x509 authenticator reads them). The certificate expires (`--days`, at most ten years): a
//! client certificate cannot be revoked, so a leaked one is good only until then. The CA key
//! must be readable, so this runs where the data directory is.

use std::path::PathBuf;

use anyhow::Context as _;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The user name (the certificate's CN).
    #[arg(long)]
    user: String,
    /// A group of the user (the certificate's O); repeat for several.
    #[arg(long = "group", value_name = "GROUP")]
    groups: Vec<String>,
    /// Data directory of the server (its ca.crt and ca.key sign the certificate).
    #[arg(long, default_value = "./versa-data")]
    data_dir: PathBuf,
    /// The server's URL (default: the one in the data directory's admin.kubeconfig).
    #[arg(long)]
    server: Option<String>,
    /// Days the certificate is valid (it is backdated five minutes for clock skew).
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=i64::from(versa_server::pki::MAX_USER_CERT_DAYS)))]
    days: u32,
    /// Write the kubeconfig to FILE (mode 0600) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(!args.user.is_empty(), "--user must not be empty");
    let server = match &args.server {
        Some(server) => server.clone(),
        None => admin_server(&args.data_dir)?,
    };
    let kubeconfig =
        versa_server::pki::issue_user_kubeconfig(&args.data_dir, &args.user, &args.groups, args.days, &server)
            .with_context(|| format!("cannot issue a certificate from {}", args.data_dir.display()))?;
    match &args.output {
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(kubeconfig.as_bytes());
        }
        Some(path) => {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt as _;
                options.mode(0o600);
            }
            let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
            std::io::Write::write_all(&mut file, kubeconfig.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

/// The server URL `versa serve` last wrote into the data directory's admin.kubeconfig.
fn admin_server(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join(versa_server::pki::KUBECONFIG);
    let config = kube::config::Kubeconfig::read_from(&path)
        .with_context(|| format!("cannot read {} (pass --server URL)", path.display()))?;
    config
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref().and_then(|c| c.server.clone()))
        .with_context(|| format!("{} names no server (pass --server URL)", path.display()))
}
