//! The write units a DynamoDB client sends to each partition key in each wall-clock second,
//! counted from the requests themselves: an SDK interceptor reads every write as it goes out
//! (its retries too) and sizes its items from the wire, as DynamoDB bills them, independently of
//! the library's own sizing (`red_packets::adapters::dynamo::capacity`). DynamoDB Local
//! enforces no per-partition limit; this is how a test or the bench sees what AWS would.
//!
//! A standard write costs one unit per started kilobyte of its item, a transactional write two
//! (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html>);
//! an update or a delete is counted at one unit (settle's are of small items).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use serde_json::Value;

/// Write units per (partition key, epoch second), shared by the clones of the meter.
#[derive(Debug, Clone, Default)]
pub struct WriteUnitMeter {
    units: Arc<Mutex<HashMap<(String, u64), u64>>>,
}

impl WriteUnitMeter {
    /// `client` with this meter installed.
    pub fn install(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(self.clone()).build())
    }

    /// The most units any partition key whose name starts with `prefix` got in one second, and
    /// that key.
    pub fn peak(&self, prefix: &str) -> Option<(String, u64)> {
        let units = self.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        units
            .iter()
            .filter(|((key, _), _)| key.starts_with(prefix))
            .max_by_key(|(_, units)| **units)
            .map(|((key, _), units)| (key.clone(), *units))
    }

    /// Every unit sent to partition key `key`.
    pub fn total(&self, key: &str) -> u64 {
        let units = self.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        units.iter().filter(|((partition, _), _)| partition == key).map(|(_, units)| units).sum()
    }

    /// Every unit sent, to any key.
    pub fn grand_total(&self) -> u64 {
        let units = self.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        units.values().sum()
    }

    fn add(&self, key: &str, units: u64) {
        let second = SystemTime::now().duration_since(UNIX_EPOCH).map(|now| now.as_secs()).unwrap_or_default();
        let mut counted = self.units.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *counted.entry((key.to_owned(), second)).or_default() += units;
    }
}

impl Intercept for WriteUnitMeter {
    fn name(&self) -> &'static str {
        "WriteUnitMeter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(metadata) = cfg.load::<Metadata>() else { return Ok(()) };
        let operation = metadata.name();
        let request = context.request();
        let body: Value =
            request.body().bytes().and_then(|bytes| serde_json::from_slice(bytes).ok()).unwrap_or_default();
        for (key, units) in writes(operation, &body) {
            self.add(&key, units);
        }
        Ok(())
    }
}

/// The partition keys a request of `operation` writes, each with its units.
fn writes(operation: &str, body: &Value) -> Vec<(String, u64)> {
    let key_of = |item: &Value| item["pk"]["S"].as_str().unwrap_or_default().to_owned();
    match operation {
        "PutItem" => vec![(key_of(&body["Item"]), item_units(&body["Item"]))],
        "UpdateItem" | "DeleteItem" => vec![(key_of(&body["Key"]), 1)],
        "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flat_map(|tables| tables.values())
            .flat_map(|requests| requests.as_array().into_iter().flatten())
            .map(|request| match request.get("PutRequest") {
                Some(put) => (key_of(&put["Item"]), item_units(&put["Item"])),
                None => (key_of(&request["DeleteRequest"]["Key"]), 1),
            })
            .collect(),
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                if let Some(put) = item.get("Put") {
                    Some((key_of(&put["Item"]), 2 * item_units(&put["Item"])))
                } else {
                    ["Update", "Delete", "ConditionCheck"]
                        .iter()
                        .find_map(|part| item.get(*part))
                        .map(|part| (key_of(&part["Key"]), 2))
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// One unit per started kilobyte of an item in DynamoDB's JSON: its names and values.
fn item_units(item: &Value) -> u64 {
    let bytes: usize =
        item.as_object().into_iter().flatten().map(|(name, value)| name.len() + value_bytes(value)).sum();
    bytes.div_ceil(1024).max(1) as u64
}

/// A value's bytes, from its DynamoDB JSON (`{"S": …}`, `{"N": …}`, `{"M": {…}}`, …).
fn value_bytes(value: &Value) -> usize {
    let Some((kind, inner)) = value.as_object().and_then(|typed| typed.iter().next()) else { return 0 };
    let number = |text: &str| text.trim_start_matches(['-', '0']).replace('.', "").len().div_ceil(2) + 1;
    match kind.as_str() {
        "S" => inner.as_str().map_or(0, str::len),
        "N" => inner.as_str().map_or(0, number),
        // Base64 on the wire: three bytes per four characters.
        "B" => inner.as_str().map_or(0, |text| text.trim_end_matches('=').len() * 3 / 4),
        "BOOL" | "NULL" => 1,
        "SS" => inner.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::len).sum(),
        "NS" => inner.as_array().into_iter().flatten().filter_map(Value::as_str).map(number).sum(),
        "M" => {
            3 + inner
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| 1 + name.len() + value_bytes(value))
                .sum::<usize>()
        }
        "L" => 3 + inner.as_array().into_iter().flatten().map(|value| 1 + value_bytes(value)).sum::<usize>(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_write_is_charged_to_its_partition_key() {
        let put = json!({ "TableName": "T", "Item": { "pk": { "S": "PKT#a" }, "sk": { "S": "SHARE#1" } } });
        assert_eq!(writes("PutItem", &put), vec![("PKT#a".to_owned(), 1)]);
        let big = json!({ "Item": { "pk": { "S": "PKT#a" }, "greeting": { "S": "x".repeat(2_000) } } });
        assert_eq!(writes("PutItem", &big), vec![("PKT#a".to_owned(), 2)]);
        let transaction = json!({ "TransactItems": [
            { "Put": { "Item": { "pk": { "S": "WALLET#bob" } } } },
            { "Update": { "Key": { "pk": { "S": "WALLET#bob" }, "sk": { "S": "BALANCE" } } } },
        ] });
        assert_eq!(
            writes("TransactWriteItems", &transaction),
            vec![("WALLET#bob".into(), 2), ("WALLET#bob".into(), 2)]
        );
        assert!(writes("Query", &json!({})).is_empty());
    }
}
