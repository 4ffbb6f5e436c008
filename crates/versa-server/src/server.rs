//! The accept loop: TLS handshake (bounded in time), the connection's client certificate read
//! and classified by issuer once, then hyper serving HTTP/1.1 or HTTP/2 on it. Shutdown stops accepting and gives open
//! connections a grace period to finish.

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::auth::ClientCert;
use crate::handler;
use crate::state::State;

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections may take to finish after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    trust: Arc<crate::tls::ClientTrust>,
    state: Arc<State>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, state, trust) = (acceptor.clone(), state.clone(), trust.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            // Who signed the client certificate decides what it may do (tls.rs); decided once
            // per connection.
            let client_cert = tls.get_ref().1.peer_certificates().and_then(|chain| {
                let leaf = chain.first()?;
                ClientCert::from_der(leaf.as_ref(), trust.classify(chain)).map(Arc::new)
            });
            let service = service_fn(move |req| {
                let (state, client_cert) = (state.clone(), client_cert.clone());
                async move {
                    Ok::<_, std::convert::Infallible>(handler::handle(state, client_cert, Some(peer.ip()), req).await)
                }
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    // Watches end now (cleanly, at an event boundary); requests in flight get the grace period.
    state.shutdown.cancel();
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => tracing::warn!("connections still open after the grace period"),
    }
    Ok(())
}
