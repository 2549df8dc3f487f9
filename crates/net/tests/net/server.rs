//! A scripted HTTP/1.1 server on 127.0.0.1 (optionally HTTPS with a given certificate):
//! one reply per request from a handler, every connection closed after its reply.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct Request {
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }
    pub fn with(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

pub struct Server {
    pub url: String,
    count: Arc<AtomicUsize>,
}

impl Server {
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Serves up to `max` requests over plain HTTP.
    pub fn start(
        max: usize,
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::run(max, None, handler)
    }

    /// Serves up to `max` requests over HTTPS with `cert` and `key` (PEM), at
    /// `https://localhost:PORT`.
    pub fn start_tls(
        max: usize,
        cert: &Path,
        key: &Path,
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .expect("cert file")
            .map(|c| c.expect("cert"))
            .collect();
        let key = PrivateKeyDer::from_pem_file(key).expect("key file");
        let config = rustls::ServerConfig::builder_with_provider(veredicto_net::tls::provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server config");
        Server::run(max, Some(Arc::new(config)), handler)
    }

    fn run(
        max: usize,
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let handler = Arc::new(handler);
        let scheme = if tls.is_some() {
            "https://localhost"
        } else {
            "http://127.0.0.1"
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().take(max) {
                let Ok(stream) = stream else { continue };
                let handler = handler.clone();
                let seen = seen.clone();
                let tls = tls.clone();
                std::thread::spawn(move || {
                    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
                    match tls {
                        None => serve(stream, &*handler, &seen),
                        Some(config) => {
                            let Ok(conn) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            serve(rustls::StreamOwned::new(conn, stream), &*handler, &seen);
                        }
                    }
                });
            }
        });
        Server {
            url: format!("{scheme}:{port}"),
            count,
        }
    }
}

fn serve<S: Read + Write>(
    stream: S,
    handler: &(dyn Fn(usize, &Request) -> Reply + Send + Sync),
    seen: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Request { headers };
    let i = seen.fetch_add(1, Ordering::SeqCst);
    let reply = handler(i, &request);
    std::thread::sleep(reply.delay);
    let mut out = format!(
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (n, v) in &reply.headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    let stream = reader.get_mut();
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
}
