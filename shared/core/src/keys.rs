//! The deployment's keys, read at run time: the passphrase key (`PASSPHRASE_KEY_SECRET`) and the
//! membership keys (`MEMBERSHIP_KEYS_SECRET`), each from its secret in a secret store (Secrets
//! Manager in AWS) on first need, then kept for `SECRETS_REFRESH_SECONDS`. A rotation needs no
//! deploy: a key put in the secret or taken out of it is in force in every instance within that
//! bound of the change. While the store does not answer, an instance keeps the keys it read last
//! and asks again every [`RETRY_AFTER_FAILURE`]; an instance that never read them answers 503 to
//! the requests that need them. Without a secret (local runs, tests) the keys are the
//! environment's ([`crate::config::Config`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::config::Config;
use crate::domain::membership::MembershipKeys;
use crate::domain::PassphraseKey;
use crate::ports::StoreError;

/// How soon an instance asks the secret store again after it failed to answer, keeping the
/// keys it read last meanwhile.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Where secrets are read: one call per secret, its text.
pub trait SecretSource: Send + Sync {
    /// The current text of the secret `secret_id` (an ARN or a name).
    fn secret_text<'a>(&'a self, secret_id: &'a str) -> BoxFuture<'a, Result<String, StoreError>>;
}

/// The passphrase key and the membership keys, each fixed or read from its secret.
pub struct Keys {
    passphrase: Key<PassphraseKey>,
    membership: Key<MembershipKeys>,
}

impl Keys {
    /// `config`'s keys: those it names secrets for are read from `source` (when there is one),
    /// kept for `config.secrets_refresh`; the others are the environment's.
    pub fn from_config(config: &Config, source: Option<Arc<dyn SecretSource>>) -> Keys {
        let from = |secret: &Option<String>| secret.clone().zip(source.clone());
        Keys {
            passphrase: Key::new(
                config.passphrase_key.clone(),
                from(&config.passphrase_key_secret),
                |text| Some(PassphraseKey::new(text.trim())),
                config.secrets_refresh,
            ),
            membership: Key::new(
                config.membership_keys.clone(),
                from(&config.membership_keys_secret),
                MembershipKeys::parse,
                config.secrets_refresh,
            ),
        }
    }

    /// The environment's keys, read from no secret.
    pub fn fixed(config: &Config) -> Keys {
        Keys::from_config(config, None)
    }

    /// The passphrase key in force.
    pub async fn passphrase_key(&self) -> Result<PassphraseKey, StoreError> {
        self.passphrase.current().await
    }

    /// The membership keys in force.
    pub async fn membership_keys(&self) -> Result<MembershipKeys, StoreError> {
        self.membership.current().await
    }
}

/// One key: the environment's, or its secret's as last read.
struct Key<T> {
    fixed: T,
    secret: Option<(String, Arc<dyn SecretSource>)>,
    parse: fn(&str) -> Option<T>,
    refresh: Duration,
    read: tokio::sync::Mutex<Option<Read<T>>>,
}

/// A secret's value as read, and when to read it again.
struct Read<T> {
    value: T,
    next_read: Instant,
}

impl<T: Clone> Key<T> {
    fn new(
        fixed: T,
        secret: Option<(String, Arc<dyn SecretSource>)>,
        parse: fn(&str) -> Option<T>,
        refresh: Duration,
    ) -> Self {
        Key { fixed, secret, parse, refresh, read: tokio::sync::Mutex::new(None) }
    }

    /// The value in force: the secret's, read again once its time has come (one caller reads;
    /// the others wait for its answer), or the fixed one without a secret.
    async fn current(&self) -> Result<T, StoreError> {
        let Some((secret_id, source)) = &self.secret else { return Ok(self.fixed.clone()) };
        let mut read = self.read.lock().await;
        let now = Instant::now();
        if let Some(read) = read.as_ref().filter(|read| now < read.next_read) {
            return Ok(read.value.clone());
        }
        let fetched = source.secret_text(secret_id).await.and_then(|text| {
            (self.parse)(&text)
                .ok_or_else(|| StoreError::Corrupt(format!("the secret {secret_id} holds no usable key")))
        });
        match (fetched, read.as_mut()) {
            (Ok(value), _) => {
                *read = Some(Read { value: value.clone(), next_read: now + self.refresh });
                Ok(value)
            }
            (Err(error), Some(kept)) => {
                metrics::counter!("SecretReadFailures").increment(1);
                tracing::warn!(secret = %secret_id, %error, "the secret could not be read again; the keys read last stay in force");
                kept.next_read = now + RETRY_AFTER_FAILURE.min(self.refresh);
                Ok(kept.value.clone())
            }
            (Err(error), None) => {
                metrics::counter!("SecretReadFailures").increment(1);
                Err(match error {
                    StoreError::Corrupt(detail) => StoreError::Unavailable { store: "secretsmanager", detail },
                    other => other,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A secret store holding one text per id, or failing every read.
    #[derive(Default)]
    struct Store {
        texts: Mutex<std::collections::HashMap<String, String>>,
        down: std::sync::atomic::AtomicBool,
        reads: std::sync::atomic::AtomicU32,
    }

    impl SecretSource for Store {
        fn secret_text<'a>(&'a self, secret_id: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
            Box::pin(async move {
                self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(StoreError::Unavailable { store: "secretsmanager", detail: "down".into() });
                }
                self.texts.lock().unwrap().get(secret_id).cloned().ok_or_else(|| StoreError::Corrupt("none".into()))
            })
        }
    }

    const OLD: &str = "membership-key-old-0001";
    const NEW: &str = "membership-key-new-0002";

    fn keys(store: &Arc<Store>, refresh: Duration) -> Keys {
        let mut config = Config::from_lookup(|_| None).unwrap();
        config.membership_keys_secret = Some("members".into());
        config.secrets_refresh = refresh;
        Keys::from_config(&config, Some(store.clone() as Arc<dyn SecretSource>))
    }

    fn put(store: &Store, text: &str) {
        store.texts.lock().unwrap().insert("members".into(), text.into());
    }

    #[tokio::test]
    async fn a_key_put_in_or_taken_out_is_in_force_after_the_refresh_and_not_before() {
        let store = Arc::new(Store::default());
        put(&store, OLD);
        let keys = keys(&store, Duration::from_millis(200));
        assert_eq!(keys.membership_keys().await.unwrap(), MembershipKeys::parse(OLD).unwrap());
        put(&store, &format!("{NEW},{OLD}"));
        assert_eq!(
            keys.membership_keys().await.unwrap(),
            MembershipKeys::parse(OLD).unwrap(),
            "kept until the refresh"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(keys.membership_keys().await.unwrap(), MembershipKeys::parse(&format!("{NEW},{OLD}")).unwrap());
        assert_eq!(store.reads.load(std::sync::atomic::Ordering::SeqCst), 2, "one read per refresh");
    }

    #[tokio::test]
    async fn an_unanswering_store_keeps_the_keys_read_last_and_a_first_read_fails() {
        let store = Arc::new(Store::default());
        put(&store, OLD);
        store.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let keys = keys(&store, Duration::from_millis(1));
        assert!(matches!(keys.membership_keys().await, Err(StoreError::Unavailable { .. })), "never read: 503");
        store.down.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(keys.membership_keys().await.is_ok());
        store.down.store(true, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(keys.membership_keys().await.unwrap(), MembershipKeys::parse(OLD).unwrap(), "the keys read last");
    }

    #[tokio::test]
    async fn a_secret_holding_no_usable_key_is_unavailable_never_a_key() {
        let store = Arc::new(Store::default());
        put(&store, "short");
        let keys = keys(&store, Duration::from_secs(60));
        assert!(matches!(keys.membership_keys().await, Err(StoreError::Unavailable { store: "secretsmanager", .. })));
    }

    #[tokio::test]
    async fn without_a_secret_the_environments_keys_are_in_force() {
        let config = Config::from_lookup(|_| None).unwrap();
        let keys = Keys::fixed(&config);
        assert_eq!(keys.membership_keys().await.unwrap(), config.membership_keys);
        assert_eq!(keys.passphrase_key().await.unwrap(), config.passphrase_key);
    }
}
