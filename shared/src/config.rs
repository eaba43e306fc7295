//! Configuration from the environment, with DESIGN.md's defaults. Read once, at start-up.

use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

use crate::clock::Millis;
use crate::domain::membership::{MembershipKeys, MAX_KEYS, MIN_KEY_LEN};
use crate::domain::patterns::RiskRules;
use crate::domain::risk::{GrabRate, RateCounting};
use crate::domain::{BusinessDay, Currency, DailyLimits, Funds, Limits, PassphraseKey, SplitVersion};

/// What settle may write to one DynamoDB partition key per second unless
/// `SETTLE_PARTITION_WRITE_UNITS` says otherwise: DynamoDB's per-partition 1,000 less a tenth.
pub const DEFAULT_SETTLE_PARTITION_WRITE_UNITS: u32 = 900;

/// A variable that is set but unusable.
#[derive(Debug, Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    name: &'static str,
    value: String,
    reason: String,
}

impl ConfigError {
    /// `name` is set to `value`, which cannot be used because of `reason`.
    pub fn new(name: &'static str, value: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError { name, value: value.into(), reason: reason.into() }
    }
}

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

    /// Reads configuration through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&lookup);
        let defaults = Limits::default();
        let limits = Limits {
            max_total_cents: env.number("MAX_TOTAL_CENTS", defaults.max_total_cents, 1)?,
            max_count: env.number_within("MAX_COUNT", defaults.max_count, 1..=Limits::LARGEST_COUNT)?,
            min_expires_in_seconds: env.number("MIN_EXPIRES_IN_SECONDS", defaults.min_expires_in_seconds, 1)?,
            max_expires_in_seconds: env.number("MAX_EXPIRES_IN_SECONDS", defaults.max_expires_in_seconds, 1)?,
            default_expires_in_seconds: env.number(
                "DEFAULT_EXPIRES_IN_SECONDS",
                defaults.default_expires_in_seconds,
                1,
            )?,
            max_recipients: env.number("MAX_RECIPIENTS", defaults.max_recipients, 1)?,
            max_opens_ahead_seconds: env.number("MAX_OPENS_AHEAD_SECONDS", defaults.max_opens_ahead_seconds, 1)?,
            split_version: {
                let number = env.number_within("SPLIT_VERSION", defaults.split_version.number(), 1..=2)?;
                SplitVersion::try_from(number)
                    .map_err(|reason| ConfigError::new("SPLIT_VERSION", number.to_string(), reason))?
            },
        };
        let daily_defaults = DailyLimits::default();
        let daily = DailyLimits {
            max_sends: env.number("MAX_SENDS_PER_DAY", daily_defaults.max_sends, 1)?,
            max_sent_cents: env.number("MAX_SENT_CENTS_PER_DAY", daily_defaults.max_sent_cents, 1)?,
        };
        if !(limits.min_expires_in_seconds..=limits.max_expires_in_seconds).contains(&limits.default_expires_in_seconds)
        {
            return Err(ConfigError {
                name: "DEFAULT_EXPIRES_IN_SECONDS",
                value: limits.default_expires_in_seconds.to_string(),
                reason: "must lie between MIN_EXPIRES_IN_SECONDS and MAX_EXPIRES_IN_SECONDS".into(),
            });
        }
        let key_prefix = env.text("REDIS_KEY_PREFIX", "rp");
        if !key_prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) {
            return Err(ConfigError {
                name: "REDIS_KEY_PREFIX",
                value: key_prefix,
                reason: "use letters, digits and - _ . : only (braces would change cluster slots)".into(),
            });
        }
        let funds = match env.raw("FUNDS") {
            None => Funds::default(),
            Some(value) => {
                Funds::parse(&value).ok_or_else(|| ConfigError::new("FUNDS", value, "expected wallet or none"))?
            }
        };
        let currency = match env.raw("CURRENCY") {
            None => Currency::default(),
            Some(code) => Currency::parse(&code).ok_or_else(|| {
                ConfigError::new("CURRENCY", code, "not an ISO 4217 code with a minor unit (CNY, USD, JPY, …)")
            })?,
        };
        let business_day = match env.raw("BUSINESS_TIME_ZONE") {
            None => BusinessDay::default(),
            Some(zone) => BusinessDay::parse(&zone).ok_or_else(|| {
                ConfigError::new("BUSINESS_TIME_ZONE", zone, "not an IANA time zone (UTC, Asia/Shanghai, …)")
            })?,
        };
        let replicas: u32 = env.number("GRAB_WAIT_REPLICAS", 0, 0)?;
        let rate_grabs: u32 = env.number("USER_GRAB_LIMIT", 0, 0)?;
        let rate_window: u32 = env.number_within("USER_GRAB_WINDOW_SECONDS", 60, 1..=3_600)?;
        let counting = match env.raw("USER_GRAB_COUNTING") {
            None => RateCounting::default(),
            Some(value) => RateCounting::parse(&value)
                .ok_or_else(|| ConfigError::new("USER_GRAB_COUNTING", value, "expected exact or alongside"))?,
        };
        let grab_rate =
            (rate_grabs > 0).then_some(GrabRate { grabs: rate_grabs, window_seconds: rate_window, counting });
        let wait_timeout: u64 = env.number("GRAB_WAIT_TIMEOUT_MS", 100, 1)?;
        let risk_rules = risk_rules(&env)?;
        Ok(Config {
            redis: RedisConfig {
                url: env.text("REDIS_URL", "redis://127.0.0.1:6379"),
                cluster: env.flag("REDIS_CLUSTER", false)?,
                timeout: Duration::from_millis(env.number("REDIS_TIMEOUT_MS", 500, 1)?),
                key_prefix,
            },
            table_name: env.text("TABLE_NAME", "RedPackets"),
            operator_roles_claim: env.text("OPERATOR_ROLES_CLAIM", "cognito:groups"),
            limits,
            daily,
            business_day,
            passphrase_key: PassphraseKey::new(&env.text("PASSPHRASE_KEY", LOCAL_PASSPHRASE_KEY)),
            membership_keys: membership_keys(&env)?,
            grab_wait: (replicas > 0).then(|| ReplicaWait { replicas, timeout: Duration::from_millis(wait_timeout) }),
            settle_shards: env.number("SETTLE_SHARDS", 16, 1)?,
            settle_drain: Duration::from_secs(env.number("SETTLE_DRAIN_SECONDS", 0, 0)?),
            settle_partition_write_units: env.number(
                "SETTLE_PARTITION_WRITE_UNITS",
                DEFAULT_SETTLE_PARTITION_WRITE_UNITS,
                100,
            )?,
            funds,
            currency,
            grab_rate,
            hold_refresh: Duration::from_secs(env.number_within("HOLD_REFRESH_SECONDS", 5, 1..=300)?),
            risk_rules,
        })
    }
}

/// The `RISK_*` thresholds, each defaulting to [`RiskRules::default`]'s.
fn risk_rules<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<RiskRules, ConfigError> {
    let defaults = RiskRules::default();
    let seconds = |name, default: Millis| -> Result<Millis, ConfigError> {
        Ok(Millis::from(env.number_within::<u32>(name, (default / 1000) as u32, 1..=86_400)?) * 1000)
    };
    let hold_on_flag = match env.raw("RISK_HOLD_ON_FLAG").as_deref() {
        None | Some("none") => None,
        Some(scope) => Some(serde_json::from_value(serde_json::Value::String(scope.to_owned())).map_err(|_| {
            ConfigError::new("RISK_HOLD_ON_FLAG", scope.to_owned(), "expected none, send, grab, money_out or all")
        })?),
    };
    Ok(RiskRules {
        chain_links: env.number_within("RISK_CHAIN_LINKS", defaults.chain_links, 0..=32)?,
        chain_window_ms: seconds("RISK_CHAIN_WINDOW_SECONDS", defaults.chain_window_ms)?,
        chain_tolerance_percent: env.number_within(
            "RISK_CHAIN_TOLERANCE_PERCENT",
            defaults.chain_tolerance_percent,
            0..=100,
        )?,
        cycle_window_ms: seconds("RISK_CYCLE_WINDOW_SECONDS", defaults.cycle_window_ms)?,
        cycle_min_each_way: env.number_within("RISK_CYCLE_MIN_EACH_WAY", defaults.cycle_min_each_way, 0..=1_000)?,
        cycle_max_net_percent: env.number_within(
            "RISK_CYCLE_MAX_NET_PERCENT",
            defaults.cycle_max_net_percent,
            0..=100,
        )?,
        chats_per_day: env.number_within("RISK_CHATS_PER_DAY", defaults.chats_per_day, 0..=1_000)?,
        max_shares: env.number_within("RISK_MAX_SHARES", defaults.max_shares, 1..=100_000)?,
        hold_on_flag,
    })
}

/// `MEMBERSHIP_KEYS`, or the local development key; the value is never echoed in an error.
fn membership_keys<F: Fn(&str) -> Option<String>>(env: &Env<'_, F>) -> Result<MembershipKeys, ConfigError> {
    MembershipKeys::parse(&env.text("MEMBERSHIP_KEYS", LOCAL_MEMBERSHIP_KEY)).ok_or_else(|| {
        let reason = format!("expected 1 to {MAX_KEYS} comma-separated keys of {MIN_KEY_LEN} bytes or more");
        ConfigError::new("MEMBERSHIP_KEYS", "<redacted>", reason)
    })
}

/// The membership key of local runs and tests (the local chat server's stand-in signs with it),
/// when `MEMBERSHIP_KEYS` is not set.
pub const LOCAL_MEMBERSHIP_KEY: &str = "local-dev-membership-key";

/// The passphrase key of local runs and tests, when `PASSPHRASE_KEY` is not set.
pub const LOCAL_PASSPHRASE_KEY: &str = "local-dev-passphrase-key";

struct Env<'a, F: Fn(&str) -> Option<String>>(&'a F);

impl<F: Fn(&str) -> Option<String>> Env<'_, F> {
    fn raw(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    fn text(&self, name: &str, default: &str) -> String {
        self.raw(name).unwrap_or_else(|| default.to_owned())
    }

    fn number<T: FromStr + PartialOrd + Copy + std::fmt::Display>(
        &self,
        name: &'static str,
        default: T,
        min: T,
    ) -> Result<T, ConfigError> {
        let Some(value) = self.raw(name) else {
            return Ok(default);
        };
        match value.parse::<T>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(ConfigError { name, value, reason: format!("expected a whole number >= {min}") }),
        }
    }

    fn number_within<T: FromStr + PartialOrd + Copy + std::fmt::Display>(
        &self,
        name: &'static str,
        default: T,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, ConfigError> {
        let n = self.number(name, default, *range.start())?;
        if n > *range.end() {
            let reason =
                format!("expected at most {}: the largest the stores' calls are sized and tested for", range.end());
            return Err(ConfigError { name, value: n.to_string(), reason });
        }
        Ok(n)
    }

    fn flag(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.raw(name).as_deref().map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("true" | "1" | "yes") => Ok(true),
            Some("false" | "0" | "no") => Ok(false),
            Some(other) => Err(ConfigError { name, value: other.to_owned(), reason: "expected true or false".into() }),
        }
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
