//! Every setting the functions and the local API read, declared once: its name, default, the
//! values it accepts, how the template sets it and what it means. [`crate::config::Config`]
//! parses through these entries (a default or a bound is never written again there); DEPLOY.md's
//! and DESIGN.md's tables are generated from [`SETTINGS`] (`make settings`), and the template's
//! parameters and `Environment` blocks, `local-env.json`, `run-local.sh`'s ports and every
//! variable the code reads by name are checked against it in full
//! (`local/tests/it/deployment.rs`). A default that is a domain rule (a limit, a risk threshold)
//! is the domain's constant, read here.

use thiserror::Error;

use crate::domain::patterns::RiskRules;
use crate::domain::{DailyLimits, Limits, SplitVersion};

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

/// The membership key of local runs and tests (the local chat server's stand-in signs with it),
/// when `MEMBERSHIP_KEYS` is not set.
pub const LOCAL_MEMBERSHIP_KEY: &str = "local-dev-membership-key";

/// The passphrase key of local runs and tests, when `PASSPHRASE_KEY` is not set.
pub const LOCAL_PASSPHRASE_KEY: &str = "local-dev-passphrase-key";

/// The metric namespace when `METRICS_NAMESPACE` is not set (the template sets
/// `RedPackets/<stage>`).
pub const LOCAL_METRICS_NAMESPACE: &str = "RedPackets/local";

/// A setting's value when it is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// None: the code does without (an endpoint's default, a feature off).
    Unset,
    /// This text.
    Text(&'static str),
    /// This whole number.
    Number(u64),
}

/// The values a setting accepts; anything else stops the start-up naming the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// Any text.
    Text,
    /// `true` or `false` (also `1`/`0`, `yes`/`no`).
    Flag,
    /// A whole number of at least this.
    AtLeast(u64),
    /// A whole number within these bounds, both included.
    Within(u64, u64),
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// What the text says (a time zone, a currency code, a key list): checked by its parser.
    Described(&'static str),
}

/// How the template sets a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployed {
    /// From the parameter of this name (`!Ref`), whose `Default` is the setting's and whose
    /// bounds are the setting's.
    Parameter(&'static str),
    /// From the parameter of this name, whose `Default` is the second value: a deployment's
    /// default that differs from a local run's.
    ParameterDefaulting(&'static str, &'static str),
    /// This value, written in the template.
    Value(&'static str),
    /// An expression of the stack's own resources (an endpoint, a table's name).
    Computed,
    /// The ARN of the generated secret of this logical id (`!Ref`), whose value the code reads
    /// at run time.
    Secret(&'static str),
    /// Not set: the default applies.
    NotSet,
    /// Set by Lambda's runtime.
    ByLambda,
    /// Read by the local API (`make run`) only; for those standing for a template parameter
    /// (the stage's throttles), that parameter, whose `Default` is the setting's.
    Locally(Option<&'static str>),
}

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Its value when unset.
    pub default: Fallback,
    /// What it accepts.
    pub accepts: Accepts,
    /// How the template sets it.
    pub deployed: Deployed,
    /// The template's functions whose own `Environment` sets it (logical ids); empty for the
    /// `Globals` every function shares, or for a setting the template does not set.
    pub on: &'static [&'static str],
    /// What it means, for the docs' table.
    pub meaning: &'static str,
}

impl Setting {
    /// The value in the process environment (blank counts as unset), else the default, checked
    /// against what the setting accepts.
    pub fn from_env(&self) -> Result<Option<String>, ConfigError> {
        self.read(|name| std::env::var(name).ok())
    }

    /// [`Setting::from_env`] through `lookup`.
    pub fn read(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
        let value = lookup(self.name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        let Some(value) = value.or_else(|| self.default_text()) else { return Ok(None) };
        match refusal(self, &value) {
            Some(reason) => Err(ConfigError::new(self.name, value, reason)),
            None => Ok(Some(value)),
        }
    }

    /// A whole-number setting's value in the process environment, else its default.
    pub fn number_from_env(&self) -> Result<u64, ConfigError> {
        let value = self.from_env()?.unwrap_or_default();
        value.parse().map_err(|_| ConfigError::new(self.name, value, "expected a whole number"))
    }

    /// The default as the environment would hold it (`None` when it is unset).
    pub fn default_text(&self) -> Option<String> {
        match self.default {
            Fallback::Unset => None,
            Fallback::Text(text) => Some(text.to_owned()),
            Fallback::Number(number) => Some(number.to_string()),
        }
    }
}

/// Declares each setting once: its constant (named by the variable, documented by its meaning)
/// and its row of [`SETTINGS`].
macro_rules! settings {
    ($($name:ident: $default:expr, $accepts:expr, $deployed:expr, $on:expr, $meaning:literal;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: ", $meaning, ".")]
            pub const $name: Setting = Setting {
                name: stringify!($name),
                default: $default,
                accepts: $accepts,
                deployed: $deployed,
                on: $on,
                meaning: $meaning,
            };
        )*
        /// Every setting, in the docs' order.
        pub const SETTINGS: &[Setting] = &[$($name),*];
    };
}

use Accepts::{AtLeast, Described, Flag, OneOf, Within};
use Deployed::{ByLambda, Computed, Locally, NotSet, Parameter, ParameterDefaulting, Secret, Value};
use Fallback::{Number, Text, Unset};

/// Any text ([`Accepts::Text`], whose name the default's `Text` takes in the table).
const ANY: Accepts = Accepts::Text;

const LIMITS: Limits = Limits::DEFAULT;
const DAILY: DailyLimits = DailyLimits::DEFAULT;
const RISK: RiskRules = RiskRules::DEFAULT;
const GRAB: &[&str] = &["GrabFunction", "GrabManagedFunction"];
const RISK_FN: &[&str] = &["RiskFunction"];

settings! {
    REDIS_URL: Text("redis://127.0.0.1:6379"), ANY, Computed, &[],
        "`rediss://` for TLS (`make run` starts its own Redis on 6479 unless this is set)";
    REDIS_CLUSTER: Text("false"), Flag, Value("true"), &[],
        "use the cluster client";
    REDIS_TIMEOUT_MS: Number(500), AtLeast(1), Value("500"), &[],
        "connect and response timeout of every Redis call";
    REDIS_KEY_PREFIX: Text("rp"), Described("letters, digits and `-_.:`"), NotSet, &[],
        "first part of every key, so deployments or test runs can share a Redis (braces would change cluster \
         slots)";
    TABLE_NAME: Text("RedPackets"), ANY, Computed, &[],
        "the DynamoDB table";
    AWS_ENDPOINT_URL_DYNAMODB: Unset, ANY, Value(""), &[],
        "DynamoDB Local (`make run` starts its own on 8479 unless this is set); `AWS_ENDPOINT_URL` is read when \
         it is unset; empty counts as unset. The template declares it empty so that `sam local invoke --env-vars` \
         (local-env.json) can set it: SAM sets only declared variables";
    AWS_ENDPOINT_URL: Unset, ANY, NotSet, &[],
        "every AWS client's endpoint when its own (`AWS_ENDPOINT_URL_DYNAMODB`) is unset";
    AWS_ENDPOINT_URL_S3: Unset, ANY, NotSet, &[],
        "the reports' S3 endpoint (a local S3 in the funds function's tests); empty counts as unset";
    AWS_REGION: Unset, ANY, ByLambda, &[],
        "the region; with the three credentials below, all the AWS clients read (no profile files, no metadata \
         endpoints): what a Lambda function has";
    AWS_DEFAULT_REGION: Unset, ANY, NotSet, &[],
        "the region when `AWS_REGION` is unset (a shell's AWS CLI setting)";
    AWS_ACCESS_KEY_ID: Unset, ANY, ByLambda, &[],
        "the execution role's credentials, with the two below, for the life of the execution environment";
    AWS_SECRET_ACCESS_KEY: Unset, ANY, ByLambda, &[],
        "the execution role's secret key";
    AWS_SESSION_TOKEN: Unset, ANY, ByLambda, &[],
        "the execution role's session token";
    AWS_LAMBDA_FUNCTION_NAME: Unset, ANY, ByLambda, &[],
        "set: logs are JSON lines (CloudWatch); unset: plain text";
    AWS_CA_BUNDLE: Unset, ANY, NotSet, &[],
        "a PEM file of roots to trust for DynamoDB instead of the five Amazon Trust Services roots compiled in (a \
         TLS-inspecting proxy; the benchmark's local TLS front)";
    MAX_TOTAL_CENTS: Number(LIMITS.max_total_cents), AtLeast(1), Parameter("MaxTotalCents"), &[],
        "the largest packet, in the currency's minor units";
    MAX_COUNT: Number(LIMITS.max_count as u64), Within(1, Limits::LARGEST_COUNT as u64), Parameter("MaxCount"), &[],
        "shares per packet (the Redis load, snapshot and re-sync are chunked and tested up to the bound)";
    MIN_EXPIRES_IN_SECONDS: Number(LIMITS.min_expires_in_seconds as u64), AtLeast(1),
        Parameter("MinExpiresInSeconds"), &[],
        "the shortest lifetime a sender may ask for (counted from the opening)";
    MAX_EXPIRES_IN_SECONDS: Number(LIMITS.max_expires_in_seconds as u64), AtLeast(1),
        Parameter("MaxExpiresInSeconds"), &[],
        "the longest lifetime a sender may ask for";
    DEFAULT_EXPIRES_IN_SECONDS: Number(LIMITS.default_expires_in_seconds as u64), AtLeast(1),
        Parameter("DefaultExpiresInSeconds"), &[],
        "the lifetime when the sender does not say; between the two above";
    MAX_RECIPIENTS: Number(LIMITS.max_recipients as u64), AtLeast(1), Parameter("MaxRecipients"), &[],
        "recipients one packet may name";
    MAX_OPENS_AHEAD_SECONDS: Number(LIMITS.max_opens_ahead_seconds as u64), AtLeast(1),
        Parameter("MaxOpensAheadSeconds"), &[],
        "how far ahead of its send a packet may open (`opens_at`)";
    SPLIT_VERSION: Number(SplitVersion::CURRENT.number() as u64), Within(1, 2), Parameter("SplitVersion"), &[],
        "the split version new packets are sent under (every version is read); an upgrade from a release that \
         knew only 1 deploys with 1 first";
    MAX_SENDS_PER_DAY: Number(DAILY.max_sends as u64), AtLeast(1), Parameter("MaxSendsPerDay"), &[],
        "packets per sender per business day, counted in the send's own transaction";
    MAX_SENT_CENTS_PER_DAY: Number(DAILY.max_sent_cents), AtLeast(1), Parameter("MaxSentCentsPerDay"), &[],
        "minor units per sender per business day, counted in the send's own transaction";
    BUSINESS_TIME_ZONE: Text("UTC"), Described("an IANA time zone"), Parameter("BusinessTimeZone"), &[],
        "the business day's time zone: daily limits, trial balances and statements count its calendar days \
         (`Asia/Shanghai`: 16:00 to 16:00 UTC)";
    CURRENCY: Text("CNY"), Described("an ISO 4217 code with a minor unit"), Parameter("Currency"), &[],
        "the stack's one currency; every amount is an integer of its minor unit, named in every answer, event and \
         report with its exponent";
    FUNDS: Text("wallet"), OneOf(&["wallet", "none"]), Parameter("Funds"), &[],
        "`wallet`: built-in balances (a send debits, grabs and refunds credit); `none`: no money moves here, \
         `/me/wallet` is 404";
    SETTLE_SHARDS: Number(16), AtLeast(1), Value("16"), &[],
        "settle index shards (a change is migrated: settle reads every layout packets were indexed under)";
    GRAB_WAIT_REPLICAS: Number(0), Within(0, 1), Parameter("GrabWaitReplicas"), &[],
        "replicas that must acknowledge a grab before it is answered (503 when they do not; the retry returns the \
         same share)";
    GRAB_WAIT_TIMEOUT_MS: Number(100), AtLeast(1), Value("100"), &[],
        "how long a grab waits for them";
    USER_GRAB_LIMIT: Number(0), AtLeast(0), ParameterDefaulting("UserGrabLimit", "60"), &[],
        "one user's grab attempts across every packet per window, 0 for no limit; past it `429 grab_rate_limited` \
         (docs/RISK.md)";
    USER_GRAB_WINDOW_SECONDS: Number(60), Within(1, 3_600), Parameter("UserGrabWindowSeconds"), &[],
        "the fixed window the limit counts in";
    USER_GRAB_COUNTING: Text("alongside"), OneOf(&["exact", "alongside"]), Parameter("UserGrabCounting"), &[],
        "when a grab is counted: `alongside` it (one round trip; a user passes the limit by at most one grab per \
         instance that serves them) or `exact`ly, before it (a round trip of its own)";
    LOOKUP_VERDICT_KEEP_SECONDS: Number(60), Within(1, 3_600), NotSet, &[],
        "how long Redis remembers what the ledger said of a packet id it does not hold: a flood of grabs on \
         unknown or retired ids costs one DynamoDB read per id per this window";
    HOLD_REFRESH_SECONDS: Number(5), Within(1, 300), Parameter("HoldRefreshSeconds"), &[],
        "how often the grab and send functions read the holds in force: a hold placed or lifted takes effect \
         within it";
    RUST_LOG: Text("info"), ANY, Value("info"), &[],
        "the log filter; logs are JSON lines in Lambda";
    METRICS_NAMESPACE: Text(LOCAL_METRICS_NAMESPACE), ANY, Computed, &[],
        "the namespace of the metrics the functions write in the embedded metric format (`RedPackets/<Stage>`)";
    PASSPHRASE_KEY: Text(LOCAL_PASSPHRASE_KEY), ANY, NotSet, &[],
        "the HMAC-SHA256 key passphrases are kept under, where `PASSPHRASE_KEY_SECRET` is unset (local runs); \
         changing it locks the phrases of packets already sent";
    PASSPHRASE_KEY_SECRET: Unset, ANY,
        Secret("PassphraseKey"), &["SendFunction", "GrabFunction", "GrabManagedFunction"],
        "the secret (ARN) the passphrase key is read from at run time, only where a passphrase is digested; \
         unset, `PASSPHRASE_KEY`";
    MEMBERSHIP_KEYS: Text(LOCAL_MEMBERSHIP_KEY),
        Described("1 or 2 comma-separated keys of 16 bytes or more"), NotSet, &[],
        "the keys membership tickets are signed with (HMAC-SHA256), the signing one first, two during a \
         rotation, where `MEMBERSHIP_KEYS_SECRET` is unset (local runs)";
    MEMBERSHIP_KEYS_SECRET: Unset, ANY, Secret("MembershipKeys"), GRAB,
        "the secret (ARN) the membership keys are read from at run time (its text as `MEMBERSHIP_KEYS`'s); \
         unset, `MEMBERSHIP_KEYS`";
    SECRETS_REFRESH_SECONDS: Number(60), Within(1, 3_600), NotSet, &[],
        "how long a key read from its secret is kept: a key put in a secret or taken out of it is in force \
         within this bound, with no deploy (docs/DEPLOY.md, \"Rotating the membership keys\")";
    SETTLE_DRAIN_SECONDS: Number(0), AtLeast(0), Value("50"), &["SettleFunction"],
        "how long one settle invocation keeps draining, a pass a second, 0 for one pass; the template's is just \
         under the schedule's minute";
    SETTLE_PARTITION_WRITE_UNITS: Number(900), AtLeast(100), Value("900"), &["SettleFunction"],
        "the most write units settle sends to one partition key per second (a packet's claims and grab items \
         share `PKT#<id>`; DynamoDB serves 1,000 per partition)";
    OPERATOR_ROLES_CLAIM: Text("cognito:groups"), Described("a claim's name"),
        Parameter("OperatorsRolesClaim"), &["OperatorFunction"],
        "the claim of an operator's token that holds their roles (`support`, `finance`, `risk`, `admin`) on the \
         operators' API";
    REPORTS_BUCKET: Unset, ANY, Computed, &["FundsFunction"],
        "the bucket finance's reports are written to; unset, `REPORTS_DIR`";
    REPORTS_DIR: Text("/tmp/reports"), ANY, NotSet, &[],
        "where reports are written without a bucket (`make run`: `reports`)";
    RISK_CHAIN_LINKS: Number(RISK.chain_links as u64), Within(0, 32), Parameter("RiskChainLinks"), RISK_FN,
        "the 接龙 rule: handoffs in a row under one rule before a flag, 0 off (docs/RISK.md)";
    RISK_CHAIN_WINDOW_SECONDS: Number(RISK.chain_window_ms as u64 / 1000), Within(1, 86_400),
        Parameter("RiskChainWindowSeconds"), RISK_FN,
        "the most seconds between a packet and its successor in a chain";
    RISK_CHAIN_TOLERANCE_PERCENT: Number(RISK.chain_tolerance_percent as u64), Within(0, 100),
        Parameter("RiskChainTolerancePercent"), RISK_FN,
        "how far a successor's total may be from its predecessor's, in percent";
    RISK_CYCLE_WINDOW_SECONDS: Number(RISK.cycle_window_ms as u64 / 1000), Within(1, 86_400),
        Parameter("RiskCycleWindowSeconds"), RISK_FN,
        "money cycles: the fixed window";
    RISK_CYCLE_MIN_EACH_WAY: Number(RISK.cycle_min_each_way as u64), Within(0, 1_000),
        Parameter("RiskCycleMinEachWay"), RISK_FN,
        "money cycles: grabs each way before a flag, 0 off";
    RISK_CYCLE_MAX_NET_PERCENT: Number(RISK.cycle_max_net_percent as u64), Within(0, 100),
        Parameter("RiskCycleMaxNetPercent"), RISK_FN,
        "money cycles: the most net flow, in percent of the gross";
    RISK_CHATS_PER_DAY: Number(RISK.chats_per_day as u64), Within(0, 1_000), Parameter("RiskChatsPerDay"), RISK_FN,
        "distinct chats a user may grab in per business day before a flag, 0 off";
    RISK_MAX_SHARES: Number(RISK.max_shares as u64), Within(1, 100_000), Parameter("RiskMaxShares"), RISK_FN,
        "packets of more shares are read by no risk rule";
    RISK_HOLD_ON_FLAG: Text("none"), OneOf(&["none", "send", "grab", "money_out", "all"]),
        Parameter("RiskHoldOnFlag"), RISK_FN,
        "the hold a new flag places on the users it names";
    PORT: Number(3000), Within(1, 65_535), Locally(None), &[],
        "the local API's port";
    LOCAL_JWT_SECRET: Text("local-dev-secret"), ANY, Locally(None), &[],
        "the key of the local API's bearer tokens (`make token`)";
    LOCAL_OPS_JWT_SECRET: Text("local-ops-secret"), ANY, Locally(None), &[],
        "the key of local operators' tokens (`make ops-token`); an app user's token is refused on `/ops/v1` as \
         another issuer's";
    CORS_ALLOWED_ORIGINS: Unset, ANY, Locally(Some("CorsAllowedOrigins")), &[],
        "origins the local gateway answers browsers' preflights for, comma-separated (`*` for any); unset or \
         empty for none";
    LAMBDA_RIE: Unset, ANY, Locally(None), &[],
        "the tests' and the cold-start benchmark's Runtime Interface Emulator (`aws-lambda-rie`; `make test` sets \
         it)";
    SAM_LOCAL_TEMPLATE: Unset, ANY, Locally(None), &[],
        "the built template `events_on_binaries.rs` runs through `sam local invoke` (the SAM stage of `make test`)";
    LOCAL_REDIS_PORT: Number(6479), Within(1, 65_535), Locally(None), &[],
        "the port of the Redis `make run` starts (`scripts/run-local.sh`)";
    LOCAL_DYNAMODB_PORT: Number(8479), Within(1, 65_535), Locally(None), &[],
        "the port of the DynamoDB Local `make run` starts (`scripts/run-local.sh`)";
    SETTLE_EVERY_SECONDS: Number(1), AtLeast(1), Locally(None), &[],
        "how often `make run` settles (the template's schedule is a minute, each run draining)";
    WATCH_EVENTS_EVERY_SECONDS: Number(1), AtLeast(0), Locally(None), &[],
        "how often `make run` reads DynamoDB Local's stream and gives the events to the risk function; 0 turns it \
         off";
    LOCAL_GRAB_RATE_LIMIT: Number(5_000), AtLeast(0), Locally(Some("GrabRateLimit")), &[],
        "the local gateway's grab route: requests per second";
    LOCAL_GRAB_BURST_LIMIT: Number(5_000), AtLeast(0), Locally(Some("GrabBurstLimit")), &[],
        "the local gateway's grab route: burst";
    LOCAL_WITHDRAW_RATE_LIMIT: Number(100), AtLeast(0), Locally(Some("WithdrawRateLimit")), &[],
        "the local gateway's withdrawal route: requests per second";
    LOCAL_WITHDRAW_BURST_LIMIT: Number(200), AtLeast(0), Locally(Some("WithdrawBurstLimit")), &[],
        "the local gateway's withdrawal route: burst";
    LOCAL_API_RATE_LIMIT: Number(800), AtLeast(0), Locally(Some("ApiRateLimit")), &[],
        "the local gateway's other routes: requests per second";
    LOCAL_API_BURST_LIMIT: Number(2_000), AtLeast(0), Locally(Some("ApiBurstLimit")), &[],
        "the local gateway's other routes: burst";
}

/// The setting named `name`, if there is one.
pub fn named(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|setting| setting.name == name)
}

/// Why `value` is not one `setting` accepts, if it is not (a whole number out of bounds, a word
/// not listed); described values are left to their parsers.
pub fn refusal(setting: &Setting, value: &str) -> Option<String> {
    let number = || value.parse::<u64>().ok();
    match setting.accepts {
        Accepts::Text | Accepts::Described(_) => None,
        Accepts::Flag => (!matches!(value.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "false" | "0" | "no"))
            .then(|| "expected true or false".to_owned()),
        Accepts::AtLeast(min) => match number() {
            Some(n) if n >= min => None,
            _ => Some(format!("expected a whole number >= {min}")),
        },
        Accepts::Within(min, max) => match number() {
            Some(n) if n > max => {
                Some(format!("expected at most {max}: the largest the stores' calls are sized and tested for"))
            }
            Some(n) if n >= min => None,
            _ => Some(format!("expected a whole number >= {min}")),
        },
        Accepts::OneOf(words) => (!words.contains(&value)).then(|| match words.split_last() {
            Some((last, [])) => format!("expected {last}"),
            Some((last, rest)) => format!("expected {} or {last}", rest.join(", ")),
            None => "expected nothing: no value is accepted".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_named_once_and_its_default_is_accepted() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|setting| setting.name).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a setting declared twice");
        for setting in SETTINGS {
            if let Some(default) = setting.default_text() {
                assert_eq!(refusal(setting, &default), None, "{}'s default {default}", setting.name);
            }
            if let Deployed::Value(value) | Deployed::ParameterDefaulting(_, value) = setting.deployed {
                if !value.is_empty() {
                    assert_eq!(refusal(setting, value), None, "{}'s deployed {value}", setting.name);
                }
            }
        }
    }

    #[test]
    fn values_out_of_bounds_are_refused_naming_the_bound() {
        assert_eq!(refusal(&MAX_COUNT, "100000"), None);
        assert!(refusal(&MAX_COUNT, "100001").unwrap().contains("at most 100000"));
        assert!(refusal(&MAX_COUNT, "0").unwrap().contains(">= 1"));
        assert!(refusal(&FUNDS, "cash").unwrap().contains("wallet or none"));
        assert!(refusal(&REDIS_CLUSTER, "maybe").unwrap().contains("true or false"));
        assert_eq!(named("MAX_COUNT"), Some(&MAX_COUNT));
        assert_eq!(named("MAX_CUONT"), None);
    }
}
