//! `make books-scale`: reconciliation over a ledger of millions of items in bounded memory.
//!
//! `books_scale generate <file> <items>` writes a consistent ledger in DynamoDB's export shape
//! (the same item shapes the ledger writes, events included), each partition key's items
//! together: users who top up once and send seven packets, each grabbed by one to five of
//! the next users, all but the last expired with a refund. It streams: the generator holds
//! nothing per item.
//!
//! `books_scale reconcile <file> [passes]` reconciles it through the export-file adapter and
//! the same fold as the table, and prints the figures with the process's peak resident memory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use red_packets::adapters::ExportFile;
use red_packets::funds::{reconcile, Cutoff};

/// Packets each user sends.
const PER_USER: u64 = 7;
/// What each user tops up.
const TOPUP_CENTS: u64 = 1_000_000;

fn packet_id(p: u64) -> String {
    format!("{:032x}", (u128::from(p) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835))
}

fn grabs_of(p: u64) -> u64 {
    1 + p % 5
}

fn share_cents(p: u64, j: u64) -> u64 {
    10 + (p * 31 + j * 17) % 90
}

fn total_cents(p: u64) -> u64 {
    (0..=grabs_of(p)).map(|j| share_cents(p, j)).sum()
}

fn finalised(p: u64) -> bool {
    p % PER_USER != PER_USER - 1
}

struct Ledger {
    users: u64,
    out: std::io::BufWriter<std::fs::File>,
    line: String,
    items: u64,
}

impl Ledger {
    fn grabber(&self, p: u64, j: u64) -> u64 {
        (p / PER_USER + 1 + j) % self.users
    }

    fn emit(&mut self) {
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes()).expect("the file is writable");
        self.line.clear();
        self.items += 1;
    }

    fn event(kind: &str, subject: &str, packet: Option<&str>, user: u64, cents: u64, at: u64) -> String {
        let packet = packet.map(|id| format!(r#","packet_id":{{"S":"{id}"}}"#)).unwrap_or_default();
        format!(
            r#"{{"M":{{"event_id":{{"S":"{kind}:{subject}"}},"type":{{"S":"{kind}"}}{packet},"user":{{"S":"u{user}"}},"amount_cents":{{"N":"{cents}"}},"occurred_at":{{"S":"2026-11-23T00:00:{:02}.{:03}Z"}}}}}}"#,
            (at / 1000) % 60,
            at % 1000
        )
    }

    fn movement(&mut self, user: u64, kind: &str, cents: u64, packet: Option<&str>, reference: Option<&str>, at: u64) {
        let subject = packet.or(reference).unwrap_or_default();
        let about = match (packet, reference) {
            (Some(id), _) => format!(r#""packet_id":{{"S":"{id}"}}"#),
            (_, Some(reference)) => format!(r#""reference":{{"S":"{reference}"}}"#),
            _ => unreachable!(),
        };
        let event = Self::event(
            if kind == "send" { "WalletDebited" } else { "WalletCredited" },
            subject,
            packet,
            user,
            cents,
            at,
        );
        let _ = write!(
            self.line,
            r#"{{"Item":{{"pk":{{"S":"WALLET#u{user}"}},"sk":{{"S":"MOVE#{at:013}#{kind}#{subject}"}},"user":{{"S":"u{user}"}},"kind":{{"S":"{kind}"}},"amount_cents":{{"N":"{cents}"}},{about},"at":{{"S":"2026-11-23T00:00:00.000Z"}},"at_ms":{{"N":"{at}"}},"written_at_ms":{{"N":"{at}"}},"event":{event}}}}}"#
        );
        self.emit();
    }

    fn wallet(&mut self, u: u64) {
        let mut moves: Vec<(&str, u64, Option<String>, u64)> = vec![("topup", TOPUP_CENTS, None, u)];
        for i in 0..PER_USER {
            let p = u * PER_USER + i;
            moves.push(("send", total_cents(p), Some(packet_id(p)), p * 4 + 1));
            if finalised(p) {
                moves.push(("refund", share_cents(p, grabs_of(p)), Some(packet_id(p)), p * 4 + 3));
            }
        }
        for j in 0..5 {
            let sender = (u + self.users * 5 - 1 - j) % self.users;
            for i in 0..PER_USER {
                let p = sender * PER_USER + i;
                if grabs_of(p) > j && self.grabber(p, j) == u {
                    moves.push(("grab", share_cents(p, j), Some(packet_id(p)), p * 4 + 2));
                }
            }
        }
        let balance: i128 = moves
            .iter()
            .map(|(kind, cents, _, _)| if *kind == "send" { -i128::from(*cents) } else { i128::from(*cents) })
            .sum();
        let _ = write!(
            self.line,
            r#"{{"Item":{{"pk":{{"S":"WALLET#u{u}"}},"sk":{{"S":"BALANCE"}},"balance_cents":{{"N":"{balance}"}},"moves":{{"N":"{}"}},"user":{{"S":"u{u}"}}}}}}"#,
            moves.len()
        );
        self.emit();
        for (kind, cents, packet, at) in moves {
            let reference = format!("pay-u{u}");
            let reference = (kind == "topup").then_some(reference.as_str());
            self.movement(u, kind, cents, packet.as_deref(), reference, at);
        }
        let _ = write!(
            self.line,
            r#"{{"Item":{{"pk":{{"S":"TOPUP#pay-u{u}"}},"sk":{{"S":"TOPUP"}},"user":{{"S":"u{u}"}},"amount_cents":{{"N":"{TOPUP_CENTS}"}},"reference":{{"S":"pay-u{u}"}},"at":{{"S":"2026-11-23T00:00:00.000Z"}},"written_at_ms":{{"N":"{u}"}}}}}}"#
        );
        self.emit();
    }

    fn packet(&mut self, p: u64) {
        let (id, sender, total, k) = (packet_id(p), p / PER_USER, total_cents(p), grabs_of(p));
        let pk = format!(r#""pk":{{"S":"PKT#{id}"}}"#);
        let context = format!(
            r#""sender":{{"S":"u{sender}"}},"total_cents":{{"N":"{total}"}},"count":{{"N":"{}"}},"packet_created_at":{{"S":"2026-11-23T00:00:00.000Z"}}"#,
            k + 1
        );
        for j in 0..k {
            let (user, cents, at) = (self.grabber(p, j), share_cents(p, j), p * 4 + 2);
            let event = Self::event("GrabRecorded", &id, Some(&id), user, cents, at);
            let _ = write!(
                self.line,
                r#"{{"Item":{{{pk},"sk":{{"S":"GRAB#u{user}"}},"packet_id":{{"S":"{id}"}},"user":{{"S":"u{user}"}},"amount_cents":{{"N":"{cents}"}},"seq":{{"N":"{}"}},"grabbed_at":{{"S":"2026-11-23T00:00:00.000Z"}},"grabbed_at_ms":{{"N":"{at}"}},{context},"history_pk":{{"S":"USER#u{user}"}},"history_sk":{{"S":"RECV#2026-11-23T00:00:00.000Z#{id}"}},"event":{event},"written_at_ms":{{"N":"{at}"}}}}}}"#,
                j + 1
            );
            self.emit();
        }
        let status = if finalised(p) { "expired" } else { "open" };
        let settled = if finalised(p) { format!(r#","settled_at_ms":{{"N":"{}"}}"#, p * 4 + 3) } else { String::new() };
        let event = Self::event("PacketSent", &id, Some(&id), sender, total, p * 4 + 1);
        let _ = write!(
            self.line,
            r#"{{"Item":{{{pk},"sk":{{"S":"META"}},"packet_id":{{"S":"{id}"}},"sender":{{"S":"u{sender}"}},"kind":{{"S":"random"}},"total_cents":{{"N":"{total}"}},"count":{{"N":"{}"}},"seed":{{"S":"{id}{id}"}},"status":{{"S":"{status}"}},"created_at":{{"S":"2026-11-23T00:00:00.000Z"}},"created_at_ms":{{"N":"{}"}},"expires_at":{{"S":"2026-11-24T00:00:00.000Z"}},"expires_at_ms":{{"N":"86400000"}},"history_pk":{{"S":"USER#u{sender}"}},"history_sk":{{"S":"SENT#2026-11-23T00:00:00.000Z#{id}"}},"event":{event},"written_at_ms":{{"N":"{}"}}{settled}}}}}"#,
            k + 1,
            p * 4 + 1,
            p * 4 + 1
        );
        self.emit();
        if finalised(p) {
            let (cents, at) = (share_cents(p, k), p * 4 + 3);
            let event = Self::event("PacketRefunded", &id, Some(&id), sender, cents, at);
            let _ = write!(
                self.line,
                r#"{{"Item":{{{pk},"sk":{{"S":"REFUND"}},"packet_id":{{"S":"{id}"}},"sender":{{"S":"u{sender}"}},"amount_cents":{{"N":"{cents}"}},"refunded_at":{{"S":"2026-11-23T00:00:00.000Z"}},"event":{event},"written_at_ms":{{"N":"{at}"}}}}}}"#
            );
            self.emit();
        }
        for j in 0..=k {
            let cents = share_cents(p, j);
            let holder = if j < k {
                format!(
                    r#""user":{{"S":"u{}"}},"grabbed_at_ms":{{"N":"{}"}},"refund":{{"BOOL":false}}"#,
                    self.grabber(p, j),
                    p * 4 + 2
                )
            } else if finalised(p) {
                r#""refund":{"BOOL":true}"#.to_owned()
            } else {
                continue;
            };
            let _ = write!(
                self.line,
                r#"{{"Item":{{{pk},"sk":{{"S":"SHARE#{:05}"}},"packet_id":{{"S":"{id}"}},"seq":{{"N":"{}"}},"amount_cents":{{"N":"{cents}"}},{holder}}}}}"#,
                j + 1,
                j + 1
            );
            self.emit();
        }
    }
}

/// The process's peak resident memory, in MiB (Linux `VmHWM`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: books_scale generate <file> <items> | books_scale reconcile <file> [passes]";
    match args.first().map(String::as_str) {
        Some("generate") => {
            let (path, items): (&str, u64) = (args.get(1).ok_or(usage)?, args.get(2).ok_or(usage)?.parse()?);
            // Per user, 98 items on average: a balance, a top-up, its movement, 7 sends, 6 refunds
            // and about 21 grabs in the wallet; 7 packet records, about 21 grab items and their
            // claims, 6 refunds and their claims.
            let users = items.div_ceil(98).max(8);
            let started = Instant::now();
            let file = std::fs::File::create(path)?;
            let mut ledger =
                Ledger { users, out: std::io::BufWriter::with_capacity(1 << 20, file), line: String::new(), items: 0 };
            for u in 0..users {
                ledger.wallet(u);
                for i in 0..PER_USER {
                    ledger.packet(u * PER_USER + i);
                }
            }
            ledger.out.flush()?;
            let bytes = std::fs::metadata(path)?.len();
            println!(
                "{}",
                serde_json::json!({
                    "generated_items": ledger.items, "users": users, "packets": users * PER_USER,
                    "file_bytes": bytes, "seconds": started.elapsed().as_secs_f64(),
                })
            );
        }
        Some("reconcile") => {
            let path = args.get(1).ok_or(usage)?;
            let passes: u32 = args.get(2).map(|p| p.parse()).transpose()?.unwrap_or(1);
            let started = Instant::now();
            let cutoff = Cutoff { as_of_ms: i64::MAX / 2, landing_ms: 0 };
            let books =
                reconcile(&ExportFile::new(path, red_packets::domain::Currency::default()), cutoff, passes).await?;
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "{}",
                serde_json::json!({
                    "items": books.items, "passes": passes, "seconds": seconds,
                    "items_per_s": books.items as f64 * f64::from(passes) / seconds,
                    "peak_rss_mib": peak_rss_mib(), "wallets": books.wallets, "packets": books.packets,
                    "movements": books.movements, "topups_cents": books.topups_cents.to_string(),
                    "balances_cents": books.balances_cents.to_string(),
                    "in_open_packets_cents": books.in_open_packets_cents.to_string(),
                    "differences": books.differences.len(), "first_differences": books.differences.iter().take(5).map(ToString::to_string).collect::<Vec<_>>(),
                })
            );
            if !books.balanced() {
                return Err("the generated books do not balance".into());
            }
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let size = std::fs::metadata(path)?.len() as f64 / 1e9;
            let record = serde_json::json!({
                "items": books.items, "passes": passes, "seconds": seconds,
                "items_per_s": books.items as f64 * f64::from(passes) / seconds, "peak_rss_mib": peak_rss_mib(),
                "packets": books.packets, "wallets": books.wallets, "differences": books.differences.len(),
                "machine": format!("{cores} cores, a {size:.1} GB file on local disk"),
            });
            let results = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results");
            std::fs::write(
                results.join(format!("books-scale-p{passes}.json")),
                serde_json::to_string_pretty(&record)?,
            )?;
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
