//! One TLS stack for every connection: rustls with the ring provider (the one ureq uses).
//!
//! Root certificates: the system's (`rustls-native-certs`, which honours `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`), Mozilla's (`webpki-roots`) when the system has none, plus a PEM file the
//! user names (`--ca-file` for HTTP, `sslrootcert` for PostgreSQL).
//!
//! PostgreSQL's three levels of checking (libpq's `sslmode`):
//! - [`Check::None`] (`require`, `prefer`, `allow`): encrypted, the certificate is not checked
//!   (the handshake signature still is);
//! - [`Check::Chain`] (`verify-ca`): the certificate chains to a trusted root, any host name;
//! - [`Check::Full`] (`verify-full`): the chain and the host name.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};

/// Why the TLS set-up failed (before any connection).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate file that cannot be read or holds no certificate.
    #[error("{path}: {reason}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No root certificate at all (no system store, no file).
    #[error("no root certificates: {0}")]
    NoRoots(String),
}

/// The crypto provider every connection uses.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The system's root certificates, read once (empty when the system has none: callers fall
/// back to Mozilla's, see [`root_store`]).
pub fn system_roots() -> Vec<CertificateDer<'static>> {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS
        .get_or_init(|| rustls_native_certs::load_native_certs().certs)
        .clone()
}

/// The certificates of a PEM file (one or more `BEGIN CERTIFICATE` blocks).
pub fn read_pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |reason: String| TlsError::CaFile {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let mut certs = Vec::new();
    for item in CertificateDer::pem_slice_iter(&bytes) {
        certs.push(item.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?);
    }
    if certs.is_empty() {
        return Err(bad("no `BEGIN CERTIFICATE` block in it".to_owned()));
    }
    Ok(certs)
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The system's store (Mozilla's when it is empty).
    System,
    /// The system's store and the certificates of a PEM file.
    SystemAnd(PathBuf),
    /// Only the certificates of a PEM file.
    File(PathBuf),
}

/// A root store for `roots`.
pub fn root_store(roots: &Roots) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    let system = |store: &mut RootCertStore| {
        let certs = system_roots();
        if certs.is_empty() {
            store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        } else {
            store.add_parsable_certificates(certs);
        }
    };
    match roots {
        Roots::System => system(&mut store),
        Roots::SystemAnd(path) => {
            system(&mut store);
            add_file(&mut store, path)?;
        }
        Roots::File(path) => add_file(&mut store, path)?,
    }
    if store.is_empty() {
        return Err(TlsError::NoRoots(
            "the system has none and no file was given".to_owned(),
        ));
    }
    Ok(store)
}

fn add_file(store: &mut RootCertStore, path: &Path) -> Result<(), TlsError> {
    for cert in read_pem_certificates(path)? {
        store.add(cert).map_err(|e| TlsError::CaFile {
            path: path.to_owned(),
            reason: format!("not a usable root certificate: {e}"),
        })?;
    }
    Ok(())
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Nothing (encryption only).
    None,
    /// The chain to a trusted root, whatever host name it names.
    Chain,
    /// The chain and the host name.
    Full,
}

/// A client configuration checking `check` against `roots` (`roots` unused for
/// [`Check::None`]).
pub fn client_config(check: Check, roots: Option<&Roots>) -> Result<ClientConfig, TlsError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions");
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::None => Arc::new(AnyCertificate { provider }),
        Check::Chain | Check::Full => {
            let store = root_store(roots.unwrap_or(&Roots::System))?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
                .build()
                .map_err(|e| TlsError::NoRoots(e.to_string()))?;
            if check == Check::Full {
                webpki
            } else {
                Arc::new(ChainOnly { inner: webpki })
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Accepts any certificate; still checks that the server holds its key.
#[derive(Debug)]
struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The full check, with a certificate for another host name accepted (the chain was
/// checked first: webpki checks the name only after the chain).
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A sentence for a certificate the checks refused, from the rustls error inside `err`'s
/// chain (`None` when there is none).
pub fn certificate_problem(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let tls = e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = tls {
            return Some(describe(tls));
        }
        cur = e.source();
    }
    None
}

fn describe(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => {
                "the server's certificate is not signed by a trusted root certificate".to_owned()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for the host name connected to".to_owned()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_owned()
            }
            _ => "the server's certificate was refused".to_owned(),
        },
        _ => "the TLS handshake failed".to_owned(),
    }
}
