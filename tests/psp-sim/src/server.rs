//! One HTTPS listener of a simulated PSP.
//!
//! Each endpoint owns its port for the life of the simulator. The `refuse_connections` fault
//! really closes the listening socket (and every open connection, as a PSP going down would),
//! and reopening binds the same port again. Each request carries the TLS peer's certificate CN
//! and a handle that lets a handler drop the connection without answering.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// The client certificate presented on the connection a request came in on.
#[derive(Clone, Debug, Default)]
pub struct PeerCert {
    pub common_name: Option<String>,
}

/// Lets a handler close its connection without sending a response.
#[derive(Clone)]
pub struct ConnKill(Arc<Notify>);

impl ConnKill {
    pub fn kill(&self) {
        self.0.notify_one();
    }
}

pub struct Endpoint {
    addr: SocketAddr,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: watch::Receiver<bool>,
    /// `Some` while listening: setting the sender stops the accept loop, which closes the
    /// socket and its connections before its task ends.
    running: Mutex<Option<(watch::Sender<bool>, JoinHandle<()>)>>,
}

impl Endpoint {
    /// Binds `127.0.0.1:0` and starts accepting.
    pub async fn start(
        tls: Arc<ServerConfig>,
        router: Router,
        shutdown: watch::Receiver<bool>,
    ) -> anyhow::Result<Arc<Endpoint>> {
        let listener = bind("127.0.0.1:0".parse()?)?;
        let endpoint = Arc::new(Endpoint {
            addr: listener.local_addr()?,
            acceptor: TlsAcceptor::from(tls),
            router,
            shutdown,
            running: Mutex::new(None),
        });
        endpoint.run(listener);
        Ok(endpoint)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Stops listening (connection refused) or listens again on the same port. Returns once
    /// the socket and its connections are really closed, so a caller can rely on it at once.
    pub async fn set_refusing(&self, refuse: bool) -> anyhow::Result<()> {
        if refuse {
            let running = self.running.lock().take();
            if let Some((stop, task)) = running {
                let _ = stop.send(true);
                let _ = task.await;
            }
        } else if self.running.lock().is_none() {
            let listener = bind(self.addr)?;
            self.run(listener);
        }
        Ok(())
    }

    fn run(&self, listener: TcpListener) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let acceptor = self.acceptor.clone();
        let router = self.router.clone();
        let shutdown = self.shutdown.clone();
        let task = tokio::spawn(accept_loop(listener, acceptor, router, stop_rx, shutdown));
        *self.running.lock() = Some((stop_tx, task));
    }
}

fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    // Reopening after `refuse_connections` must get the same port back even with connections
    // in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    Ok(socket.listen(128)?)
}

/// Resolves when either the endpoint is stopped or the whole simulator shuts down.
async fn stopped(mut stop: watch::Receiver<bool>, mut shutdown: watch::Receiver<bool>) {
    tokio::select! {
        _ = stop.wait_for(|s| *s) => {}
        _ = shutdown.wait_for(|s| *s) => {}
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    stop: watch::Receiver<bool>,
    shutdown: watch::Receiver<bool>,
) {
    let stopped_fut = stopped(stop, shutdown);
    tokio::pin!(stopped_fut);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped_fut => break,
            accepted = listener.accept() => {
                while connections.try_join_next().is_some() {}
                let Ok((tcp, _)) = accepted else { continue };
                // Answers go out at once, not after the peer's delayed ACK (Nagle).
                let _ = tcp.set_nodelay(true);
                connections.spawn(serve_connection(tcp, acceptor.clone(), router.clone()));
            }
        }
    }
    // Close the port first (new connections are refused), then every open connection.
    drop(listener);
    connections.shutdown().await;
}

async fn serve_connection(tcp: tokio::net::TcpStream, acceptor: TlsAcceptor, router: Router) {
    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%err, "TLS handshake failed");
            return;
        }
        Err(_) => return,
    };
    let peer = PeerCert {
        common_name: tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|der| crate::tls::common_name(der)),
    };
    let kill = Arc::new(Notify::new());
    let conn_kill = ConnKill(kill.clone());
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(peer.clone());
            req.extensions_mut().insert(conn_kill.clone());
            router.clone().oneshot(req.map(Body::new))
        });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(tls), service);
    tokio::select! {
        res = conn => {
            if let Err(err) = res {
                tracing::debug!(%err, "connection error");
            }
        }
        // Dropping the connection future closes the socket with no response written.
        _ = kill.notified() => {}
    }
}
