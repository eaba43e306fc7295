//! A TLS front for a local plain-TCP service (DynamoDB Local): it terminates TLS on 127.0.0.1
//! with a certificate from a certificate authority made at start, and passes the bytes on. A
//! function pointed at it pays what it pays against DynamoDB in AWS on its first ledger call: a
//! TLS handshake, certificate verification, the crypto library's first randomness.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{crypto::aws_lc_rs, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// A running front; it stops when dropped.
pub struct TlsFront {
    port: u16,
    authority_pem: String,
    task: JoinHandle<()>,
}

impl TlsFront {
    /// Starts a front on a free loopback port for the service at `backend`.
    pub async fn start(backend: SocketAddr) -> Result<TlsFront, String> {
        let (authority_pem, server) = certificates().map_err(|error| format!("certificates: {error}"))?;
        let acceptor = TlsAcceptor::from(Arc::new(server));
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|error| error.to_string())?;
        let port = listener.local_addr().map_err(|error| error.to_string())?.port();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else { return };
                    let Ok(mut plain) = TcpStream::connect(backend).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Ok(TlsFront { port, authority_pem, task })
    }

    /// The front's `https://` URL (by IP, which the certificate names, so no resolver is asked).
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The PEM of the authority that signed the front's certificate: what a client must trust.
    pub fn authority_pem(&self) -> &str {
        &self.authority_pem
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A new authority and a server configuration presenting a certificate it signed for
/// `127.0.0.1` and `localhost`.
fn certificates() -> Result<(String, ServerConfig), Box<dyn std::error::Error>> {
    let authority_key = KeyPair::generate()?;
    let mut authority = CertificateParams::new(Vec::<String>::new())?;
    authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    authority.distinguished_name.push(DnType::CommonName, "red packets local TLS front");
    authority.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let authority_pem = authority.self_signed(&authority_key)?.pem();
    let issuer = Issuer::new(authority, authority_key);
    let server_key = KeyPair::generate()?;
    let server_certificate = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?
        .signed_by(&server_key, &issuer)?;
    let private_key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let server = ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![server_certificate.der().clone()], private_key)?;
    Ok((authority_pem, server))
}
