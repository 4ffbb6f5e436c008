//! The `versa` binary: the server (`versa serve`) and the offline tools for definition authors
//! (`versa lint`, `versa validate`, `versa convert`, `versa diff`) and for admins (`versa migrate`,
//! `versa backup`, `versa restore`, `versa kubeconfig`).
//! Only this crate picks concrete implementations (the storage backend among them); the commands themselves are thin
//! layers over the pure crates, so that `versa validate` runs exactly the server's code.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` that never panics: a closed pipe (`versa lint ... | head`) ends the output, not
/// the program.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that never panics.
macro_rules! warn {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod allocator;
mod backup;
mod convert;
mod diff;
mod documents;
mod kubeconfig;
mod leader_elect;
mod lint;
mod migrate;
mod serve;
mod user_kubeconfig;
mod validate;

/// versa — versioned custom resources for Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "versa", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server: HTTPS API for definitions and custom resources, with embedded storage in
    /// the data directory (or etcd), a generated CA and an admin kubeconfig.
    Serve(Box<serve::Args>),
    /// Check definitions (ResourceDefinition or apiextensions.k8s.io/v1
    /// CustomResourceDefinition documents) with kube-apiserver's rules and messages.
    ///
    /// Exit status: 0 when every definition is valid, 1 when any is invalid, 2 on usage or I/O
    /// errors.
    Lint(lint::Args),
    /// Run the write pipeline offline (default, prune, validate) on objects of a definition and
    /// print the result as the server would store it, or the errors as kube-apiserver phrases
    /// them.
    ///
    /// Exit status: 0 when every object is valid, 1 when any is invalid, 2 on usage or I/O
    /// errors.
    Validate(validate::Args),
    /// Convert objects of a definition to another of its versions, offline, as the server
    /// would: with its CEL rules (or None), or its webhook at --webhook-url. Prints the
    /// converted objects.
    ///
    /// Exit status: 0 when every object converted, 1 when any did not, 2 on usage or I/O
    /// errors.
    Convert(convert::Args),
    /// Every change between two sets of definitions (files, or directories of files), each
    /// classified breaking, compatible or informational with its path and what it does.
    ///
    /// Exit status: 0 when no change is as bad as --fail-on (default: breaking), 1 when one is,
    /// 2 on usage or I/O errors.
    Diff(diff::Args),
    /// Storage migration of a running server: `status` shows each definition's stored versions
    /// and progress; `run` asks the server to migrate now (needed with --auto-migrate=false).
    ///
    /// Exit status: 0 on success, 1 when `run --wait` times out, 2 on usage, connection or server
    /// errors.
    Migrate(migrate::Args),
    /// Write a consistent snapshot of every stored object and definition at one revision to
    /// FILE: from a running server (over HTTPS, with the kubeconfig's credentials; it keeps
    /// serving) or from a stopped server's --data-dir. The file is checked whole before it is
    /// named FILE.
    ///
    /// Exit status: 0 when the backup is written and checked, 1 otherwise.
    Backup(backup::BackupArgs),
    /// Make a new data directory from a snapshot of `versa backup`. Clients relist afterwards:
    /// the restored revision moves past every resourceVersion they hold.
    ///
    /// Exit status: 0 when restored, 1 when the snapshot is refused (truncated, corrupt,
    /// foreign, newer) or the directory holds data.
    Restore(backup::RestoreArgs),
    /// Write a kubeconfig for a user of a standalone server: a new client certificate for
    /// --user and each --group, signed by the CA in --data-dir, valid for --days.
    ///
    /// Exit status: 0 when written, 1 otherwise.
    Kubeconfig(user_kubeconfig::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with success, usage errors to stderr.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let outcome = match cli.command {
        Command::Serve(args) => {
            return match serve::run(*args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    warn!("error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::Lint(args) => lint::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Migrate(args) => return migrate::run(&args),
        Command::Backup(args) => return backup::backup(&args),
        Command::Restore(args) => return backup::restore(&args),
        Command::Kubeconfig(args) => {
            return match user_kubeconfig::run(&args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    warn!("error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
    };
    match outcome {
        Ok(Outcome::AllValid) => ExitCode::SUCCESS,
        Ok(Outcome::SomeInvalid) => ExitCode::from(1),
        Err(e) => {
            warn!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// How a command that checks inputs ended (usage and I/O problems are errors instead).
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    AllValid,
    SomeInvalid,
}
