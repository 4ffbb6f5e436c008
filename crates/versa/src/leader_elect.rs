//! `versa serve`'s leader-election flags, named and defaulted as every kube component names
//! them (`--leader-elect`, `--leader-elect-lease-duration`, `--leader-elect-renew-deadline`,
//! `--leader-elect-retry-period`, `--leader-elect-resource-lock`, `-resource-name`,
//! `-resource-namespace`), durations in Go's syntax (`15s`, `1m30s`, `500ms`).
//!
//! Which lock: a `coordination.k8s.io/v1` Lease in cluster mode, an etcd key bound to an etcd
//! lease without a cluster. Embedded storage elects nobody: the data directory's lock already
//! makes it one process. With an election, each replica also keeps its record of the
//! definitions it follows in etcd (`versa.dev/replicas/<identity>` under the storage prefix),
//! under the same identity and lease duration.

use std::time::Duration;

use clap::ValueEnum;

#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Leader election (several replicas on one etcd)")]
pub struct LeaderElectArgs {
    /// Elect a leader for the work that must happen once (definition status, storage
    /// migration, APIService registration); every replica serves. Only with --storage etcd.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// How long followers wait, after the last renewal they saw, before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading (less than the lease
    /// duration).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// Where the leader is recorded: `leases` (a Lease; cluster mode's default) or `etcd` (a
    /// key bound to an etcd lease; the default without a cluster).
    #[arg(long, value_enum)]
    leader_elect_resource_lock: Option<ResourceLock>,
    /// Name of the Lease (or of the etcd key, under --storage-prefix).
    #[arg(long, default_value = "versa")]
    leader_elect_resource_name: String,
    /// Namespace of the Lease (default: --service-namespace).
    #[arg(long)]
    leader_elect_resource_namespace: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ResourceLock {
    Leases,
    Etcd,
}

impl LeaderElectArgs {
    /// The election to run, or `None` (embedded storage, or `--leader-elect=false`).
    /// `etcd` connects the etcd lock when that is the one chosen.
    pub async fn config(
        &self,
        etcd: Option<(&versa_storage_etcd::EtcdConfig, &str)>,
        cluster: bool,
    ) -> anyhow::Result<Option<versa_server::LeaderElection>> {
        let Some((etcd, prefix)) = etcd else {
            tracing::info!("embedded storage: one process by construction, no leader election");
            return Ok(None);
        };
        if !self.leader_elect {
            return Ok(None);
        }
        let mut config = versa_server::leader::ElectionConfig::new(identity());
        config.lease_duration = self.leader_elect_lease_duration;
        config.renew_deadline = self.leader_elect_renew_deadline;
        config.retry_period = self.leader_elect_retry_period;
        let lock =
            self.leader_elect_resource_lock.unwrap_or(if cluster { ResourceLock::Leases } else { ResourceLock::Etcd });
        let name = self.leader_elect_resource_name.clone();
        let lock = match lock {
            ResourceLock::Leases => {
                anyhow::ensure!(
                    cluster,
                    "--leader-elect-resource-lock leases needs cluster mode (--kubeconfig or a pod)"
                );
                versa_server::LeaderLock::Lease { namespace: self.leader_elect_resource_namespace.clone(), name }
            }
            ResourceLock::Etcd => {
                let key = format!("{}/versa.dev/leases/{name}", prefix.trim_end_matches('/'));
                let lock = versa_storage_etcd::EtcdLeaseLock::connect(etcd, key).await?;
                versa_server::LeaderLock::Other(std::sync::Arc::new(lock))
            }
        };
        // Each replica's record of the definitions it follows, which storage migration waits
        // on, lives in versa's etcd in both modes, bound to a lease of the election's duration.
        let records = format!("{}/versa.dev/replicas", prefix.trim_end_matches('/'));
        let membership =
            versa_storage_etcd::EtcdMembership::connect(etcd, &records, &config.identity, config.lease_duration)
                .await?;
        tracing::info!(identity = %config.identity, "leader election on");
        Ok(Some(versa_server::LeaderElection { config, lock, membership: Some(std::sync::Arc::new(membership)) }))
    }
}

/// `<hostname>_<uuid>`, as kube components make their identity (in a pod the hostname is the
/// pod's name).
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned()))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "versa".into());
    format!("{host}_{}", versa_registry::meta::new_uid())
}

/// A Go duration (`time.ParseDuration`): decimal numbers with units `ns`, `us` (`µs`), `ms`,
/// `s`, `m`, `h`, e.g. `1m30s`, `1.5s`, `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("time: invalid duration {text:?}");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration {text:?}"))?;
        let number: f64 = rest[..number_end].parse().map_err(|_| bad())?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("time: missing unit in duration {text:?}")),
            unit => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("15s").unwrap(), Duration::from_secs(15));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("15").unwrap_err(), "time: missing unit in duration \"15\"");
        assert_eq!(parse_duration("2d").unwrap_err(), "time: unknown unit \"d\" in duration \"2d\"");
        assert!(parse_duration("-1s").is_err());
    }
}
