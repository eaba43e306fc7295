//! The operators' reads: a user (overview, movements, packets, flags, audit), a packet and its
//! two sides, statements (of a day or a period) and trial balances (JSON or CSV), the audit trail
//! of a day or a period, the pending adjustments and withdrawals, one adjustment or withdrawal,
//! a day's hours; answered here, from the ledger and the live store.

use red_packets::clock::{parse_rfc3339, Millis};
use red_packets::domain::day::DayRange;
use red_packets::domain::hourly::DayHours;
use red_packets::domain::BusinessDay;

use super::*;

/// How a report is answered: `json` (default) or `csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReportFormat {
    Json,
    Csv,
}

impl<L: OpsLedger, R, S> Asked<'_, L, R, S> {
    /// The report format the query asks for.
    fn report_format(&self) -> Result<ReportFormat, ApiError> {
        match self.query().first("format") {
            None | Some("json") => Ok(ReportFormat::Json),
            Some("csv") => Ok(ReportFormat::Csv),
            Some(_) => Err(ApiError::invalid("format", "format must be json or csv")),
        }
    }

    /// The business days a read asks for: the path's `{day}` to the query's `to` (the day alone
    /// without it).
    fn days(&self) -> Result<DayRange, ApiError> {
        Ok(DayRange::parse(self.parameter("day"), self.query().first("to"))?)
    }
}

/// `csv` as a download named `file`.
fn csv_response(csv: String, file: &str) -> Result<Response<Body>, ApiError> {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", format!("attachment; filename=\"{file}\""))
        .body(Body::Text(csv))
        .map_err(|error| ApiError::Internal(error.to_string()))
}

/// `GET /ops/v1/reports/trial-balance/{day}`: the day's trial balance, to the cut-offs of the
/// daily job (the day's start and end, or the latest safe one while it is not over): its CSV is
/// byte for byte what the funds function files.
pub(super) async fn trial_balance_of<L: OpsLedger, R, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let (ledger, day) = (asked.api.ledger, asked.parameter("day"));
    let format = asked.report_format()?;
    let (opening, closing) = day_cutoffs(ledger.business_day(), day, asked.clock.now_ms())?;
    let report = trial_balance(ledger, day, opening, closing).await.map_err(FundsFailure::from)?;
    match format {
        ReportFormat::Csv => csv_response(report.to_csv(), &format!("trial-balance-{day}.csv")),
        ReportFormat::Json => Ok(json_response(StatusCode::OK, &report)),
    }
}

/// `GET /ops/v1/reports/hours/{day}`: the business day's hourly view (`domain::hourly`): each
/// hour's sends, grabs, refunds, revoked grabs and withdrawals, counted from the ledger's events
/// as the bus delivered them.
pub(super) async fn business_hours<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (ledger, day) = (asked.api.ledger, asked.parameter("day"));
    let zone = ledger.business_day();
    if zone.bounds(day).is_none() {
        return Err(ApiError::invalid("day", "day must be a date, YYYY-MM-DD"));
    }
    let tallies = ledger.day_tallies(day).await?;
    asked.answer(&DayHours::sum(day, &zone, tallies))
}

/// `GET /ops/v1/users/{user}/statements/{day}[?to=]`: the user's statement of the business
/// days asked (one, or a period of at most [`red_packets::domain::day::MAX_RANGE_DAYS`]), to the
/// latest safe cut-off: a day's is what the funds function files.
pub(super) async fn statement<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (user, days, format) = (asked.user()?, asked.days()?, asked.report_format()?);
    let until_ms = Cutoff::latest_ms(asked.clock.now_ms());
    let report = statement_of_days(asked.api.ledger, &user, &days, until_ms).await.map_err(FundsFailure::from)?;
    match format {
        ReportFormat::Csv => csv_response(report.to_csv(), &format!("statement-{}.csv", file_days(&days))),
        ReportFormat::Json => Ok(json_response(StatusCode::OK, &report)),
    }
}

/// `GET /ops/v1/audit/{day}[?to=]`: the audit trail of a business day, or of each day of a
/// period in turn (one read per day, at most [`red_packets::domain::day::MAX_RANGE_DAYS`]).
pub(super) async fn audit<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (ledger, days) = (asked.api.ledger, asked.days()?);
    if days.bounds(ledger.business_day()).is_none() {
        return Err(ApiError::invalid("day", "day must be a date, YYYY-MM-DD"));
    }
    let mut entries = Vec::new();
    for day in days.days() {
        entries.extend(ledger.audit_of_day(&day).await?);
    }
    let to = (days.last() != days.first()).then(|| days.last());
    asked.answer(&json!({ "day": days.first(), "to": to, "entries": entries }))
}

/// A range's days as a file name's part: `2026-12-07`, or `2026-12-01-to-2026-12-07`.
fn file_days(days: &DayRange) -> String {
    if days.last() == days.first() {
        days.first()
    } else {
        format!("{}-to-{}", days.first(), days.last())
    }
}

/// Which pending withdrawals a page lists: those requested within `[from_ms, until_ms)` (the
/// query's `from` and `to`, business days), and with `overdue_only` the overdue ones alone.
#[derive(Debug, Clone, Copy)]
struct PendingFilter {
    from_ms: Millis,
    until_ms: Millis,
    overdue_only: bool,
}

impl PendingFilter {
    /// The filter the query asks for: `overdue=true|false`, `from` and `to` (`YYYY-MM-DD`, both
    /// optional, `to` not before `from`).
    fn of(query: &QueryMap, zone: BusinessDay) -> Result<PendingFilter, ApiError> {
        let overdue_only = match query.first("overdue") {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(ApiError::invalid("overdue", "overdue must be true or false")),
        };
        let bounds = |field: &str| -> Result<Option<(Millis, Millis)>, ApiError> {
            query
                .first(field)
                .map(|day| {
                    zone.bounds(day)
                        .ok_or_else(|| ApiError::invalid(field, format!("{field} must be a date, YYYY-MM-DD")))
                })
                .transpose()
        };
        let (from, to) = (bounds("from")?, bounds("to")?);
        if let (Some((from, _)), Some((_, to))) = (from, to) {
            if to <= from {
                return Err(ApiError::invalid("to", "to must not come before from"));
            }
        }
        Ok(PendingFilter {
            from_ms: from.map_or(Millis::MIN, |(start, _)| start),
            until_ms: to.map_or(Millis::MAX, |(_, end)| end),
            overdue_only,
        })
    }

    /// True when `withdrawal` is listed at `now_ms`.
    fn keeps(&self, withdrawal: &Withdrawal, now_ms: Millis) -> bool {
        let within =
            parse_rfc3339(&withdrawal.requested_at).is_some_and(|at| (self.from_ms..self.until_ms).contains(&at));
        within && (!self.overdue_only || withdrawal.is_overdue_at(now_ms))
    }

    /// True when `withdrawal` and every one after it in the queue (oldest first) are past the
    /// filter: requested after its window, or (overdue only) not overdue yet.
    fn ends_with(&self, withdrawal: &Withdrawal, now_ms: Millis) -> bool {
        let after = parse_rfc3339(&withdrawal.requested_at).is_some_and(|at| at >= self.until_ms);
        after || (self.overdue_only && !withdrawal.is_overdue_at(now_ms))
    }
}

/// `GET /ops/v1/withdrawals/pending[?overdue=&from=&to=]`: a page of the pending withdrawals,
/// each marked overdue (pending longer than
/// [`red_packets::domain::withdrawal::OVERDUE_AFTER_MS`]), those the filter keeps. The queue is
/// oldest first, so a page with one past the filter is the last: it has no next cursor. A page
/// of ones requested before `from` may be empty and carry a cursor on.
pub(super) async fn pending_withdrawals<L: OpsLedger, R, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let query = asked.query();
    let filter = PendingFilter::of(&query, asked.api.ledger.business_day())?;
    let now_ms = asked.clock.now_ms();
    let page = asked.api.ledger.pending_withdrawals(asked.page(&query)?).await?;
    let items: Vec<Value> = page
        .items
        .iter()
        .filter(|withdrawal| filter.keeps(withdrawal, now_ms))
        .map(|withdrawal| marked_overdue(withdrawal, now_ms))
        .collect();
    let ended = page.items.iter().any(|withdrawal| filter.ends_with(withdrawal, now_ms));
    let next_cursor = if ended { None } else { page.next_cursor };
    asked.answer(&json!({ "items": items, "next_cursor": next_cursor }))
}

/// `withdrawal` with whether it is overdue at `now_ms`.
fn marked_overdue(withdrawal: &Withdrawal, now_ms: Millis) -> Value {
    let mut value = json!(withdrawal);
    value["overdue"] = Value::Bool(withdrawal.is_overdue_at(now_ms));
    value
}

/// `GET /ops/v1/withdrawals/{withdrawal_id}`: one withdrawal as the ledger holds it, pending,
/// paid or failed (with the payments system's reference once resolved), and whether it is
/// overdue; 404 for an id it does not hold (a malformed one too: no withdrawal has it).
pub(super) async fn withdrawal<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let withdrawal = asked.api.ledger.withdrawal(asked.parameter("withdrawal_id")).await?.ok_or(ApiError::NotFound)?;
    asked.answer(&marked_overdue(&withdrawal, asked.clock.now_ms()))
}

/// `GET /ops/v1/adjustments/pending`: a page of the proposals waiting for a second operator.
pub(super) async fn pending_adjustments<L: OpsLedger, R, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let query = asked.query();
    asked.answer(&asked.api.ledger.pending_adjustments(asked.page(&query)?).await?)
}

/// `GET /ops/v1/adjustments/{reference}`: one adjustment, whatever its state; 404 for none.
pub(super) async fn adjustment<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let adjustment = asked.api.ledger.adjustment(asked.parameter("reference")).await?.ok_or(ApiError::NotFound)?;
    asked.answer(&adjustment)
}

/// `GET /ops/v1/packets/{packet_id}`: a packet as the ledger holds it, in the app's view with its
/// sender as the viewer (terms, grabs in grab order, best luck and refund once settled); 404 when
/// the ledger holds none.
pub(super) async fn packet<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let recorded = asked.api.ledger.ledger_packet(&asked.packet_id()?).await?.ok_or(ApiError::NotFound)?;
    asked.answer(&recorded.view(&recorded.packet.sender, asked.clock.now_ms()))
}

/// How many of the quarantined packets [`packet_sides`] looks through for one (quarantine is for
/// the few packets whose books cannot balance; settle's summary lists at most as many).
const QUARANTINE_SCANNED: usize = 1_000;

/// `GET /ops/v1/packets/{packet_id}/sides`: a packet as Redis and the ledger each hold it, side by
/// side with their differences ([`compare`]), and whether it is in quarantine; 404 when neither
/// holds it.
pub(super) async fn packet_sides<L: OpsLedger, R, S: SettleIndex>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let (id, live) = (asked.packet_id()?, asked.api.live);
    let recorded = asked.api.ledger.ledger_packet(&id).await?;
    let state = live.snapshot(&id).await?;
    if recorded.is_none() && state.is_none() {
        return Err(ApiError::NotFound);
    }
    let quarantined_at = live
        .quarantined(QUARANTINE_SCANNED)
        .await?
        .into_iter()
        .find(|(held, _)| *held == id)
        .map(|(_, at)| rfc3339(at));
    let sides = compare(recorded.as_ref(), state.as_ref());
    asked.answer(&json!({ "packet_id": id, "quarantined_at": quarantined_at, "ledger": sides.ledger,
                          "live": sides.live, "grabs": sides.grabs, "differences": sides.differences }))
}

/// `GET /ops/v1/users/{user}`: a user as an investigation opens them: their balance and a page of
/// movements (a withdrawal is a movement with its state), their hold in force if any, and whether
/// anybody by that id is on record.
pub(super) async fn user<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (ledger, user, query) = (asked.api.ledger, asked.user()?, asked.query());
    let page = Ledger::wallet(ledger, &user, asked.page(&query)?).await?;
    let hold = ledger.holds().await?.into_iter().find(|hold| hold.user == user);
    let known = !page.items.is_empty() || hold.is_some() || has_packets(ledger, &user).await?;
    asked.answer(&json!({ "user": user, "known": known, "balance_cents": page.balance_cents, "hold": hold,
                          "movements": { "items": page.items, "next_cursor": page.next_cursor } }))
}

/// `GET /ops/v1/users/{user}/movements`: a page of the user's movements, with their balance.
pub(super) async fn user_movements<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (user, query) = (asked.user()?, asked.query());
    asked.answer(&Ledger::wallet(asked.api.ledger, &user, asked.page(&query)?).await?)
}

/// `GET /ops/v1/users/{user}/packets?role=sent|received`: a page of the packets the user sent or
/// received.
pub(super) async fn user_packets<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (user, query) = (asked.user()?, asked.query());
    let role = query
        .first("role")
        .and_then(HistoryRole::parse)
        .ok_or_else(|| ApiError::invalid("role", "role must be \"sent\" or \"received\""))?;
    asked.answer(&Ledger::history(asked.api.ledger, &user, role, asked.page(&query)?).await?)
}

/// `GET /ops/v1/users/{user}/flags`: a page of the flags naming the user.
pub(super) async fn user_flags<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (user, query) = (asked.user()?, asked.query());
    asked.answer(&asked.api.ledger.flags_of_user(&user, asked.page(&query)?).await?)
}

/// `GET /ops/v1/users/{user}/audit`: a page of the audit entries concerning the user (every
/// day's, newest first).
pub(super) async fn user_audit<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let (user, query) = (asked.user()?, asked.query());
    asked.answer(&asked.api.ledger.audit_of_user(&user, asked.page(&query)?).await?)
}

/// True when `user` sent or received a packet the ledger lists (one entry of either history is
/// enough): with no movement and no hold either, nobody by that id is on record (a typo).
async fn has_packets<L: Ledger>(ledger: &L, user: &UserId) -> Result<bool, ApiError> {
    for role in [HistoryRole::Sent, HistoryRole::Received] {
        let first = PageRequest { limit: 1, cursor: None };
        if !Ledger::history(ledger, user, role, first).await?.items.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}
