//! `local restore-report <before> <after>`: what a restore of the ledger lost, item by item.
//!
//! A point-in-time restore writes the table as it was at the restore point into a new table;
//! the table it was restored from stays (docs/OPERATIONS.md, "Restoring the ledger"). Once
//! settle has replayed what Redis still held into the restored table, this compares the two:
//! every item of `before` that `after` lacks is lost, classified by what it records (a packet,
//! a grab, a refund, a wallet movement, a top-up, a withdrawal ...) with the ids finance needs;
//! every item of `after` that `before` lacks is extra (money the replay wrote under another key:
//! a payment made twice would show here), except a movement the replay wrote again at its own
//! time in place of a lost one (a refund), which is `rewritten`, paid once; and a balance or a
//! packet's status that differs is changed. Bookkeeping (idempotency claims, daily counters, the risk rules' state, settle's
//! layouts) is counted apart: it records no money.

use std::collections::BTreeMap;

use red_packets::adapters::{DynamoLedger, RawItem};
use red_packets::Config;
use serde::Serialize;
use serde_dynamo::AttributeValue;

/// One item the comparison found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `lost`, `extra`, `rewritten` or `changed`.
    pub finding: &'static str,
    /// What the item records (see [`classify`]).
    pub class: &'static str,
    /// The packet, user, reference or withdrawal it concerns.
    pub subject: String,
    pub pk: String,
    pub sk: String,
    /// For a changed item: the money field before and after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// What an item of the table records, by its keys, and the id it concerns.
pub fn classify(pk: &str, sk: &str) -> (&'static str, String) {
    let after = |prefix: &str, text: &str| text.strip_prefix(prefix).unwrap_or(text).to_owned();
    if let Some(packet) = pk.strip_prefix("PKT#") {
        let class = match sk {
            "META" => "packet",
            "REFUND" => "refund",
            _ if sk.starts_with("SHARE#") => "share_claim",
            _ if sk.starts_with("GRAB#") => "grab",
            _ if sk.starts_with("CASUALTY#") => "casualty",
            _ => "packet_other",
        };
        return (class, packet.to_owned());
    }
    if let Some(user) = pk.strip_prefix("WALLET#") {
        let class = match sk {
            "BALANCE" => "balance",
            _ if sk.split('#').nth(2) == Some("grab") => "grab_credit",
            _ if sk.split('#').nth(2) == Some("refund") => "refund_credit",
            _ if sk.split('#').nth(2) == Some("send") => "send_debit",
            _ => "movement",
        };
        return (class, user.to_owned());
    }
    match pk.split('#').next().unwrap_or_default() {
        "TOPUP" => ("top_up", after("TOPUP#", pk)),
        "WITHDRAWAL" => ("withdrawal", after("WITHDRAWAL#", pk)),
        "ADJUSTMENT" => ("adjustment", after("ADJUSTMENT#", pk)),
        "AUDIT" => ("audit", sk.to_owned()),
        "RISK" => ("risk_flag", sk.to_owned()),
        _ => ("bookkeeping", pk.to_owned()),
    }
}

/// The money field of an item whose value a restore can change under the same key.
fn money_field(class: &str, item: &RawItem) -> Option<String> {
    let field = match class {
        "balance" => "balance_cents",
        "packet" => "status",
        _ => return None,
    };
    match item.get(field)? {
        AttributeValue::N(number) => Some(number.clone()),
        AttributeValue::S(text) => Some(text.clone()),
        _ => None,
    }
}

fn key(item: &RawItem, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(text)) => text.clone(),
        _ => String::new(),
    }
}

/// Every item of `table`, by its keys.
async fn items_of(config: &Config, table: &str) -> Result<BTreeMap<(String, String), RawItem>, String> {
    let mut config = config.clone();
    config.table_name = table.to_owned();
    let client = DynamoLedger::client_from_env().map_err(|error| error.to_string())?;
    let mut items = BTreeMap::new();
    DynamoLedger::new(client, &config)
        .export_items(|item| {
            items.insert((key(&item, "pk"), key(&item, "sk")), item);
        })
        .await
        .map_err(|error| format!("{table}: {error}"))?;
    Ok(items)
}

/// The findings of `before` against `after`, bookkeeping left out; and how many bookkeeping
/// items were lost.
pub async fn compare(config: &Config, before: &str, after: &str) -> Result<(Vec<Finding>, usize), String> {
    let (before, after) = (items_of(config, before).await?, items_of(config, after).await?);
    let mut findings = Vec::new();
    let mut bookkeeping = 0;
    let finding = |finding, (pk, sk): &(String, String), before, after| {
        let (class, subject) = classify(pk, sk);
        Finding { finding, class, subject, pk: pk.clone(), sk: sk.clone(), before, after }
    };
    for (keys, item) in &before {
        let (class, _) = classify(&keys.0, &keys.1);
        match after.get(keys) {
            None if class == "bookkeeping" => bookkeeping += 1,
            None => findings.push(finding("lost", keys, None, None)),
            Some(restored) => {
                let (was, is) = (money_field(class, item), money_field(class, restored));
                if was != is {
                    findings.push(finding("changed", keys, was, is));
                }
            }
        }
    }
    for keys in after.keys().filter(|keys| !before.contains_key(*keys)) {
        if classify(&keys.0, &keys.1).0 != "bookkeeping" {
            findings.push(finding("extra", keys, None, None));
        }
    }
    Ok((paired(findings), bookkeeping))
}

/// A movement's identity without its time: `(wallet, kind, packet or reference)`. Settle's
/// replay writes a refund's movement at the replay's time, so the same refund is lost under its
/// first key and extra under its second.
fn movement_identity(pk: &str, sk: &str) -> Option<(String, String, String)> {
    let mut parts = sk.strip_prefix("MOVE#")?.splitn(3, '#');
    let (_at, kind, subject) = (parts.next()?, parts.next()?, parts.next()?);
    Some((pk.to_owned(), kind.to_owned(), subject.to_owned()))
}

/// A lost movement and an extra one with the same identity are one movement written again:
/// `rewritten` (paid once), listed once under the restored table's key.
fn paired(findings: Vec<Finding>) -> Vec<Finding> {
    let identity = |finding: &Finding| movement_identity(&finding.pk, &finding.sk);
    let lost: Vec<_> = findings.iter().filter(|f| f.finding == "lost").filter_map(identity).collect();
    let extra: Vec<_> = findings.iter().filter(|f| f.finding == "extra").filter_map(identity).collect();
    findings
        .into_iter()
        .filter_map(|mut finding| {
            let Some(id) = identity(&finding) else { return Some(finding) };
            match finding.finding {
                "lost" if extra.contains(&id) => None,
                "extra" if lost.contains(&id) => {
                    finding.finding = "rewritten";
                    Some(finding)
                }
                _ => Some(finding),
            }
        })
        .collect()
}

/// `local restore-report <before> <after>`: one JSON line per finding, then a summary line
/// (counts by finding and class); fails when the restore lost or changed money.
pub async fn run(before: &str, after: &str) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let (findings, bookkeeping) = compare(&config, before, after).await?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for finding in &findings {
        println!("{}", serde_json::to_string(finding)?);
        *counts.entry(format!("{}:{}", finding.finding, finding.class)).or_default() += 1;
    }
    println!(
        "{}",
        serde_json::json!({ "before": before, "after": after, "findings": counts, "bookkeeping_lost": bookkeeping })
    );
    if findings.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the restore of {after} lost or changed {} items of {before}'s books (listed above)",
            findings.len()
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_classified_by_their_keys() {
        assert_eq!(classify("PKT#ab12", "META"), ("packet", "ab12".into()));
        assert_eq!(classify("PKT#ab12", "SHARE#00003"), ("share_claim", "ab12".into()));
        assert_eq!(classify("PKT#ab12", "REFUND"), ("refund", "ab12".into()));
        assert_eq!(classify("WALLET#bob", "MOVE#1700000000000#grab#ab12"), ("grab_credit", "bob".into()));
        assert_eq!(classify("WALLET#bob", "BALANCE"), ("balance", "bob".into()));
        assert_eq!(classify("TOPUP#pay-7", "TOPUP"), ("top_up", "pay-7".into()));
        assert_eq!(classify("WITHDRAWAL#w1", "WITHDRAWAL"), ("withdrawal", "w1".into()));
        assert_eq!(classify("IDEM#alice#k1", "IDEM"), ("bookkeeping", "IDEM#alice#k1".into()));
        assert_eq!(classify("LIMIT#alice#2026-11-28", "LIMIT"), ("bookkeeping", "LIMIT#alice#2026-11-28".into()));
    }

    #[test]
    fn a_movement_written_again_at_another_time_is_one_rewritten() {
        let at = |finding, sk: &str| {
            let (class, subject) = classify("WALLET#alice", sk);
            Finding { finding, class, subject, pk: "WALLET#alice".into(), sk: sk.into(), before: None, after: None }
        };
        let findings = vec![
            at("lost", "MOVE#100#refund#p1"),
            at("extra", "MOVE#200#refund#p1"),
            at("extra", "MOVE#300#refund#p2"),
            at("lost", "MOVE#100#send#p3"),
        ];
        let paired: Vec<(&str, String)> = paired(findings).into_iter().map(|f| (f.finding, f.sk)).collect();
        assert_eq!(
            paired,
            [
                ("rewritten", "MOVE#200#refund#p1".into()),
                ("extra", "MOVE#300#refund#p2".into()),
                ("lost", "MOVE#100#send#p3".into())
            ]
        );
    }
}
