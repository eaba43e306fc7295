//! Every AWS call a function makes while the tests run, recorded for the checks that hold the
//! template to the code (`scripts/permissions.py`: each call allowed by the function's role;
//! `scripts/network_paths.py`: each service reachable from the function's subnets).
//!
//! The emulators accept any call: what a role must allow is read off the calls themselves. An SDK
//! interceptor on each function's clients sees every request as it goes out (its retries too) and
//! writes one JSON line per distinct call to `$AWS_CALL_LOG/<test binary>-<pid>.jsonl`:
//!
//! ```json
//! {"function": "settle", "service": "dynamodb", "operation": "TransactWriteItems",
//!  "resources": [{"table": "RedPackets-x", "part": "Put"}, {"table": "RedPackets-x", "part": "ConditionCheck"}],
//!  "test": "wallet::money_is_conserved_to_the_cent_under_a_storm_of_wallet_traffic"}
//! ```
//!
//! `function` is the binary (`send`, `grab`, `query`, `settle`, `funds`), the name the template's
//! `BuildProperties.Binary` gives it; `resources` are what IAM authorizes the call on: a table and
//! the index a query reads, each item of a transaction with its kind, a bucket and a key, or a
//! secret. A call
//! is written once per process (the first test that made it is named). Without `AWS_CALL_LOG`
//! nothing is installed: `make run` and the benchmarks pay nothing.
//!
//! The calls of the shipped binaries themselves are seen on the wire by [`crate::call_proxy`]
//! and written here with `"via": "binary"` and the request's access key id
//! ([`record_from_binary`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};

/// The variable naming the directory the calls are written to.
pub const CALL_LOG: &str = "AWS_CALL_LOG";

/// Records the calls of the clients it is installed on, as made by `function`.
#[derive(Debug, Clone)]
pub struct CallRecorder {
    function: &'static str,
    test: String,
}

impl CallRecorder {
    /// A recorder for `function`'s clients when `AWS_CALL_LOG` is set. The test is the thread
    /// that builds it: a test's body runs on a thread named after the test, also under a
    /// multi-threaded runtime, and the function's clients are built in it.
    pub fn for_function(function: &'static str) -> Option<CallRecorder> {
        std::env::var_os(CALL_LOG)?;
        let binary = std::env::current_exe()
            .ok()
            .and_then(|path| path.file_stem().map(|stem| stem.to_string_lossy().into_owned()))
            .map(|stem| stem.rsplit_once('-').map_or(stem.clone(), |(name, _hash)| name.to_owned()))
            .unwrap_or_default();
        let thread = std::thread::current().name().unwrap_or("unnamed").to_owned();
        Some(CallRecorder { function, test: format!("{binary}::{thread}") })
    }
}

/// `client` with `function`'s recorder installed, when calls are being recorded.
pub fn dynamodb(client: aws_sdk_dynamodb::Client, function: &'static str) -> aws_sdk_dynamodb::Client {
    match CallRecorder::for_function(function) {
        Some(recorder) => {
            aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(recorder).build())
        }
        None => client,
    }
}

/// `client` with `function`'s recorder installed, when calls are being recorded.
pub fn s3(client: aws_sdk_s3::Client, function: &'static str) -> aws_sdk_s3::Client {
    match CallRecorder::for_function(function) {
        Some(recorder) => aws_sdk_s3::Client::from_conf(client.config().to_builder().interceptor(recorder).build()),
        None => client,
    }
}

/// `client` with `function`'s recorder installed, when calls are being recorded.
pub fn secretsmanager(
    client: aws_sdk_secretsmanager::Client,
    function: &'static str,
) -> aws_sdk_secretsmanager::Client {
    match CallRecorder::for_function(function) {
        Some(recorder) => {
            aws_sdk_secretsmanager::Client::from_conf(client.config().to_builder().interceptor(recorder).build())
        }
        None => client,
    }
}

impl Intercept for CallRecorder {
    fn name(&self) -> &'static str {
        "CallRecorder"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(metadata) = cfg.load::<Metadata>() else { return Ok(()) };
        // As IAM spells the service: Secrets Manager's SDK name is "Secrets Manager".
        let service = metadata.service().to_ascii_lowercase().replace(' ', "");
        let request = context.request();
        let resources = match service.as_str() {
            "dynamodb" => dynamodb_resources(request.body().bytes().unwrap_or_default()),
            "s3" => s3_resources(request.uri()),
            "secretsmanager" => secret_resources(request.body().bytes().unwrap_or_default()),
            _ => Vec::new(),
        };
        record(json!({
            "function": self.function,
            "service": service,
            "operation": metadata.name(),
            "resources": resources,
            "test": self.test,
        }));
        Ok(())
    }
}

/// The parts of a DynamoDB request's JSON body that IAM authorizes; the rest is skipped unread
/// (a batch's or a transaction's items are most of a body: building them as values cost the
/// first pass of `make test` most of its recording).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct RequestShape {
    table_name: Option<String>,
    index_name: Option<String>,
    request_items: Option<BTreeMap<String, IgnoredAny>>,
    transact_items: Option<Vec<BTreeMap<String, TableOnly>>>,
}

/// A transaction item's table.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct TableOnly {
    table_name: Option<String>,
}

/// What IAM authorizes a DynamoDB request on, read from its JSON body: its table (and index), a
/// batch's tables, a transaction's items.
pub(crate) fn dynamodb_resources(body: &[u8]) -> Vec<Value> {
    let shape: RequestShape = serde_json::from_slice(body).unwrap_or_default();
    if let Some(table) = shape.table_name {
        return vec![match shape.index_name {
            Some(index) => json!({ "table": table, "index": index }),
            None => json!({ "table": table }),
        }];
    }
    if let Some(tables) = shape.request_items {
        return tables.into_keys().map(|table| json!({ "table": table })).collect();
    }
    // Each kind of item on each table once: IAM authorizes kinds, not how many.
    let mut parts = BTreeSet::new();
    for item in shape.transact_items.into_iter().flatten() {
        for (part, inner) in item {
            if let Some(table) = inner.table_name {
                parts.insert((table, part));
            }
        }
    }
    parts.into_iter().map(|(table, part)| json!({ "table": table, "part": part })).collect()
}

/// The secret a Secrets Manager request names (its JSON body's `SecretId`: a name or an ARN).
pub(crate) fn secret_resources(body: &[u8]) -> Vec<Value> {
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "PascalCase")]
    struct SecretRequest {
        secret_id: Option<String>,
    }
    let request: SecretRequest = serde_json::from_slice(body).unwrap_or_default();
    request.secret_id.map(|secret| json!({ "secret": secret })).into_iter().collect()
}

/// The bucket and key of a path-style S3 request (`http://host/<bucket>/<key>?…`: the tests'
/// S3 endpoint is reached path-style).
pub(crate) fn s3_resources(uri: &str) -> Vec<Value> {
    let path = uri.split_once("://").map_or(uri, |(_, rest)| rest.split_once('/').map_or("", |(_, path)| path));
    let path = path.split(['?', '#']).next().unwrap_or_default();
    match path.split_once('/') {
        Some((bucket, key)) => vec![json!({ "bucket": bucket, "key": key })],
        None if !path.is_empty() => vec![json!({ "bucket": path })],
        None => Vec::new(),
    }
}

/// A call a shipped binary made, seen on the wire by [`crate::call_proxy`]: charged to the binary
/// whose listener it reached, with the access key id its request was signed with.
pub(crate) fn record_from_binary(
    binary: &str,
    service: &str,
    operation: &str,
    resources: Vec<Value>,
    key_id: Option<String>,
) {
    record(json!({
        "function": binary,
        "service": service,
        "operation": operation,
        "resources": resources,
        "via": "binary",
        "key_id": key_id,
        "test": format!("the {binary} binary"),
    }));
}

/// The calls this process wrote, and its file.
struct Log {
    written: HashSet<String>,
    file: Option<File>,
}

fn record(call: Value) {
    static LOG: OnceLock<Mutex<Log>> = OnceLock::new();
    let log = LOG.get_or_init(|| Mutex::new(Log { written: HashSet::new(), file: open_log() }));
    let mut identity = call.clone();
    identity["test"] = Value::Null;
    let mut log = log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !log.written.insert(identity.to_string()) {
        return;
    }
    if let Some(file) = log.file.as_mut() {
        // A recording that cannot be written fails the check that reads it (a call missing).
        let _ = writeln!(file, "{call}");
    }
}

fn open_log() -> Option<File> {
    let dir = PathBuf::from(std::env::var_os(CALL_LOG)?);
    std::fs::create_dir_all(&dir).ok()?;
    File::create(log_path(&dir)).ok()
}

fn log_path(dir: &Path) -> PathBuf {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "process".into());
    dir.join(format!("{binary}-{}.jsonl", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_its_table_and_index() {
        let body = json!({ "TableName": "T", "IndexName": "history", "KeyConditionExpression": "x" });
        assert_eq!(dynamodb_resources(body.to_string().as_bytes()), vec![json!({ "table": "T", "index": "history" })]);
        assert_eq!(
            dynamodb_resources(json!({ "TableName": "T", "Key": {} }).to_string().as_bytes()),
            vec![json!({ "table": "T" })]
        );
    }

    #[test]
    fn a_batch_names_its_tables_and_a_transaction_each_item() {
        let batch = json!({ "RequestItems": { "A": { "Keys": [] }, "B": { "Keys": [] } } });
        assert_eq!(
            dynamodb_resources(batch.to_string().as_bytes()),
            vec![json!({ "table": "A" }), json!({ "table": "B" })]
        );
        let transaction = json!({ "TransactItems": [
            { "Put": { "TableName": "T", "Item": {} } },
            { "ConditionCheck": { "TableName": "T", "Key": {} } },
            { "Update": { "TableName": "U", "Key": {} } },
            { "Put": { "TableName": "T", "Item": {} } },
        ] });
        assert_eq!(
            dynamodb_resources(transaction.to_string().as_bytes()),
            vec![
                json!({ "table": "T", "part": "ConditionCheck" }),
                json!({ "table": "T", "part": "Put" }),
                json!({ "table": "U", "part": "Update" }),
            ],
            "each kind of item on each table once"
        );
    }

    #[test]
    fn a_path_style_s3_request_names_its_bucket_and_key() {
        assert_eq!(
            s3_resources("http://127.0.0.1:9000/reports/trial-balance/2026-11-23.csv?x-id=PutObject"),
            vec![json!({ "bucket": "reports", "key": "trial-balance/2026-11-23.csv" })]
        );
        assert_eq!(s3_resources("http://127.0.0.1:9000/reports"), vec![json!({ "bucket": "reports" })]);
    }
}
