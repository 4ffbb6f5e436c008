//! `versa kubeconfig --user NAME [--group G ...]`: a kubeconfig for another person of a
//! standalone server, with a client certificate signed by the CA of its data directory (kube's
//! x509 authentication: the certificate's CN is the user, its O entries the groups). What that
//! user may do is RBAC's to say; `system:masters` among the groups may do anything.

use std::path::PathBuf;

use anyhow::Context as _;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The user's name (the certificate's CN).
    #[arg(long, value_name = "NAME")]
    user: String,
    /// A group of the user (the certificate's O); repeat for more.
    #[arg(long = "group", value_name = "GROUP")]
    groups: Vec<String>,
    /// The server's data directory, whose CA signs the certificate.
    #[arg(long, default_value = "./versa-data")]
    data_dir: PathBuf,
    /// The server's URL (default: the one the data directory's admin.kubeconfig names).
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// How many days the certificate is valid (at most 365).
    #[arg(long, default_value_t = 365)]
    days: u32,
    /// Where to write the kubeconfig (default: standard output). Written with mode 0600: it
    /// holds the user's private key.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let kubeconfig =
        versa_server::pki::issue_user(&args.data_dir, &args.user, &args.groups, args.days, args.server.as_deref())
            .with_context(|| format!("cannot issue a kubeconfig for {:?}", args.user))?;
    match &args.output {
        None => print!("{kubeconfig}"),
        Some(path) => write_private(path, &kubeconfig).with_context(|| format!("cannot write {}", path.display()))?,
    }
    Ok(())
}

/// Writes `text` to a new file readable by its owner only.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())
}
