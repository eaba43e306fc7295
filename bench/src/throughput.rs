//! Split throughput (shares per second, in-process) and send throughput (the handler with its
//! DynamoDB put and Redis load).

use std::sync::Arc;
use std::time::Instant;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::split::{lucky, Seed, SplitRule};
use red_packets_testkit::events;
use serde::Serialize;
use serde_json::Value;

use crate::harness;
use crate::stats::{summarize, RunStats};

const SEND_EVENT: &str = include_str!("../../events/send.json");

/// Shares per second of one rule.
#[derive(Debug, Clone, Serialize)]
pub struct Split {
    /// The rule.
    pub rule: &'static str,
    /// Shares produced per second (100-share packets of 20,000 cents).
    pub shares_per_s: f64,
}

/// Splits 50,000 packets of 100 shares with each lucky rule.
pub fn splits() -> Vec<Split> {
    [SplitRule::DoubleAverage, SplitRule::LineCut]
        .into_iter()
        .map(|rule| {
            let started = Instant::now();
            let mut checksum = 0u64;
            for n in 0..50_000u64 {
                let mut bytes = [3u8; 32];
                bytes[..8].copy_from_slice(&n.to_le_bytes());
                checksum += lucky(rule, 20_000, 100, &Seed(bytes))[0];
            }
            assert!(checksum > 0);
            Split { rule: rule.as_str(), shares_per_s: 5_000_000.0 / started.elapsed().as_secs_f64() }
        })
        .collect()
}

/// 2,000 sends through the handler, 16 at a time.
pub async fn sends(service: Arc<send::SendService<DynamoLedger, Arc<RedisStore>>>) -> RunStats {
    let requests: Vec<lambda_http::Request> = (0..2_000)
        .map(|n| {
            let mut event: Value = serde_json::from_str(SEND_EVENT).expect("send.json");
            events::set_header(
                &mut event,
                "Idempotency-Key",
                Some(&red_packets::domain::PacketId::random().to_string()),
            );
            events::set_caller(&mut event, Some(&format!("bench-sender-{}", n % 50)));
            events::to_request(&event).expect("event")
        })
        .collect();
    let (latencies, statuses, elapsed) = harness::run(requests, 16, move |request| {
        let service = service.clone();
        async move { send::handle(&service, request).await.expect("handler").status().as_u16() }
    })
    .await;
    assert!(statuses.iter().all(|&status| status == 201), "every send answered 201");
    summarize(&latencies, elapsed)
}
