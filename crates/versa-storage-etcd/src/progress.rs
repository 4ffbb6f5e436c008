//! Whether the cluster answers progress requests in order with its events.
//!
//! etcd before 3.4.31 and 3.5.13 answers a watch stream's progress request at once with the
//! store's current revision, racing the events still queued for the stream and even while the
//! watcher is still catching up on history (etcd-io/etcd#15220, fixed by #15237 and #17557): a
//! consumer could be told "nothing missed up to R" and only then receive events before R. On
//! such servers the store ignores those answers and passes on only etcd's periodic progress
//! notifications, which travel with the events (their interval is etcd's
//! `--experimental-watch-progress-notify-interval`, 10 minutes unless set). Kubernetes makes the
//! same distinction, by the same versions.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

/// Whether every endpoint runs an etcd whose progress answers are ordered; `false` when one of
/// them does not answer in time (the safe side).
pub(crate) async fn cluster_orders_progress(endpoints: &[String], options: &ConnectOptions, timeout: Duration) -> bool {
    for endpoint in endpoints {
        let version = async {
            let mut client = Client::connect([endpoint.as_str()], Some(options.clone())).await.ok()?;
            client.status().await.ok().map(|status| status.version().to_string())
        };
        match tokio::time::timeout(timeout, version).await {
            Ok(Some(version)) if orders_progress(&version) => {}
            _ => return false,
        }
    }
    !endpoints.is_empty()
}

/// Whether an etcd of this version (`3.5.13`, `3.6.0-rc.1`) answers progress requests in order.
pub(crate) fn orders_progress(version: &str) -> bool {
    let mut parts = version.split('.').map(|part| {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, 0..=3) | (0..=2, _) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::orders_progress;

    #[test]
    fn versions() {
        for (version, ordered) in [
            ("3.4.23", false),
            ("3.4.31", true),
            ("3.5.12", false),
            ("3.5.13", true),
            ("3.5.21", true),
            ("3.6.0", true),
            ("3.6.0-rc.1", true),
            ("4.0.0", true),
            ("3.3.27", false),
            ("2.3.8", false),
            ("garbage", false),
            ("3.5", false),
        ] {
            assert_eq!(orders_progress(version), ordered, "{version}");
        }
    }
}
