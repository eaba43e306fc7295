//! What finance and support read, as JSON lines and CSV: the daily trial balance (money in and
//! out, and where it is at the start and end of a business day) and one user's statement of a day.
//! Days are booking days: a movement belongs to the day its write was stamped, the same time
//! reconciliation cuts the ledger at, so statements and trial balances agree to the cent.

use std::fmt::Write as _;

use serde::Serialize;

use super::{MovementRecord, Reconciliation};
use crate::clock::{rfc3339, Millis};
use crate::ids::UserId;
use crate::money::Currency;

/// One day's trial balance, from the books as of its start and as of its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrialBalance {
    /// The business day, `YYYY-MM-DD`.
    pub day: String,
    /// The books' cut-off at its start and at its end (RFC 3339).
    pub opening_as_of: String,
    /// The end's cut-off: the day's end, or earlier while writes may still be landing in it.
    pub closing_as_of: String,
    /// Each account: name and cents.
    pub rows: Vec<TrialRow>,
    /// Opening wallets, open packets and pending withdrawals, plus the day's top-ups and
    /// adjustments in, less its adjustments out and withdrawals paid, equal the closing ones.
    pub balanced: bool,
    /// Differences reconciliation found at either end (listed by `reconcile`).
    pub differences: usize,
    /// What the amounts are minor units of.
    pub currency: Currency,
}

/// One line of a trial balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrialRow {
    /// `wallets_opening`, `open_packets_opening`, `pending_withdrawals_opening`, `topups_in`,
    /// `adjustments_in`, `adjustments_out`, `withdrawals_paid`, `sent`, `grabbed`, `refunded`,
    /// `wallets_closing`, `open_packets_closing` or `pending_withdrawals_closing`.
    pub account: &'static str,
    /// Its amount.
    pub cents: i128,
}

impl TrialBalance {
    /// The trial balance of `day` from the books `opening` (as of its start) and `closing`.
    pub fn new(day: &str, opening: &Reconciliation, closing: &Reconciliation, currency: Currency) -> Self {
        let flow = |at_end: u128, at_start: u128| at_end as i128 - at_start as i128;
        let row = |account, cents| TrialRow { account, cents };
        let rows = vec![
            row("wallets_opening", opening.balances_cents),
            row("open_packets_opening", opening.in_open_packets_cents as i128),
            row("pending_withdrawals_opening", opening.pending_withdrawals_cents as i128),
            row("topups_in", flow(closing.topups_cents, opening.topups_cents)),
            row("adjustments_in", flow(closing.adjusted_in_cents, opening.adjusted_in_cents)),
            row("adjustments_out", flow(closing.adjusted_out_cents, opening.adjusted_out_cents)),
            row("withdrawals_paid", flow(closing.withdrawn_cents, opening.withdrawn_cents)),
            row("sent", flow(closing.sent_cents, opening.sent_cents)),
            row("grabbed", flow(closing.grabbed_cents, opening.grabbed_cents)),
            row("refunded", flow(closing.refunded_cents, opening.refunded_cents)),
            row("wallets_closing", closing.balances_cents),
            row("open_packets_closing", closing.in_open_packets_cents as i128),
            row("pending_withdrawals_closing", closing.pending_withdrawals_cents as i128),
        ];
        let value = |name: &str| rows.iter().find(|row| row.account == name).map(|row| row.cents).unwrap_or(0);
        let held = |at: &str| {
            value(&format!("wallets_{at}"))
                + value(&format!("open_packets_{at}"))
                + value(&format!("pending_withdrawals_{at}"))
        };
        let flows = value("topups_in") + value("adjustments_in") - value("adjustments_out") - value("withdrawals_paid");
        let balanced = held("opening") + flows == held("closing");
        TrialBalance {
            day: day.to_owned(),
            opening_as_of: opening.as_of.clone(),
            closing_as_of: closing.as_of.clone(),
            balanced,
            differences: opening.differences.len() + closing.differences.len(),
            rows,
            currency,
        }
    }

    /// One JSON object per account, naming the currency.
    pub fn to_json_lines(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            let line = serde_json::json!({
                "day": self.day, "account": row.account, "cents": row.cents as i64,
                "currency": self.currency, "as_of": self.closing_as_of, "balanced": self.balanced,
            });
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// `day,account,cents,currency` (its code), with a header.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("day,account,cents,currency\n");
        for row in &self.rows {
            let _ = writeln!(out, "{},{},{},{}", self.day, row.account, row.cents, self.currency.code());
        }
        out
    }
}

/// One user's statement of one booking day, or of a period of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Statement {
    /// Whose.
    pub user: UserId,
    /// The business day, `YYYY-MM-DD` (a period's first).
    pub day: String,
    /// A period's last business day (`GET …/statements/{day}?to=`); absent for one day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The balance when the day began.
    pub opening_cents: i128,
    /// The day's movements, in booking order.
    pub lines: Vec<StatementLine>,
    /// The balance when it ended.
    pub closing_cents: i128,
    /// What the amounts are minor units of.
    pub currency: Currency,
}

/// One movement on a statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatementLine {
    /// When its write was stamped (RFC 3339).
    pub booked_at: String,
    /// The movement's kind ([`MovementKind::as_str`](crate::MovementKind::as_str)).
    pub kind: &'static str,
    /// The packet id, the top-up's reference, the withdrawal's id or the adjustment's reference.
    pub subject: String,
    /// The balance change: negative for a send.
    pub amount_cents: i128,
    /// The balance after it.
    pub balance_cents: i128,
}

impl Statement {
    /// `user`'s statement of the day `[start_ms, end_ms)` called `day`, from every movement of
    /// their wallet.
    pub fn new(
        user: &UserId,
        day: &str,
        (start_ms, end_ms): (Millis, Millis),
        mut movements: Vec<MovementRecord>,
        currency: Currency,
    ) -> Self {
        movements.sort_by(|a, b| (a.written_at_ms, &a.key).cmp(&(b.written_at_ms, &b.key)));
        let opening_cents: i128 =
            movements.iter().filter(|m| m.written_at_ms < start_ms).map(|m| m.kind.delta(m.amount_cents)).sum();
        let mut balance = opening_cents;
        let lines = movements
            .iter()
            .filter(|m| (start_ms..end_ms).contains(&m.written_at_ms))
            .map(|m| {
                balance += m.kind.delta(m.amount_cents);
                StatementLine {
                    booked_at: rfc3339(m.written_at_ms),
                    kind: m.kind.as_str(),
                    subject: m
                        .packet_id
                        .as_ref()
                        .map(|id| id.to_string())
                        .or_else(|| m.reference.clone())
                        .unwrap_or_default(),
                    amount_cents: m.kind.delta(m.amount_cents),
                    balance_cents: balance,
                }
            })
            .collect();
        Statement {
            user: user.clone(),
            day: day.to_owned(),
            to: None,
            opening_cents,
            lines,
            closing_cents: balance,
            currency,
        }
    }

    /// The statement as one of the period ending on business day `last` (none when `last` is
    /// its own day): the closing row is dated `last`.
    pub fn through(mut self, last: &str) -> Self {
        self.to = (last != self.day).then(|| last.to_owned());
        self
    }

    /// The day the closing row is dated: the period's last.
    fn closing_day(&self) -> &str {
        self.to.as_deref().unwrap_or(&self.day)
    }

    /// An `opening` line, one `movement` line each, a `closing` line.
    pub fn to_json_lines(&self) -> String {
        let mut out = String::new();
        let head = serde_json::json!({"type": "opening", "user": self.user, "day": self.day, "balance_cents": self.opening_cents as i64, "currency": self.currency});
        let _ = writeln!(out, "{head}");
        for line in &self.lines {
            let mut value = serde_json::to_value(line).unwrap_or_default();
            value["type"] = "movement".into();
            value["amount_cents"] = (line.amount_cents as i64).into();
            value["balance_cents"] = (line.balance_cents as i64).into();
            value["currency"] = serde_json::to_value(self.currency).unwrap_or_default();
            let _ = writeln!(out, "{value}");
        }
        let tail = serde_json::json!({"type": "closing", "user": self.user, "day": self.closing_day(), "balance_cents": self.closing_cents as i64, "currency": self.currency});
        let _ = writeln!(out, "{tail}");
        out
    }

    /// `user,booked_at,kind,subject,amount_cents,balance_cents,currency`, opening and closing rows
    /// included.
    pub fn to_csv(&self) -> String {
        let code = self.currency.code();
        let mut out = String::from("user,booked_at,kind,subject,amount_cents,balance_cents,currency\n");
        let _ = writeln!(out, "{},{},opening,,0,{},{code}", self.user, self.day, self.opening_cents);
        for line in &self.lines {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{code}",
                self.user, line.booked_at, line.kind, line.subject, line.amount_cents, line.balance_cents
            );
        }
        let _ = writeln!(out, "{},{},closing,,0,{},{code}", self.user, self.closing_day(), self.closing_cents);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wallet::MovementKind;

    fn movement(kind: MovementKind, amount_cents: u64, written_at_ms: Millis) -> MovementRecord {
        MovementRecord {
            user: UserId::from_claim("alice").unwrap(),
            kind,
            amount_cents,
            packet_id: None,
            reference: Some(format!("ref-{written_at_ms}")),
            written_at_ms,
            key: format!("MOVE#{written_at_ms}"),
            has_event: true,
        }
    }

    #[test]
    fn a_statement_opens_with_the_days_before_and_closes_on_its_last_movement() {
        let (start, end) = crate::BusinessDay::default().bounds("2026-11-23").unwrap();
        assert_eq!(rfc3339(start), "2026-11-23T00:00:00.000Z");
        let movements = vec![
            movement(MovementKind::Grab, 40, end + 5),
            movement(MovementKind::Send, 300, start + 10),
            movement(MovementKind::Topup, 1_000, start - 1),
            movement(MovementKind::Refund, 80, start + 20),
        ];
        let jpy = Currency::parse("JPY").unwrap();
        let statement =
            Statement::new(&UserId::from_claim("alice").unwrap(), "2026-11-23", (start, end), movements, jpy);
        assert_eq!((statement.opening_cents, statement.closing_cents), (1_000, 780));
        let amounts: Vec<(i128, i128)> = statement.lines.iter().map(|l| (l.amount_cents, l.balance_cents)).collect();
        assert_eq!(amounts, vec![(-300, 700), (80, 780)]);
        let csv = statement.to_csv();
        assert!(csv.starts_with(
            "user,booked_at,kind,subject,amount_cents,balance_cents,currency\nalice,2026-11-23,opening,,0,1000,JPY\n"
        ));
        assert!(csv.ends_with("alice,2026-11-23,closing,,0,780,JPY\n"), "{csv}");
        let lines = statement.to_json_lines();
        assert_eq!(lines.lines().count(), 4);
        for line in lines.lines() {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(line["currency"], serde_json::json!({"code": "JPY", "exponent": 0}), "{line}");
        }
        assert!(crate::BusinessDay::default().bounds("2026-13-01").is_none());
    }

    #[test]
    fn a_period_opens_on_its_first_day_and_closes_on_its_last() {
        let days = crate::day::DayRange::parse("2026-11-23", Some("2026-11-24")).unwrap();
        let (start, end) = days.bounds(crate::BusinessDay::default()).unwrap();
        let movements = vec![
            movement(MovementKind::Topup, 1_000, start - 1),
            movement(MovementKind::Send, 300, start + 10),
            movement(MovementKind::Refund, 80, end - 10),
            movement(MovementKind::Grab, 40, end),
        ];
        let yuan = Currency::parse("CNY").unwrap();
        let alice = UserId::from_claim("alice").unwrap();
        let period = Statement::new(&alice, &days.first(), (start, end), movements, yuan).through(&days.last());
        assert_eq!(
            (period.to.as_deref(), period.opening_cents, period.closing_cents),
            (Some("2026-11-24"), 1_000, 780)
        );
        assert_eq!(period.lines.len(), 2, "both days' movements, none after the last");
        let csv = period.to_csv();
        assert!(csv.contains("alice,2026-11-23,opening,,0,1000,CNY\n"), "{csv}");
        assert!(csv.ends_with("alice,2026-11-24,closing,,0,780,CNY\n"), "{csv}");
        let one_day = Statement::new(&alice, "2026-11-23", (start, end), Vec::new(), yuan).through("2026-11-23");
        assert_eq!(one_day.to, None, "a day's statement reads as before");
    }

    #[test]
    fn a_trial_balance_carries_the_day_from_its_opening_to_its_closing() {
        let opening = Reconciliation {
            topups_cents: 1_000,
            balances_cents: 700,
            in_open_packets_cents: 300,
            sent_cents: 300,
            ..Default::default()
        };
        let closing = Reconciliation {
            topups_cents: 1_500,
            balances_cents: 1_500,
            in_open_packets_cents: 0,
            sent_cents: 300,
            grabbed_cents: 220,
            refunded_cents: 80,
            ..Default::default()
        };
        let trial = TrialBalance::new("2026-11-23", &opening, &closing, Currency::default());
        assert!(trial.balanced, "{trial:?}");
        assert!(trial.to_csv().contains("2026-11-23,topups_in,500,CNY\n"));
        assert_eq!(trial.to_json_lines().lines().count(), 13);
        assert!(trial.to_json_lines().lines().all(|line| line.contains(r#""currency":{"code":"CNY","exponent":2}"#)));
        let off = Reconciliation { balances_cents: 1_499, ..closing.clone() };
        assert!(!TrialBalance::new("2026-11-23", &opening, &off, Currency::default()).balanced);
        let paid_out =
            Reconciliation { withdrawn_cents: 200, balances_cents: 1_200, pending_withdrawals_cents: 100, ..closing };
        assert!(
            TrialBalance::new("2026-11-23", &opening, &paid_out, Currency::default()).balanced,
            "300 out: 200 paid, 100 pending"
        );
    }
}
