//! The ledger's events as AWS would publish them, read from DynamoDB Local: the table's stream
//! ([`StreamReader`]) passed through the events Pipe of `template.yaml` ([`Pipe`]: its filters,
//! its input template, its detail type), then wrapped as EventBridge delivers an event to a
//! rule's target ([`bus_event`], for the types [`rule_detail_types`] names). The tests of the
//! event shapes and of the risk rules read the events this way, and `make run` feeds them to the
//! risk function ([`crate::watch_events`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{StreamSpecification, StreamViewType};
use aws_sdk_dynamodbstreams::types::AttributeValue;
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use serde_json::{json, Map, Value};

/// The events Pipe's filter patterns, input template and detail-type path, from template.yaml.
#[derive(Debug, Clone)]
pub struct Pipe {
    /// The filter criteria's patterns.
    pub patterns: Vec<Value>,
    /// The input template, the stack's currency filled in.
    pub input_template: String,
    /// Where the detail type is in a stream record.
    pub detail_type_path: String,
}

impl Pipe {
    /// The Pipe of the repository's `template.yaml`, for the default currency.
    pub fn of_template() -> Pipe {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
        let text = std::fs::read_to_string(path).expect("template.yaml beside the crate");
        let template: serde_yaml::Value = serde_yaml::from_str(&text).expect("template.yaml is YAML");
        let pipe = &template["Resources"]["EventsPipe"]["Properties"];
        let patterns = pipe["SourceParameters"]["FilterCriteria"]["Filters"]
            .as_sequence()
            .expect("the Pipe filters")
            .iter()
            .map(|filter| serde_json::from_str(filter["Pattern"].as_str().expect("a pattern")).expect("JSON"))
            .collect();
        // `!Sub [text, {Exponent: !FindInMap …}]`: the stack's currency, here the default's.
        let serde_yaml::Value::Tagged(sub) = &pipe["TargetParameters"]["InputTemplate"] else {
            panic!("the input template is a !Sub naming the stack's currency")
        };
        let text = sub.value[0].as_str().expect("the template's text");
        let currency = red_packets::domain::Currency::default();
        let exponent = template["Mappings"]["Currencies"][currency.code()]["Exponent"].as_u64().expect("an exponent");
        assert_eq!(exponent, u64::from(currency.exponent()));
        let input_template = text.replace("${Currency}", currency.code()).replace("${Exponent}", &exponent.to_string());
        let detail_type_path = pipe["TargetParameters"]["EventBridgeEventBusParameters"]["DetailType"]
            .as_str()
            .expect("the detail type's path")
            .to_owned();
        Pipe { patterns, input_template, detail_type_path }
    }

    /// The event the Pipe publishes for a stream `record`: its detail type and detail; `None`
    /// when no filter lets it through.
    pub fn publish(&self, record: &Value) -> Option<(String, Value)> {
        if !self.patterns.iter().any(|pattern| matches(pattern, record)) {
            return None;
        }
        let detail_type = at_path(record, &self.detail_type_path)?.as_str()?.to_owned();
        Some((detail_type, transform(&self.input_template, record)))
    }
}

/// The detail types the bus's rules deliver to `function` (its `EventBridgeRule` events in
/// template.yaml, each on the stack's bus and source `red-packets`).
pub fn rule_detail_types(function: &str) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml beside the crate");
    let template: serde_yaml::Value = serde_yaml::from_str(&text).expect("template.yaml is YAML");
    let events = template["Resources"][function]["Properties"]["Events"].as_mapping().cloned().unwrap_or_default();
    let mut detail_types = Vec::new();
    for (_, event) in events.iter().filter(|(_, event)| event["Type"].as_str() == Some("EventBridgeRule")) {
        let pattern = &event["Properties"]["Pattern"];
        assert_eq!(pattern["source"][0].as_str(), Some("red-packets"), "{function}'s rule reads the ledger's events");
        let named = pattern["detail-type"].as_sequence().cloned().unwrap_or_default();
        detail_types.extend(named.iter().filter_map(|name| name.as_str().map(str::to_owned)));
    }
    detail_types
}

/// EventBridge's event-pattern matching, as far as the Pipe's filters use it: nested objects,
/// lists of allowed values, and `{"exists": bool}`.
pub fn matches(pattern: &Value, event: &Value) -> bool {
    match pattern {
        Value::Object(fields) => fields.iter().all(|(name, inner)| {
            let value = event.get(name);
            match inner {
                Value::Array(allowed) => allowed.iter().any(|allowed| match allowed {
                    Value::Object(rule) if rule.contains_key("exists") => {
                        rule["exists"].as_bool() == Some(value.is_some())
                    }
                    literal => value == Some(literal),
                }),
                nested => value.is_some_and(|value| matches(nested, value)),
            }
        }),
        _ => false,
    }
}

/// The value at a `$.a.b.c` path.
fn at_path<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches("$.").split('.').try_fold(record, |value, key| value.get(key))
}

/// The Pipe's input transformer: each `<$.path>` replaced by the string at that path.
fn transform(template: &str, record: &Value) -> Value {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("<$.") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('>').expect("a closed path") + start;
        let value = at_path(record, &rest[start + 1..end]).and_then(Value::as_str).unwrap_or_default();
        out.push_str(&value.replace('\\', "\\\\").replace('"', "\\\""));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).unwrap_or_else(|error| panic!("the input template builds JSON: {error}: {out}"))
}

/// The event EventBridge hands a rule's target: the envelope around the Pipe's detail.
pub fn bus_event(detail_type: &str, detail: &Value) -> Value {
    json!({
        "version": "0",
        "id": detail["event_id"],
        "detail-type": detail_type,
        "source": "red-packets",
        "account": "123456789012",
        "time": detail["occurred_at"],
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
    })
}

/// A stream image in DynamoDB JSON, as the Pipe sees it.
fn dynamodb_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::M(map) => json!({ "M": image(map) }),
        AttributeValue::L(list) => json!({ "L": list.iter().map(dynamodb_json).collect::<Vec<_>>() }),
        AttributeValue::Ss(strings) => json!({ "SS": strings }),
        AttributeValue::Ns(numbers) => json!({ "NS": numbers }),
        other => json!({ "unsupported": format!("{other:?}") }),
    }
}

fn image(map: &HashMap<String, AttributeValue>) -> Value {
    Value::Object(map.iter().map(|(name, value)| (name.clone(), dynamodb_json(value))).collect::<Map<_, _>>())
}

/// A reader of a table's stream on DynamoDB Local that hands each record over once, in the
/// shape the Pipe receives it.
pub struct StreamReader {
    streams: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    /// Each shard's next iterator (`None` once the shard is closed and read to its end).
    shards: HashMap<String, Option<String>>,
}

impl StreamReader {
    /// Turns the stream of `table` on (template.yaml's table has it; local tables do not, since
    /// it slows DynamoDB Local) and reads it from its start.
    pub async fn enable(dynamodb: &aws_sdk_dynamodb::Client, table: &str) -> Result<StreamReader, String> {
        let view = StreamSpecification::builder()
            .stream_enabled(true)
            .stream_view_type(StreamViewType::NewAndOldImages)
            .build()
            .map_err(|error| error.to_string())?;
        let enabled = dynamodb.update_table().table_name(table).stream_specification(view).send().await;
        if let Err(error) = enabled {
            // Already on (a restart of `make run`) is fine; anything else is not.
            let described = dynamodb.describe_table().table_name(table).send().await.map_err(|e| e.to_string())?;
            if described.table.and_then(|table| table.latest_stream_arn).is_none() {
                return Err(format!("cannot enable the stream of {table}: {error}"));
            }
        }
        Self::of(dynamodb, table).await
    }

    /// A reader of the stream `table` has, from its start.
    pub async fn of(dynamodb: &aws_sdk_dynamodb::Client, table: &str) -> Result<StreamReader, String> {
        let described = dynamodb.describe_table().table_name(table).send().await.map_err(|e| e.to_string())?;
        let stream_arn = described.table.and_then(|table| table.latest_stream_arn).ok_or("the table has no stream")?;
        let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").map_err(|_| "no AWS_ENDPOINT_URL_DYNAMODB")?;
        let config = aws_sdk_dynamodbstreams::Config::builder()
            .behavior_version_latest()
            .endpoint_url(endpoint)
            .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodbstreams::config::Credentials::new(
                "local", "local", None, None, "local",
            ))
            .build();
        Ok(StreamReader {
            streams: aws_sdk_dynamodbstreams::Client::from_conf(config),
            stream_arn,
            shards: HashMap::new(),
        })
    }

    /// Every record written since the last call (from the stream's start on the first).
    pub async fn read_new(&mut self) -> Result<Vec<Value>, String> {
        let description = self.streams.describe_stream().stream_arn(&self.stream_arn).send().await;
        let description = description.map_err(|error| error.to_string())?;
        for shard in description.stream_description.and_then(|stream| stream.shards).unwrap_or_default() {
            let Some(shard_id) = shard.shard_id else { continue };
            if self.shards.contains_key(&shard_id) {
                continue;
            }
            let iterator = self
                .streams
                .get_shard_iterator()
                .stream_arn(&self.stream_arn)
                .shard_id(&shard_id)
                .shard_iterator_type(ShardIteratorType::TrimHorizon)
                .send()
                .await
                .map_err(|error| error.to_string())?;
            self.shards.insert(shard_id, iterator.shard_iterator);
        }
        let mut records = Vec::new();
        for iterator in self.shards.values_mut() {
            for _ in 0..1_000 {
                let Some(current) = iterator.clone() else { break };
                let page = self.streams.get_records().shard_iterator(current).send().await;
                let page = page.map_err(|error| error.to_string())?;
                *iterator = page.next_shard_iterator;
                let batch = page.records.unwrap_or_default();
                if batch.is_empty() {
                    break;
                }
                for record in batch {
                    let Some(change) = record.dynamodb else { continue };
                    let mut dynamodb = Map::new();
                    if let Some(new) = &change.new_image {
                        dynamodb.insert("NewImage".into(), image(new));
                    }
                    if let Some(old) = &change.old_image {
                        dynamodb.insert("OldImage".into(), image(old));
                    }
                    records.push(json!({
                        "eventID": record.event_id,
                        "eventName": record.event_name.map(|name| name.as_str().to_owned()),
                        "dynamodb": dynamodb,
                    }));
                }
            }
        }
        Ok(records)
    }
}
