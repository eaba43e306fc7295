//! The DynamoDB client, built from what a Lambda function's environment holds and nothing more,
//! so that a cold start pays only for what the function uses.
//!
//! `aws_config::load_from_env` resolves a whole provider chain (profiles, SSO, web identity, the
//! container and instance metadata endpoints) and loads the platform's root certificates (about
//! 140 read and parsed at init: 1-5 ms of a cold start, measured in BENCHMARKS.md). A Lambda
//! function has its credentials and region in its environment, and DynamoDB's endpoints all
//! chain to the Amazon Trust Services roots, so the client here takes the credentials from the
//! environment and trusts those five roots (compiled in) unless `AWS_CA_BUNDLE` names another
//! bundle (the SDKs' standard setting: a corporate proxy, or the benchmark's local TLS front).

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{Provider, TlsContext, TrustStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use red_packets_core::config::ConfigError;

/// The roots DynamoDB's certificates chain to: Amazon Root CA 1-4 and Starfield Services Root
/// Certificate Authority - G2.
pub const AMAZON_TRUST_SERVICES: &[u8] = include_bytes!("../certs/amazon-trust-services.pem");

/// Where the client connects and what it trusts, as the environment says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    /// `AWS_REGION` (set by Lambda), else `AWS_DEFAULT_REGION`.
    pub region: Option<String>,
    /// `AWS_ENDPOINT_URL_DYNAMODB`, else `AWS_ENDPOINT_URL` (DynamoDB Local).
    pub endpoint_url: Option<String>,
    /// `AWS_CA_BUNDLE`: a PEM file whose certificates replace the Amazon Trust Services roots.
    pub ca_bundle: Option<String>,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`: the execution
    /// role's credentials, which Lambda sets for the life of the execution environment.
    pub credentials: Option<Credentials>,
}

impl Connection {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads through `lookup`; empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|value| !value.is_empty());
        Connection {
            region: get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")),
            endpoint_url: get("AWS_ENDPOINT_URL_DYNAMODB").or_else(|| get("AWS_ENDPOINT_URL")),
            ca_bundle: get("AWS_CA_BUNDLE"),
            credentials: match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
                (Some(key), Some(secret)) => {
                    Some(Credentials::new(key, secret, get("AWS_SESSION_TOKEN"), None, "environment"))
                }
                _ => None,
            },
        }
    }

    /// The trusted roots as PEM: the bundle when one is named (read and checked here, so a bad
    /// file fails the start-up with its name instead of the first request), else Amazon's.
    fn trusted_roots(&self) -> Result<Vec<u8>, ConfigError> {
        let Some(path) = &self.ca_bundle else {
            return Ok(AMAZON_TRUST_SERVICES.to_vec());
        };
        let pem = std::fs::read(path).map_err(|error| ConfigError::new("AWS_CA_BUNDLE", path, error.to_string()))?;
        let certificates = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ConfigError::new("AWS_CA_BUNDLE", path, format!("not a PEM bundle: {error}")))?;
        if certificates.is_empty() {
            return Err(ConfigError::new("AWS_CA_BUNDLE", path, "holds no certificate"));
        }
        let mut roots = rustls::RootCertStore::empty();
        for certificate in certificates {
            roots
                .add(certificate)
                .map_err(|error| ConfigError::new("AWS_CA_BUNDLE", path, format!("unusable certificate: {error}")))?;
        }
        Ok(pem)
    }
}

/// The most one ledger operation may take, its SDK retries included: after it the client gives
/// up (see `WRITES_LAND_WITHIN`).
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);

/// A DynamoDB client for `connection`: TLS through rustls on aws-lc trusting
/// [`Connection::trusted_roots`], short timeouts and two attempts, so an unreachable DynamoDB is
/// promptly unavailable; every call counted (`metered`).
pub fn client(connection: &Connection) -> Result<Client, ConfigError> {
    let credentials = connection.credentials.clone().ok_or_else(|| {
        ConfigError::new(
            "AWS_ACCESS_KEY_ID",
            "",
            "not set (with AWS_SECRET_ACCESS_KEY): Lambda sets both; export them elsewhere",
        )
    })?;
    let mut builder = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(connection.region.clone().map(Region::new))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(https_client(connection)?)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_attempt_timeout(Duration::from_secs(2))
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .interceptor(super::metered::CallMeter);
    if let Some(url) = &connection.endpoint_url {
        builder = builder.endpoint_url(url);
    }
    Ok(Client::from_conf(builder.build()))
}

/// The HTTPS client every AWS client here uses: rustls on aws-lc, trusting
/// [`Connection::trusted_roots`] (S3's endpoints chain to the same roots as DynamoDB's).
pub fn https_client(connection: &Connection) -> Result<SharedHttpClient, ConfigError> {
    let trust = TrustStore::empty().with_pem_certificate(connection.trusted_roots()?);
    let tls = TlsContext::builder().with_trust_store(trust).build().map_err(|error| {
        ConfigError::new("AWS_CA_BUNDLE", connection.ca_bundle.clone().unwrap_or_default(), error.to_string())
    })?;
    Ok(aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(tls)
        .build_https())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(pairs: &[(&str, &str)]) -> Connection {
        Connection::from_lookup(|name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string()))
    }

    #[test]
    fn the_amazon_roots_are_five_usable_certificates() {
        let certificates =
            CertificateDer::pem_slice_iter(AMAZON_TRUST_SERVICES).collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(certificates.len(), 5);
        let mut roots = rustls::RootCertStore::empty();
        let (valid, invalid) = roots.add_parsable_certificates(certificates);
        assert_eq!((valid, invalid), (5, 0));
    }

    #[test]
    fn the_service_variable_wins_over_the_global_one() {
        let both = connection(&[("AWS_ENDPOINT_URL", "http://global"), ("AWS_ENDPOINT_URL_DYNAMODB", "http://ddb")]);
        assert_eq!(both.endpoint_url.as_deref(), Some("http://ddb"));
        let global = connection(&[("AWS_ENDPOINT_URL", "http://global"), ("AWS_DEFAULT_REGION", "eu-west-1")]);
        assert_eq!(global.endpoint_url.as_deref(), Some("http://global"));
        assert_eq!(global.region.as_deref(), Some("eu-west-1"));
        assert_eq!(connection(&[("AWS_CA_BUNDLE", "")]).ca_bundle, None);
    }

    #[test]
    fn missing_credentials_fail_naming_the_variable() {
        let error = client(&connection(&[("AWS_REGION", "us-east-1")])).unwrap_err();
        assert!(error.to_string().contains("AWS_ACCESS_KEY_ID"), "{error}");
        let with = connection(&[
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ]);
        let credentials = with.credentials.expect("credentials");
        assert_eq!((credentials.access_key_id(), credentials.session_token()), ("id", Some("token")));
    }

    const KEYS: [(&str, &str); 2] = [("AWS_ACCESS_KEY_ID", "id"), ("AWS_SECRET_ACCESS_KEY", "secret")];

    #[test]
    fn a_bad_bundle_fails_naming_the_variable() {
        let missing =
            client(&connection(&[KEYS[0], KEYS[1], ("AWS_CA_BUNDLE", "/nonexistent/bundle.pem")])).unwrap_err();
        assert!(missing.to_string().contains("AWS_CA_BUNDLE"), "{missing}");
        let path = std::env::temp_dir().join(format!("not-a-bundle-{}.pem", std::process::id()));
        std::fs::write(&path, "hello").unwrap();
        let empty = client(&connection(&[KEYS[0], KEYS[1], ("AWS_CA_BUNDLE", path.to_str().unwrap())])).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(empty.to_string().contains("holds no certificate"), "{empty}");
    }

    #[test]
    fn a_good_bundle_builds_a_client() {
        let path = std::env::temp_dir().join(format!("bundle-{}.pem", std::process::id()));
        std::fs::write(&path, AMAZON_TRUST_SERVICES).unwrap();
        let built = client(&connection(&[
            KEYS[0],
            KEYS[1],
            ("AWS_CA_BUNDLE", path.to_str().unwrap()),
            ("AWS_REGION", "us-east-1"),
        ]));
        std::fs::remove_file(&path).unwrap();
        assert!(built.is_ok());
    }
}
