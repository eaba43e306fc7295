//! The metric documents a test reads back from a collector (`red_packets::telemetry`'s EMF).

/// Every metric document `collector` holds, flushed, one JSON value each (tests).
pub fn flushed(collector: &metrics_cloudwatch_embedded::Collector) -> Vec<serde_json::Value> {
    let mut written = Vec::new();
    collector.flush(&mut written).expect("the collector flushes");
    String::from_utf8_lossy(&written).lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// The document among `documents` in which dimension `name` is `value` and `metric` is counted:
/// a heartbeat, as a test finds it, declared with `name` among its dimensions (tests; the test
/// fails naming what it found instead).
pub fn heartbeat<'a>(
    documents: &'a [serde_json::Value],
    (name, value): (&str, &str),
    metric: &str,
) -> &'a serde_json::Value {
    let beat = documents
        .iter()
        .find(|document| document[name] == value && document[metric].is_number())
        .unwrap_or_else(|| panic!("no {metric} of {name} {value} in {documents:?}"));
    let declared = &beat["_aws"]["CloudWatchMetrics"][0];
    assert!(declared["Dimensions"].to_string().contains(name), "{declared}");
    beat
}
