//! The end of the soak: every packet settled, and every invariant of DESIGN.md held against the
//! ledger in DynamoDB Local and the answers the clients were given.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt};
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::clock::{parse_rfc3339, Millis};
use red_packets::domain::ledger::LedgerPacket;
use red_packets::domain::packet::PacketStatus;
use red_packets::domain::PacketId;
use red_packets::ports::{Ledger, SettleIndex};
use red_packets::{Clock, SystemClock};

use crate::failover::Failover;
use crate::money::Desk;
use crate::traffic::{AskedWithdrawal, Outcome, SentPacket};

/// Waits until every packet has expired and the local API's settle has finalised it, or `limit`
/// after the last expiry; the ledger's view of every packet it found settled.
pub async fn wait_until_settled(
    ledger: &DynamoLedger,
    packets: &[SentPacket],
    limit: Duration,
) -> HashMap<String, LedgerPacket> {
    let last_expiry = packets.iter().map(|packet| packet.expires_at_ms).max().unwrap_or(0);
    let until_expiry = (last_expiry - SystemClock.now_ms()).max(0) as u64;
    tokio::time::sleep(Duration::from_millis(until_expiry)).await;
    let deadline = Instant::now() + limit;
    let mut settled = HashMap::new();
    loop {
        let pending: Vec<&SentPacket> = packets.iter().filter(|packet| !settled.contains_key(&packet.id)).collect();
        let found: Vec<(String, Option<LedgerPacket>)> = stream::iter(pending)
            .map(|packet| async move {
                let id = PacketId::parse(&packet.id).expect("the API hands out valid ids");
                (packet.id.clone(), ledger.ledger_packet(&id).await.ok().flatten())
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for (id, recorded) in found {
            if let Some(recorded) = recorded.filter(|recorded| recorded.status != PacketStatus::Open) {
                settled.insert(id, recorded);
            }
        }
        if settled.len() == packets.len() || Instant::now() >= deadline {
            return settled;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// What the checks found.
pub struct Report {
    /// One line per broken promise.
    pub violations: Vec<String>,
    checks: Vec<(&'static str, usize)>,
    /// Median and p99 ms from a probed grab's 200 to the grab in its grabber's history.
    pub freshness_p50_ms: f64,
    pub freshness_p99_ms: f64,
    /// `GrabRegranted` / `GrabRevoked` records of the failed-over packets.
    pub casualties: usize,
    /// Grabs acknowledged inside a failover's lost window that the ledger does not pay.
    pub lost_in_failovers: usize,
}

impl Report {
    /// Invariant 12 on the soak's money out and corrections: every answer kept its promise, and
    /// every withdrawal stands in the ledger as the payments system left it (paid, failed, or
    /// still pending). The whole ledger is reconciled after (`scripts/soak.sh`).
    pub async fn check_money_out(&mut self, outcome: &Outcome, desk: &Desk) {
        let mut broken = outcome.money_out_violations.clone();
        let states: Vec<(&AskedWithdrawal, Result<serde_json::Value, String>)> = stream::iter(&outcome.withdrawals)
            .map(|asked| async move {
                (asked, desk.payments(serde_json::json!({ "withdrawal": { "withdrawal_id": asked.id } })).await)
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for (asked, read) in states {
            let found = read.as_ref().ok().map(|answer| &answer["withdrawal_found"]);
            let status = found.and_then(|found| found["status"].as_str());
            let same =
                found.is_some_and(|found| found["user"] == asked.user && found["amount_cents"] == asked.amount_cents);
            if status != Some(asked.resolved.unwrap_or("pending")) || !same {
                broken.push(format!(
                    "{} ({} cents by {}): the payments system left it {:?}, the ledger says {read:?}",
                    asked.id, asked.amount_cents, asked.user, asked.resolved
                ));
            }
        }
        if outcome.withdrawals.is_empty() || outcome.adjustments.is_empty() {
            broken.push("the soak asked for no withdrawal or applied no adjustment".into());
        }
        self.check("12. money out and corrections happen once", broken);
    }

    fn check(&mut self, name: &'static str, broken: Vec<String>) {
        self.checks.push((name, broken.len()));
        self.violations.extend(broken.into_iter().map(|line| format!("{name}: {line}")));
    }

    /// The report, as a markdown table.
    pub fn markdown(&self, outcome: &Outcome, seconds: u64) -> String {
        let mut md = format!(
            "Soak: {seconds} s, {} requests ({:.0}/s), {} packets, {} acknowledged grabs, {} repeat grabs, {} errors.\n\nRequests by route and status: {}\n\n",
            outcome.requests(),
            outcome.requests() as f64 / seconds as f64,
            outcome.packets.len(),
            outcome.acknowledged.len(),
            outcome.repeats.len(),
            outcome.error_count,
            outcome.tally()
        );
        md.push_str(&format!(
            "Freshness, grab 200 to the grabber's `received` history ({} grabs probed): p50 {:.0} ms, p99 {:.0} ms.\n\n| check | violations |\n|---|---|\n",
            outcome.freshness_ms.len(),
            self.freshness_p50_ms,
            self.freshness_p99_ms
        ));
        for (name, broken) in &self.checks {
            md.push_str(&format!("| {name} | {broken} |\n"));
        }
        for line in self.violations.iter().chain(&outcome.errors).take(20) {
            md.push_str(&format!("\n- {line}"));
        }
        md
    }
}

/// When the refund item of packet `id` says it was written, read straight from the table.
async fn refunded_at(dynamodb: &aws_sdk_dynamodb::Client, table: &str, id: &str) -> Option<Millis> {
    let item = dynamodb
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(format!("PKT#{id}")))
        .key("sk", AttributeValue::S("REFUND".into()))
        .consistent_read(true)
        .send()
        .await
        .ok()?
        .item?;
    parse_rfc3339(item.get("refunded_at")?.as_s().ok()?)
}

/// Every check, over every packet the soak sent. A packet a simulated failover hit is held to
/// the recovery rule (invariant 10) instead of the plain ones: each grab acknowledged to a user
/// is paid with its amount, or is a casualty with its record, or was acknowledged inside the
/// window whose writes the failover lost.
pub async fn check(
    outcome: &Outcome,
    settled: &HashMap<String, LedgerPacket>,
    failovers: &[Failover],
    store: &RedisStore,
    (ledger, dynamodb, table): (&DynamoLedger, &aws_sdk_dynamodb::Client, &str),
    log: &str,
) -> Report {
    let mut report = Report {
        violations: Vec::new(),
        checks: Vec::new(),
        freshness_p50_ms: 0.0,
        freshness_p99_ms: 0.0,
        casualties: 0,
        lost_in_failovers: 0,
    };
    let failed_over: HashSet<&str> = failovers.iter().map(|failover| failover.packet.as_str()).collect();
    let hit = |text: &str| failed_over.iter().any(|packet| text.contains(packet));
    let packets: Vec<(&SentPacket, &LedgerPacket)> =
        outcome.packets.iter().filter_map(|sent| Some((sent, settled.get(&sent.id)?))).collect();
    report.check(
        "every packet expired and settled",
        outcome.packets.iter().filter(|sent| !settled.contains_key(&sent.id)).map(|sent| sent.id.clone()).collect(),
    );

    report.check(
        "1. grabs + refund == total, grabs <= count",
        packets
            .iter()
            .filter_map(|(sent, recorded)| {
                let grabbed: u64 = recorded.grabs.iter().map(|grab| grab.amount_cents).sum();
                let refund = recorded.refund_cents.unwrap_or(0);
                let balanced = grabbed + refund == sent.total_cents && recorded.grabs.len() <= sent.count as usize;
                (!balanced).then(|| format!("{}: grabs {grabbed} + refund {refund} of {}", sent.id, sent.total_cents))
            })
            .collect(),
    );

    let mut ledger_shares: HashMap<(String, String), u64> = HashMap::new();
    let mut twice = Vec::new();
    for (sent, recorded) in &packets {
        let mut users = HashSet::new();
        for grab in &recorded.grabs {
            if !users.insert(grab.user.as_str()) {
                twice.push(format!("{} has two grabs by {}", sent.id, grab.user));
            }
            ledger_shares.insert((sent.id.clone(), grab.user.as_str().to_owned()), grab.amount_cents);
        }
    }
    twice.extend(outcome.paid_twice.iter().filter(|line| !hit(line)).cloned());
    twice.extend(outcome.repeats.iter().filter(|(packet, _, _)| !hit(packet)).filter_map(|(packet, user, amount)| {
        let recorded = ledger_shares.get(&(packet.clone(), user.clone()));
        (recorded != Some(amount))
            .then(|| format!("{user} on {packet}: a repeat named {amount}, the ledger {recorded:?}"))
    }));
    report.check("2. one grab per user per packet; a repeat names the same share", twice);

    let mut unmatched: Vec<String> = outcome
        .acknowledged
        .iter()
        .filter(|((packet, _), _)| !hit(packet))
        .filter(|(key, amount)| ledger_shares.get(*key) != Some(*amount))
        .map(|((packet, user), amount)| {
            format!(
                "{user} was told {amount} on {packet}; the ledger: {:?}",
                ledger_shares.get(&(packet.clone(), user.clone()))
            )
        })
        .collect();
    unmatched.extend(
        ledger_shares
            .keys()
            .filter(|key| !outcome.acknowledged.contains_key(*key))
            .map(|(packet, user)| format!("the ledger pays {user} on {packet}, but no client was told")),
    );
    report.check("3. every acknowledged grab has exactly one grab item, same amount", unmatched);

    let mut destroyed = Vec::new();
    for packet in &failed_over {
        let Ok(events) = ledger.casualties(&PacketId::parse(packet).expect("a packet the soak sent")).await else {
            destroyed.push(format!("{packet}: its casualties could not be read"));
            continue;
        };
        report.casualties += events.len();
        let windows: Vec<(i64, i64)> = failovers
            .iter()
            .filter(|failover| failover.packet == *packet)
            .map(|failover| (failover.snapshot_ms, failover.restored_ms))
            .collect();
        for (_, user, amount, asked, answered) in outcome.fresh_acks.iter().filter(|ack| ack.0 == *packet) {
            let paid = ledger_shares.get(&((*packet).to_owned(), user.clone())).copied();
            let casualty = events.iter().any(|event| event.user.as_str() == user);
            // The grab ran somewhere between asked and answered: lost if that overlaps the window.
            let lost = windows.iter().any(|&(from, to)| *asked <= to && *answered >= from);
            if paid == Some(*amount) || casualty {
                continue;
            }
            if lost {
                report.lost_in_failovers += 1;
                continue;
            }
            destroyed.push(format!(
                "{user} was told {amount} on {packet} at {asked}-{answered}; the ledger: {paid:?}, no casualty"
            ));
        }
    }
    report.check(
        "10. recovery never destroys: failed-over packets' grabs paid, remedied or lost in the window",
        destroyed,
    );

    let mut refunds = Vec::new();
    for (sent, recorded) in &packets {
        let full = recorded.grabs.len() == sent.count as usize;
        let refund = recorded.refund_cents.unwrap_or(0);
        let refund_item = recorded.refund_item_cents.unwrap_or(0);
        let consistent = match recorded.status {
            PacketStatus::Finished => full && refund == 0 && recorded.refund_item_cents.is_none(),
            PacketStatus::Expired | PacketStatus::Cancelled => !full && refund > 0 && refund_item == refund,
            PacketStatus::Open => false,
        };
        if !consistent {
            refunds.push(format!(
                "{}: {:?} with {} grabs of {}, refund {refund}, refund item {refund_item}",
                sent.id,
                recorded.status,
                recorded.grabs.len(),
                sent.count
            ));
        }
        if refund > 0 {
            match refunded_at(dynamodb, table, &sent.id).await {
                Some(at) if at >= recorded.packet.expires_at_ms => {}
                at => {
                    refunds.push(format!("{}: refunded at {at:?}, expires {}", sent.id, recorded.packet.expires_at_ms))
                }
            }
        }
    }
    report.check("4. one refund, only after expiry, once closed (status, refund and refund item agree)", refunds);

    report.check(
        "5. no grab at or after expires_at",
        packets
            .iter()
            .flat_map(|(sent, recorded)| {
                recorded.grabs.iter().filter(|grab| grab.at_ms >= recorded.packet.expires_at_ms).map(move |grab| {
                    format!(
                        "{} grabbed {} at {} (expires {})",
                        grab.user, sent.id, grab.at_ms, recorded.packet.expires_at_ms
                    )
                })
            })
            .collect(),
    );

    let mut still_indexed = Vec::new();
    for shard in 0..store.settle_shards() {
        match store.indexed_packets(shard).await {
            Ok(ids) => still_indexed.extend(ids.iter().map(|id| format!("shard {shard} still indexes {id}"))),
            Err(error) => still_indexed.push(format!("shard {shard}: {error}")),
        }
    }
    report.check("settle finished: the Redis settle index is empty", still_indexed);

    let views_and_replays: Vec<String> = outcome.bad_views.iter().chain(&outcome.bad_replays).cloned().collect();
    report.check("views add up; replayed sends name the same packet", views_and_replays);
    let mut freshness = outcome.freshness_ms.clone();
    freshness.sort_by(f64::total_cmp);
    let p99 = freshness.get((freshness.len() * 99).div_ceil(100).saturating_sub(1)).copied().unwrap_or(0.0);
    let mut stale: Vec<String> = outcome.never_fresh.iter().filter(|line| !hit(line)).cloned().collect();
    if p99 > crate::traffic::FRESHNESS_P99_LIMIT_MS {
        stale.push(format!("p99 {p99:.0} ms over {} probed grabs", freshness.len()));
    }
    if freshness.is_empty() {
        stale.push("no grab was probed".into());
    }
    report.check("freshness: a grab in its grabber's history within 5 s, p99", stale);
    report.freshness_p50_ms = freshness.get(freshness.len() / 2).copied().unwrap_or(0.0);
    report.freshness_p99_ms = p99;

    let log = std::fs::read_to_string(log).unwrap_or_else(|error| format!("ERROR the log could not be read: {error}"));
    report.check(
        "the local API logged no ERROR, panic or RECONCILIATION_MISMATCH",
        log.lines()
            .filter(|line| {
                line.contains("ERROR") || line.contains("panicked") || line.contains("RECONCILIATION_MISMATCH")
            })
            // A failed-over packet's refused grabs are reported, as they should be.
            .filter(|line| !(line.contains("RECONCILIATION_MISMATCH") && hit(line)))
            .map(str::to_owned)
            .collect(),
    );
    report
}
