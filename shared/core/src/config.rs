//! Configuration from the environment, through the settings' table ([`crate::settings`]). Read
//! once, at start-up.

use std::time::Duration;

use crate::clock::Millis;
use crate::domain::membership::{MembershipKeys, MAX_KEYS, MIN_KEY_LEN};
use crate::domain::patterns::RiskRules;
use crate::domain::risk::{GrabRate, RateCounting};
use crate::domain::{BusinessDay, Currency, DailyLimits, Funds, Limits, PassphraseKey, SplitVersion};
use crate::settings::{self, Setting};
pub use crate::settings::{ConfigError, LOCAL_MEMBERSHIP_KEY, LOCAL_PASSPHRASE_KEY};

/// How to reach Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port` or `rediss://` for TLS.
    pub url: String,
    /// Use the cluster client (ElastiCache cluster mode, Serverless).
    pub cluster: bool,
    /// Connect and response timeout.
    pub timeout: Duration,
    /// First part of every key (`REDIS_KEY_PREFIX`, default `rp`), so several deployments or
    /// test runs can share one Redis.
    pub key_prefix: String,
}

/// Whether grabs wait for replicas to acknowledge them before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// How many replicas must acknowledge.
    pub replicas: u32,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// Everything the functions read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Redis connection.
    pub redis: RedisConfig,
    /// The DynamoDB table.
    pub table_name: String,
    /// Packet limits.
    pub limits: Limits,
    /// What one sender may send per business day.
    pub daily: DailyLimits,
    /// The business day's time zone (`BUSINESS_TIME_ZONE`, IANA, default `UTC`): daily limits,
    /// trial balances and statements count its calendar days.
    pub business_day: BusinessDay,
    /// The secret passphrases are hashed under (`PASSPHRASE_KEY`; the template generates one
    /// per deployment in Secrets Manager; local runs use a fixed development key).
    pub passphrase_key: PassphraseKey,
    /// The keys membership tickets are signed with (`MEMBERSHIP_KEYS`: one, or two during a
    /// rotation, comma-separated, the signing one first; the template generates one per
    /// deployment in Secrets Manager, shared with the host app's chat server; local runs use a
    /// fixed development key).
    pub membership_keys: MembershipKeys,
    /// The secret the passphrase key is read from at run time (`PASSPHRASE_KEY_SECRET`, the
    /// template's `PassphraseKey`); `None`: `passphrase_key`.
    pub passphrase_key_secret: Option<String>,
    /// The secret the membership keys are read from at run time (`MEMBERSHIP_KEYS_SECRET`, the
    /// template's `MembershipKeys`); `None`: `membership_keys`.
    pub membership_keys_secret: Option<String>,
    /// How long a key read from its secret is kept (`SECRETS_REFRESH_SECONDS`, default 60): the
    /// bound within which a rotation is in force ([`crate::keys`]).
    pub secrets_refresh: Duration,
    /// Replica acknowledgement of grabs; `None` when `GRAB_WAIT_REPLICAS` is 0.
    pub grab_wait: Option<ReplicaWait>,
    /// How many shard keys index open packets for settle.
    pub settle_shards: u32,
    /// How long one settle invocation keeps draining (a pass every second) before it returns:
    /// `SETTLE_DRAIN_SECONDS`, 0 for a single pass. The template sets it just under the
    /// schedule's minute, so a grab reaches the ledger within seconds.
    pub settle_drain: Duration,
    /// The write units settle sends to one DynamoDB partition key in any second at most, as
    /// DynamoDB sees them (`SETTLE_PARTITION_WRITE_UNITS`, default 900: DynamoDB's per-partition
    /// 1,000 less a tenth; at least 100, so a slice's share, an eleventh, holds any of settle's
    /// items; the pace lets go ten elevenths of it a second).
    pub settle_partition_write_units: u32,
    /// Whether sends, grabs and refunds move built-in balances (`FUNDS`: `wallet` or `none`).
    pub funds: Funds,
    /// The stack's one currency (`CURRENCY`, an ISO 4217 code, default `CNY`): every amount is
    /// in its minor units.
    pub currency: Currency,
    /// One user's grab attempts across every packet per window (`USER_GRAB_LIMIT` per
    /// `USER_GRAB_WINDOW_SECONDS`, default 60 s, counted as `USER_GRAB_COUNTING` says: `exact`
    /// or `alongside`, the default); `None` when `USER_GRAB_LIMIT` is 0, the
    /// default of local runs (the template sets 60).
    pub grab_rate: Option<GrabRate>,
    /// How often a grab or send function reads the holds in force again (`HOLD_REFRESH_SECONDS`,
    /// default 5): a hold placed or lifted takes effect within it.
    pub hold_refresh: Duration,
    /// How long Redis remembers the ledger's verdict on an id it does not hold
    /// (`LOOKUP_VERDICT_KEEP_SECONDS`).
    pub lookup_verdict_keep: Duration,
    /// The pattern rules' thresholds (`RISK_*`, docs/RISK.md; the template's defaults).
    pub risk_rules: RiskRules,
    /// The claim of an operator's token that holds their roles (`OPERATOR_ROLES_CLAIM`, default
    /// `cognito:groups`, the groups of a Cognito user pool; `groups` for most other providers).
    pub operator_roles_claim: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (the environment, or a map in tests). Every
    /// default and bound is the setting's own ([`crate::settings`]).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&lookup);
        let limits = limits(&env)?;
        let key_prefix = env.text(&settings::REDIS_KEY_PREFIX);
        if !key_prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) {
            let reason = "use letters, digits and - _ . : only (braces would change cluster slots)";
            return Err(ConfigError::new(settings::REDIS_KEY_PREFIX.name, key_prefix, reason));
        }
        let funds = env.parsed(&settings::FUNDS, Funds::parse, "expected wallet or none")?;
        let currency = env.parsed(
            &settings::CURRENCY,
            Currency::parse,
            "not an ISO 4217 code with a minor unit (CNY, USD, JPY, …)",
        )?;
        let business_day = env.parsed(
            &settings::BUSINESS_TIME_ZONE,
            BusinessDay::parse,
            "not an IANA time zone (UTC, Asia/Shanghai, …)",
        )?;
        let replicas: u32 = env.number(&settings::GRAB_WAIT_REPLICAS)?;
        let wait_timeout: u64 = env.number(&settings::GRAB_WAIT_TIMEOUT_MS)?;
        Ok(Config {
            redis: RedisConfig {
                url: env.text(&settings::REDIS_URL),
                cluster: env.flag(&settings::REDIS_CLUSTER)?,
                timeout: Duration::from_millis(env.number(&settings::REDIS_TIMEOUT_MS)?),
                key_prefix,
            },
            table_name: env.text(&settings::TABLE_NAME),
            operator_roles_claim: env.text(&settings::OPERATOR_ROLES_CLAIM),
            limits,
            daily: DailyLimits {
                max_sends: env.number(&settings::MAX_SENDS_PER_DAY)?,
                max_sent_cents: env.number(&settings::MAX_SENT_CENTS_PER_DAY)?,
            },
            business_day,
            passphrase_key: PassphraseKey::new(&env.text(&settings::PASSPHRASE_KEY)),
            membership_keys: membership_keys(&env)?,
            passphrase_key_secret: env.optional(&settings::PASSPHRASE_KEY_SECRET),
            membership_keys_secret: env.optional(&settings::MEMBERSHIP_KEYS_SECRET),
            secrets_refresh: Duration::from_secs(env.number(&settings::SECRETS_REFRESH_SECONDS)?),
            grab_wait: (replicas > 0).then(|| ReplicaWait { replicas, timeout: Duration::from_millis(wait_timeout) }),
            settle_shards: env.number(&settings::SETTLE_SHARDS)?,
            settle_drain: Duration::from_secs(env.number(&settings::SETTLE_DRAIN_SECONDS)?),
            settle_partition_write_units: env.number(&settings::SETTLE_PARTITION_WRITE_UNITS)?,
            funds,
            currency,
            grab_rate: grab_rate(&env)?,
            hold_refresh: Duration::from_secs(env.number(&settings::HOLD_REFRESH_SECONDS)?),
            lookup_verdict_keep: Duration::from_secs(env.number(&settings::LOOKUP_VERDICT_KEEP_SECONDS)?),
            risk_rules: risk_rules(&env)?,
        })
    }
}

/// The packet limits; the default lifetime must lie between the shortest and the longest.
fn limits<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<Limits, ConfigError> {
    let version: u8 = env.number(&settings::SPLIT_VERSION)?;
    let limits = Limits {
        max_total_cents: env.number(&settings::MAX_TOTAL_CENTS)?,
        max_count: env.number(&settings::MAX_COUNT)?,
        min_expires_in_seconds: env.number(&settings::MIN_EXPIRES_IN_SECONDS)?,
        max_expires_in_seconds: env.number(&settings::MAX_EXPIRES_IN_SECONDS)?,
        default_expires_in_seconds: env.number(&settings::DEFAULT_EXPIRES_IN_SECONDS)?,
        max_recipients: env.number(&settings::MAX_RECIPIENTS)?,
        max_opens_ahead_seconds: env.number(&settings::MAX_OPENS_AHEAD_SECONDS)?,
        split_version: SplitVersion::try_from(version)
            .map_err(|reason| ConfigError::new(settings::SPLIT_VERSION.name, version.to_string(), reason))?,
    };
    if !(limits.min_expires_in_seconds..=limits.max_expires_in_seconds).contains(&limits.default_expires_in_seconds) {
        return Err(ConfigError::new(
            settings::DEFAULT_EXPIRES_IN_SECONDS.name,
            limits.default_expires_in_seconds.to_string(),
            "must lie between MIN_EXPIRES_IN_SECONDS and MAX_EXPIRES_IN_SECONDS",
        ));
    }
    Ok(limits)
}

/// One user's grab rate; `None` when `USER_GRAB_LIMIT` is 0.
fn grab_rate<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<Option<GrabRate>, ConfigError> {
    let grabs: u32 = env.number(&settings::USER_GRAB_LIMIT)?;
    let window_seconds: u32 = env.number(&settings::USER_GRAB_WINDOW_SECONDS)?;
    let counting = env.parsed(&settings::USER_GRAB_COUNTING, RateCounting::parse, "expected exact or alongside")?;
    Ok((grabs > 0).then_some(GrabRate { grabs, window_seconds, counting }))
}

/// The `RISK_*` thresholds.
fn risk_rules<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<RiskRules, ConfigError> {
    let seconds = |setting| -> Result<Millis, ConfigError> { Ok(env.number::<Millis>(setting)? * 1000) };
    let hold_on_flag =
        match env.accepted(&settings::RISK_HOLD_ON_FLAG)?.as_str() {
            "none" => None,
            scope => Some(serde_json::from_value(serde_json::Value::String(scope.to_owned())).map_err(|_| {
                ConfigError::new(settings::RISK_HOLD_ON_FLAG.name, scope.to_owned(), "not a hold's scope")
            })?),
        };
    Ok(RiskRules {
        chain_links: env.number(&settings::RISK_CHAIN_LINKS)?,
        chain_window_ms: seconds(&settings::RISK_CHAIN_WINDOW_SECONDS)?,
        chain_tolerance_percent: env.number(&settings::RISK_CHAIN_TOLERANCE_PERCENT)?,
        cycle_window_ms: seconds(&settings::RISK_CYCLE_WINDOW_SECONDS)?,
        cycle_min_each_way: env.number(&settings::RISK_CYCLE_MIN_EACH_WAY)?,
        cycle_max_net_percent: env.number(&settings::RISK_CYCLE_MAX_NET_PERCENT)?,
        chats_per_day: env.number(&settings::RISK_CHATS_PER_DAY)?,
        max_shares: env.number(&settings::RISK_MAX_SHARES)?,
        hold_on_flag,
    })
}

/// `MEMBERSHIP_KEYS`, or the local development key; the value is never echoed in an error.
fn membership_keys<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<MembershipKeys, ConfigError> {
    MembershipKeys::parse(&env.text(&settings::MEMBERSHIP_KEYS)).ok_or_else(|| {
        let reason = format!("expected 1 to {MAX_KEYS} comma-separated keys of {MIN_KEY_LEN} bytes or more");
        ConfigError::new(settings::MEMBERSHIP_KEYS.name, "<redacted>", reason)
    })
}

/// The environment, read setting by setting: a blank value counts as unset.
struct Env<'a, F: Fn(&str) -> Option<String>>(&'a F);

impl<F: Fn(&str) -> Option<String>> Env<'_, F> {
    /// The value set, or the setting's default, checked against what the setting accepts.
    fn accepted(&self, setting: &Setting) -> Result<String, ConfigError> {
        Ok(setting.read(self.0)?.unwrap_or_default())
    }

    /// A text setting's value, or its default (free text is never refused).
    fn text(&self, setting: &Setting) -> String {
        setting.read(self.0).ok().flatten().unwrap_or_default()
    }

    /// A text setting's value; `None` when it is unset and has no default.
    fn optional(&self, setting: &Setting) -> Option<String> {
        setting.read(self.0).ok().flatten()
    }

    fn number<T: TryFrom<u64>>(&self, setting: &Setting) -> Result<T, ConfigError> {
        let value = self.accepted(setting)?;
        value
            .parse::<u64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| ConfigError::new(setting.name, value, "expected a whole number"))
    }

    fn flag(&self, setting: &Setting) -> Result<bool, ConfigError> {
        Ok(matches!(self.accepted(setting)?.to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
    }

    /// The value read by the domain's `parse`, refused with `reason` when it reads none.
    fn parsed<T>(&self, setting: &Setting, parse: impl Fn(&str) -> Option<T>, reason: &str) -> Result<T, ConfigError> {
        let value = self.accepted(setting)?;
        parse(&value).ok_or_else(|| ConfigError::new(setting.name, value, reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::domain::risk::HoldScope;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_match_the_design() {
        let config = config(&[]).unwrap();
        assert_eq!(config.redis.url, "redis://127.0.0.1:6379");
        assert!(!config.redis.cluster);
        assert_eq!(config.redis.timeout, Duration::from_millis(500));
        assert_eq!(config.redis.key_prefix, "rp");
        assert_eq!(config.table_name, "RedPackets");
        assert_eq!(config.limits, Limits::default());
        assert_eq!(config.limits.max_recipients, 500);
        assert_eq!(config.daily, DailyLimits { max_sends: 200, max_sent_cents: 2_000_000 });
        assert_eq!(config.passphrase_key, PassphraseKey::new(LOCAL_PASSPHRASE_KEY));
        assert_eq!(config.grab_wait, None);
        assert_eq!(config.settle_shards, 16);
        assert_eq!(config.settle_drain, Duration::ZERO);
        assert_eq!(config.funds, Funds::Wallet);
        assert_eq!(config.grab_rate, None);
        assert_eq!(config.hold_refresh, Duration::from_secs(5));
        assert_eq!(config.risk_rules, RiskRules::default());
    }

    #[test]
    fn the_risk_rules_read_their_thresholds_and_name_a_bad_one() {
        let rules =
            config(&[("RISK_CHAIN_LINKS", "5"), ("RISK_CHAIN_WINDOW_SECONDS", "120"), ("RISK_HOLD_ON_FLAG", "grab")])
                .unwrap()
                .risk_rules;
        assert_eq!((rules.chain_links, rules.chain_window_ms, rules.hold_on_flag), (5, 120_000, Some(HoldScope::Grab)));
        assert!(config(&[("RISK_HOLD_ON_FLAG", "everyone")]).unwrap_err().to_string().contains("RISK_HOLD_ON_FLAG"));
        assert!(config(&[("RISK_CHATS_PER_DAY", "5000")]).unwrap_err().to_string().contains("RISK_CHATS_PER_DAY"));
    }

    #[test]
    fn the_grab_rate_is_off_unless_a_limit_is_set() {
        let rate = config(&[("USER_GRAB_LIMIT", "60")]).unwrap().grab_rate;
        assert_eq!(rate, Some(GrabRate { grabs: 60, window_seconds: 60, counting: RateCounting::Alongside }));
        let hourly = config(&[("USER_GRAB_LIMIT", "600"), ("USER_GRAB_WINDOW_SECONDS", "3600")]).unwrap();
        assert_eq!(
            hourly.grab_rate,
            Some(GrabRate { grabs: 600, window_seconds: 3_600, counting: RateCounting::Alongside })
        );
        let exact = config(&[("USER_GRAB_LIMIT", "60"), ("USER_GRAB_COUNTING", "exact")]).unwrap().grab_rate;
        assert_eq!(exact.map(|rate| rate.counting), Some(RateCounting::Exact));
        let named = config(&[("USER_GRAB_COUNTING", "sometimes")]).unwrap_err().to_string();
        assert!(named.contains("USER_GRAB_COUNTING") && named.contains("exact or alongside"), "{named}");
        assert!(config(&[("USER_GRAB_WINDOW_SECONDS", "0")]).is_err());
        assert!(config(&[("HOLD_REFRESH_SECONDS", "0")]).unwrap_err().to_string().contains("HOLD_REFRESH_SECONDS"));
    }

    #[test]
    fn the_lookups_verdict_is_kept_as_long_as_the_setting_says() {
        assert_eq!(config(&[]).unwrap().lookup_verdict_keep, Duration::from_secs(60));
        let kept = config(&[("LOOKUP_VERDICT_KEEP_SECONDS", "5")]).unwrap().lookup_verdict_keep;
        assert_eq!(kept, Duration::from_secs(5));
        let refused = config(&[("LOOKUP_VERDICT_KEEP_SECONDS", "0")]).unwrap_err().to_string();
        assert!(refused.contains("LOOKUP_VERDICT_KEEP_SECONDS") && refused.contains(">= 1"), "{refused}");
    }

    #[test]
    fn variables_override_defaults() {
        let config = config(&[("MAX_COUNT", "500"), ("REDIS_CLUSTER", "true"), ("GRAB_WAIT_REPLICAS", "1")]).unwrap();
        assert_eq!(config.limits.max_count, 500);
        assert!(config.redis.cluster);
        assert_eq!(config.grab_wait, Some(ReplicaWait { replicas: 1, timeout: Duration::from_millis(100) }));
    }

    #[test]
    fn the_business_day_is_utc_unless_a_zone_is_named() {
        assert_eq!(config(&[]).unwrap().business_day.zone(), "UTC");
        let shanghai = config(&[("BUSINESS_TIME_ZONE", "Asia/Shanghai")]).unwrap();
        assert_eq!(shanghai.business_day.zone(), "Asia/Shanghai");
        let error = config(&[("BUSINESS_TIME_ZONE", "Mars/Olympus")]).unwrap_err().to_string();
        assert!(error.contains("BUSINESS_TIME_ZONE") && error.contains("Mars/Olympus"), "{error}");
    }

    #[test]
    fn bad_values_name_the_variable() {
        let error = config(&[("MAX_TOTAL_CENTS", "lots")]).unwrap_err().to_string();
        assert!(error.contains("MAX_TOTAL_CENTS"), "{error}");
        assert_eq!(config(&[("MAX_COUNT", "100000")]).unwrap().limits.max_count, 100_000);
        assert_eq!(config(&[("SPLIT_VERSION", "1")]).unwrap().limits.split_version, SplitVersion::V1);
        assert!(config(&[("SPLIT_VERSION", "3")]).unwrap_err().to_string().contains("SPLIT_VERSION"));
        let error = config(&[("MAX_COUNT", "100001")]).unwrap_err().to_string();
        assert!(error.contains("MAX_COUNT") && error.contains("at most 100000"), "{error}");
        assert!(config(&[("SETTLE_SHARDS", "0")]).is_err());
        assert!(config(&[("REDIS_CLUSTER", "maybe")]).is_err());
        assert!(config(&[("REDIS_KEY_PREFIX", "a{b}")]).is_err());
        assert!(config(&[("DEFAULT_EXPIRES_IN_SECONDS", "10")]).is_err());
        assert_eq!(config(&[("FUNDS", "none")]).unwrap().funds, Funds::None);
        assert!(config(&[("FUNDS", "credit")]).unwrap_err().to_string().contains("FUNDS"));
        assert_eq!(config(&[]).unwrap().currency.code(), "CNY");
        assert_eq!(config(&[("CURRENCY", "JPY")]).unwrap().currency.exponent(), 0);
        assert!(config(&[("CURRENCY", "XAU")]).unwrap_err().to_string().contains("CURRENCY"));
    }
}
