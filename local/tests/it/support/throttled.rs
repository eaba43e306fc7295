//! DynamoDB throttling, injected where the SDK meets the network: an HTTP client wrapping the
//! real one that answers a share of the calls of chosen operations (and, when asked, of chosen
//! partition keys) with DynamoDB's own throttling answer, as an on-demand table does when a
//! partition or a new table is pushed past what it serves. Everything else, and every call it
//! lets through, reaches DynamoDB Local. The SDK's retries, backoff and error handling above it
//! are the deployed functions', unchanged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::{Response, StatusCode};
use aws_smithy_types::body::SdkBody;
use serde_json::Value;

/// What to throttle: calls of `operation` (`PutItem`, `TransactWriteItems`, `GetItem`, ...)
/// touching a partition key that starts with `partition` (any key when empty), `per_mille` of
/// them in a thousand, the first `first` of them all (so a test can end the fault).
#[derive(Debug, Clone)]
pub struct Rule {
    pub operation: &'static str,
    pub partition: String,
    pub per_mille: u64,
    pub first: u64,
}

/// The injector: its rules, and what it did.
#[derive(Debug, Default)]
pub struct Throttler {
    rules: std::sync::Mutex<Vec<Rule>>,
    /// Calls that matched a rule, and of them the ones answered with throttling.
    pub matched: AtomicU64,
    pub throttled: AtomicU64,
}

impl Throttler {
    pub fn new(rules: Vec<Rule>) -> Arc<Throttler> {
        Arc::new(Throttler { rules: std::sync::Mutex::new(rules), ..Throttler::default() })
    }

    /// Ends every rule: calls go through from now on.
    pub fn stop(&self) {
        self.rules.lock().unwrap().clear();
    }

    /// Replaces the rules: the fault starts now.
    pub fn start(&self, rules: Vec<Rule>) {
        *self.rules.lock().unwrap() = rules;
    }

    /// `client` with its calls going through this injector first.
    pub fn wrap(self: &Arc<Self>, client: aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        let inner = client.config().http_client().expect("the client has an HTTP client");
        let wrapped = SharedHttpClient::new(ThrottlingClient { inner, throttler: self.clone() });
        aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().http_client(wrapped).build())
    }

    /// Whether to answer `request` with throttling.
    fn throttles(&self, request: &HttpRequest) -> bool {
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let operation = target.rsplit('.').next().unwrap_or_default();
        let keys = request.body().bytes().map(partition_keys).unwrap_or_default();
        let rules = self.rules.lock().unwrap();
        let Some(rule) = rules.iter().find(|rule| {
            rule.operation == operation
                && (rule.partition.is_empty() || keys.iter().any(|key| key.starts_with(&rule.partition)))
        }) else {
            return false;
        };
        let n = self.matched.fetch_add(1, Ordering::SeqCst);
        // Spread evenly: call n is throttled when it crosses a multiple of a thousand.
        let throttle = n < rule.first && (n * rule.per_mille) / 1000 != ((n + 1) * rule.per_mille) / 1000;
        if throttle {
            self.throttled.fetch_add(1, Ordering::SeqCst);
        }
        throttle
    }
}

/// Every `pk` a DynamoDB request body names: an item's, a key's, a transaction's or a batch's,
/// and a query's (the strings among its `ExpressionAttributeValues`).
fn partition_keys(body: &[u8]) -> Vec<String> {
    fn collect(value: &Value, keys: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (name, inner) in map {
                    match (name.as_str(), inner.get("S")) {
                        ("pk", Some(Value::String(pk))) => keys.push(pk.clone()),
                        ("ExpressionAttributeValues", _) => {
                            let values = inner.as_object().into_iter().flat_map(|values| values.values());
                            keys.extend(values.filter_map(|value| value["S"].as_str().map(str::to_owned)));
                        }
                        _ => collect(inner, keys),
                    }
                }
            }
            Value::Array(values) => values.iter().for_each(|inner| collect(inner, keys)),
            _ => {}
        }
    }
    let mut keys = Vec::new();
    if let Ok(body) = serde_json::from_slice::<Value>(body) {
        collect(&body, &mut keys);
    }
    keys
}

/// DynamoDB's answer to a throttled request (HTTP 400, the JSON protocol's error shape).
fn throttling_answer() -> Response<SdkBody> {
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Throughput exceeds the current capacity for one or more global secondary indexes or the table (injected)."}"#;
    let mut response = Response::new(StatusCode::try_from(400).unwrap(), SdkBody::from(body));
    response.headers_mut().insert("content-type", "application/x-amz-json-1.0");
    response
}

#[derive(Debug)]
struct ThrottlingClient {
    inner: SharedHttpClient,
    throttler: Arc<Throttler>,
}

impl HttpClient for ThrottlingClient {
    fn http_connector(&self, settings: &HttpConnectorSettings, components: &RuntimeComponents) -> SharedHttpConnector {
        let inner = self.inner.http_connector(settings, components);
        SharedHttpConnector::new(ThrottlingConnector { inner, throttler: self.throttler.clone() })
    }
}

#[derive(Debug)]
struct ThrottlingConnector {
    inner: SharedHttpConnector,
    throttler: Arc<Throttler>,
}

impl HttpConnector for ThrottlingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        if self.throttler.throttles(&request) {
            HttpConnectorFuture::ready(Ok(throttling_answer()))
        } else {
            self.inner.call(request)
        }
    }
}
