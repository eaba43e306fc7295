//! Secrets Manager, the [`SecretSource`] of the deployed functions: `GetSecretValue` through a
//! client built on first need (a function that never needs a key never builds one), with the
//! ledger's TLS, credentials and short timeouts. `AWS_ENDPOINT_URL_SECRETS_MANAGER` (the SDKs'
//! own setting) points it at a stand-in (moto's server in the tests).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_sdk_secretsmanager::config::retry::RetryConfig;
use aws_sdk_secretsmanager::config::timeout::TimeoutConfig;
use aws_sdk_secretsmanager::config::{BehaviorVersion, Region, SharedCredentialsProvider};
use aws_sdk_secretsmanager::error::{DisplayErrorContext, SdkError};
use aws_sdk_secretsmanager::Client;
use futures::future::BoxFuture;

use crate::adapters::dynamo::client::{https_client, Connection};
use crate::config::{Config, ConfigError};
use crate::keys::{Keys, SecretSource};
use crate::ports::StoreError;

/// The variable naming Secrets Manager's endpoint, as every AWS SDK reads it.
pub const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL_SECRETS_MANAGER";

/// `config`'s keys as a deployed function reads them: from the secrets it names, through
/// Secrets Manager, else the environment's.
pub fn deployed_keys(config: &Config) -> Arc<Keys> {
    Arc::new(Keys::from_config(config, Some(Arc::new(SecretsManager::on_first_use()))))
}

/// Secrets Manager, its client built when first needed.
#[derive(Clone)]
pub struct SecretsManager {
    client: Arc<OnceLock<Client>>,
    connection: Connection,
    endpoint_url: Option<String>,
}

impl SecretsManager {
    /// Secrets Manager as the environment says (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, else the
    /// region's own endpoint), its client built on first use.
    pub fn on_first_use() -> Self {
        let endpoint_url = std::env::var(ENDPOINT_VARIABLE).ok().filter(|url| !url.is_empty());
        SecretsManager { client: Arc::default(), connection: Connection::from_env(), endpoint_url }
    }

    /// Through `client` (the tests' own, recording its calls).
    pub fn with_client(client: Client) -> Self {
        let secrets = SecretsManager::on_first_use();
        let _ = secrets.client.set(client);
        secrets
    }

    /// A client for the environment: one attempt of at most 2 s and one retry, so a read that
    /// cannot be answered is promptly unavailable (the keys read last stay in force meanwhile).
    pub fn client_from_env() -> Result<Client, ConfigError> {
        SecretsManager::on_first_use().build()
    }

    fn build(&self) -> Result<Client, ConfigError> {
        let credentials = self.connection.credentials.clone().ok_or_else(|| {
            ConfigError::new("AWS_ACCESS_KEY_ID", "", "not set (with AWS_SECRET_ACCESS_KEY): Lambda sets both")
        })?;
        let mut builder = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(self.connection.region.clone().map(Region::new))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .http_client(https_client(&self.connection)?)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(1))
                    .operation_attempt_timeout(Duration::from_secs(2))
                    .operation_timeout(Duration::from_secs(5))
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(2));
        if let Some(url) = &self.endpoint_url {
            builder = builder.endpoint_url(url);
        }
        Ok(Client::from_conf(builder.build()))
    }

    fn client(&self) -> Result<&Client, StoreError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let built = self
            .build()
            .map_err(|error| StoreError::Unavailable { store: "secretsmanager", detail: error.to_string() })?;
        Ok(self.client.get_or_init(|| built))
    }
}

impl SecretSource for SecretsManager {
    fn secret_text<'a>(&'a self, secret_id: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(async move {
            let answer = self.client()?.get_secret_value().secret_id(secret_id).send().await.map_err(unavailable)?;
            answer.secret_string.ok_or_else(|| StoreError::Corrupt(format!("the secret {secret_id} holds no text")))
        })
    }
}

/// Secrets Manager could not be reached, or refused: a read that may succeed later.
fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(error: SdkError<E, R>) -> StoreError {
    StoreError::Unavailable { store: "secretsmanager", detail: DisplayErrorContext(error).to_string() }
}
