//! The operators' reads: a user, a packet and its two sides, statements (of a day or a period)
//! and trial balances (JSON or CSV), the audit trail of a day or a period, the pending
//! withdrawals and one withdrawal; answered here, from the ledger and the live store.

use super::*;
use red_packets::clock::{parse_rfc3339, Millis};
use red_packets::domain::day::DayRange;
use red_packets::domain::hourly::DayHours;
use red_packets::domain::BusinessDay;

/// How a report is answered: `json` (default) or `csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReportFormat {
    Json,
    Csv,
}

pub(super) fn report_format(request: &Request) -> Result<ReportFormat, ApiError> {
    match request.query_string_parameters_ref().and_then(|query| query.first("format")) {
        None | Some("json") => Ok(ReportFormat::Json),
        Some("csv") => Ok(ReportFormat::Csv),
        Some(_) => Err(ApiError::invalid("format", "format must be json or csv")),
    }
}

/// `csv` as a download named `file`.
pub(super) fn csv_response(csv: String, file: &str) -> Result<Response<Body>, ApiError> {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/csv; charset=utf-8")
        .header("content-disposition", format!("attachment; filename=\"{file}\""))
        .body(Body::Text(csv))
        .map_err(|error| ApiError::Internal(error.to_string()))
}

/// `day`'s trial balance, to the cut-offs of the daily job (the day's start and end, or the
/// latest safe one while it is not over): its CSV is byte for byte what the funds function files.
pub(super) async fn read_trial_balance<L: Books>(
    ledger: &L,
    clock: &dyn Clock,
    day: &str,
    format: ReportFormat,
) -> Result<Response<Body>, ApiError> {
    let (opening, closing) = day_cutoffs(ledger.business_day(), day, clock.now_ms())?;
    let report = trial_balance(ledger, day, opening, closing).await.map_err(FundsFailure::from)?;
    match format {
        ReportFormat::Csv => csv_response(report.to_csv(), &format!("trial-balance-{day}.csv")),
        ReportFormat::Json => Ok(json_response(StatusCode::OK, &report)),
    }
}

/// Business day `day`'s hourly view (`domain::hourly`): each hour's sends, grabs, refunds,
/// revoked grabs and withdrawals, counted from the ledger's events as the bus delivered them.
pub(super) async fn read_business_hours<L: Books + BusinessHours>(
    ledger: &L,
    day: &str,
) -> Result<Response<Body>, ApiError> {
    let zone = ledger.business_day();
    if zone.bounds(day).is_none() {
        return Err(ApiError::invalid("day", "day must be a date, YYYY-MM-DD"));
    }
    let tallies = ledger.day_tallies(day).await?;
    Ok(money_response(StatusCode::OK, &DayHours::sum(day, &zone, tallies), ledger.currency()))
}

/// `user`'s statement of the business days `days` (one, or a period of at most
/// [`red_packets::domain::day::MAX_RANGE_DAYS`]), to the latest safe cut-off: a day's is what
/// the funds function files.
pub(super) async fn read_statement<L: Books>(
    ledger: &L,
    clock: &dyn Clock,
    user: &UserId,
    days: &DayRange,
    format: ReportFormat,
) -> Result<Response<Body>, ApiError> {
    let until_ms = Cutoff::latest_ms(clock.now_ms());
    let report = statement_of_days(ledger, user, days, until_ms).await.map_err(FundsFailure::from)?;
    match format {
        ReportFormat::Csv => csv_response(report.to_csv(), &format!("statement-{}.csv", file_days(days))),
        ReportFormat::Json => Ok(json_response(StatusCode::OK, &report)),
    }
}

/// `GET /ops/v1/audit/{day}[?to=]`: the audit trail of a business day, or of each day of a
/// period in turn (one read per day, at most [`red_packets::domain::day::MAX_RANGE_DAYS`]).
pub(super) async fn read_audit<L: AuditTrail + Books + Ledger>(
    ledger: &L,
    days: &DayRange,
) -> Result<Response<Body>, ApiError> {
    let zone = ledger.business_day();
    if days.bounds(zone).is_none() {
        return Err(ApiError::invalid("day", "day must be a date, YYYY-MM-DD"));
    }
    let mut entries = Vec::new();
    for day in days.days() {
        entries.extend(ledger.audit_of_day(&day).await?);
    }
    let to = (days.last() != days.first()).then(|| days.last());
    let answer = json!({ "day": days.first(), "to": to, "entries": entries });
    Ok(money_response(StatusCode::OK, &answer, ledger_currency(ledger)))
}

/// A range's days as a file name's part: `2026-12-07`, or `2026-12-01-to-2026-12-07`.
fn file_days(days: &DayRange) -> String {
    if days.last() == days.first() {
        days.first()
    } else {
        format!("{}-to-{}", days.first(), days.last())
    }
}

/// The business days a read asks for: the path's `{day}` to the query's `to` (the day alone
/// without it).
pub(super) fn day_range(day: Option<&str>, request: &Request) -> Result<DayRange, ApiError> {
    let query = request.query_string_parameters();
    Ok(DayRange::parse(day.unwrap_or_default(), query.first("to"))?)
}

/// Which pending withdrawals a page lists: those requested within `[from_ms, until_ms)` (the
/// query's `from` and `to`, business days), and with `overdue_only` the overdue ones alone.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingFilter {
    from_ms: Millis,
    until_ms: Millis,
    overdue_only: bool,
}

impl PendingFilter {
    /// The filter the query asks for: `overdue=true|false`, `from` and `to` (`YYYY-MM-DD`, both
    /// optional, `to` not before `from`).
    pub(super) fn of(query: &QueryMap, zone: BusinessDay) -> Result<PendingFilter, ApiError> {
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

/// A page of the pending withdrawals, each marked overdue (pending longer than
/// [`red_packets::domain::withdrawal::OVERDUE_AFTER_MS`]), those `filter` keeps. The queue is
/// oldest first, so a page with one past the filter is the last: it has no next cursor. A page
/// of ones requested before `from` may be empty and carry a cursor on.
pub(super) async fn read_pending_withdrawals<L: Withdrawals + Ledger>(
    ledger: &L,
    clock: &dyn Clock,
    page: PageRequest<'_>,
    filter: PendingFilter,
) -> Result<Response<Body>, ApiError> {
    let now_ms = clock.now_ms();
    let page = ledger.pending_withdrawals(page).await?;
    let items: Vec<Value> = page
        .items
        .iter()
        .filter(|withdrawal| filter.keeps(withdrawal, now_ms))
        .map(|withdrawal| {
            let mut value = json!(withdrawal);
            value["overdue"] = Value::Bool(withdrawal.is_overdue_at(now_ms));
            value
        })
        .collect();
    let ended = page.items.iter().any(|withdrawal| filter.ends_with(withdrawal, now_ms));
    let next_cursor = if ended { None } else { page.next_cursor };
    Ok(money_response(StatusCode::OK, &json!({ "items": items, "next_cursor": next_cursor }), ledger_currency(ledger)))
}

/// `GET /ops/v1/withdrawals/{withdrawal_id}`: one withdrawal as the ledger holds it, pending,
/// paid or failed (with the payments system's reference once resolved), and whether it is
/// overdue; 404 for an id it does not hold (a malformed one too: no withdrawal has it).
pub(super) async fn read_withdrawal<L: Withdrawals + Ledger>(
    ledger: &L,
    clock: &dyn Clock,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    let withdrawal = ledger.withdrawal(id).await?.ok_or(ApiError::NotFound)?;
    let mut value = json!(withdrawal);
    value["overdue"] = Value::Bool(withdrawal.is_overdue_at(clock.now_ms()));
    Ok(money_response(StatusCode::OK, &value, ledger_currency(ledger)))
}

pub(super) fn ledger_currency<L: Ledger>(ledger: &L) -> red_packets::domain::Currency {
    Ledger::currency(ledger)
}

/// A funds answer (`{"<request's key>": {…}, "currency": …}`) as a REST answer: the request's
/// own answer, which the response's `currency` joins again.
pub(super) fn unwrapped(mut answer: Value) -> Value {
    if let Some(fields) = answer.as_object_mut() {
        fields.remove("currency");
        if fields.len() == 1 {
            if let Some((_, inner)) = fields.iter_mut().next() {
                return match inner.take() {
                    Value::Object(object) => Value::Object(object),
                    other => json!({ "items": other }),
                };
            }
        }
    }
    answer
}

/// A packet as the ledger holds it, in the app's view with its sender as the viewer (terms,
/// grabs in grab order, best luck and refund once settled); 404 when the ledger holds none.
pub(super) async fn read_packet<L: Ledger>(
    ledger: &L,
    clock: &dyn Clock,
    id: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let id = id.and_then(PacketId::parse).ok_or(ApiError::NotFound)?;
    let recorded = ledger.ledger_packet(&id).await?.ok_or(ApiError::NotFound)?;
    let view = recorded.view(&recorded.packet.sender, clock.now_ms());
    Ok(money_response(StatusCode::OK, &view, ledger_currency(ledger)))
}

/// How many of the quarantined packets [`read_sides`] looks through for one (quarantine is for
/// the few packets whose books cannot balance; settle's summary lists at most as many).
pub(super) const QUARANTINE_SCANNED: usize = 1_000;

/// A packet as Redis and the ledger each hold it, side by side with their differences
/// ([`compare`]), and whether it is in quarantine; 404 when neither holds it.
pub(super) async fn read_sides<L: Ledger, S: SettleIndex>(
    ledger: &L,
    live: &S,
    id: &PacketId,
) -> Result<Response<Body>, ApiError> {
    let recorded = ledger.ledger_packet(id).await?;
    let state = live.snapshot(id).await?;
    if recorded.is_none() && state.is_none() {
        return Err(ApiError::NotFound);
    }
    let quarantined_at =
        live.quarantined(QUARANTINE_SCANNED).await?.into_iter().find(|(held, _)| held == id).map(|(_, at)| rfc3339(at));
    let sides = compare(recorded.as_ref(), state.as_ref());
    let answer = json!({ "packet_id": id, "quarantined_at": quarantined_at, "ledger": sides.ledger, "live": sides.live,
                         "grabs": sides.grabs, "differences": sides.differences });
    Ok(money_response(StatusCode::OK, &answer, ledger_currency(ledger)))
}

/// A user as an investigation reads them: their balance and a page of movements (`…/movements`
/// pages on; a withdrawal is a movement with its state), their hold in force if any, or a page
/// of the packets they sent or received, of the flags naming them, or of the audit entries
/// concerning them (every day's, newest first).
pub(super) async fn read_user<L: Ledger + Wallets + Holds + Flags + AuditTrail>(
    ledger: &L,
    key: &str,
    user: UserId,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let query = request.query_string_parameters();
    let asked = PageRequest { limit: page_limit(request)?, cursor: query.first("cursor") };
    let currency = ledger_currency(ledger);
    if key.ends_with("/flags") {
        return Ok(money_response(StatusCode::OK, &ledger.flags_of_user(&user, asked).await?, currency));
    }
    if key.ends_with("/audit") {
        return Ok(money_response(StatusCode::OK, &ledger.audit_of_user(&user, asked).await?, currency));
    }
    if key.ends_with("/packets") {
        let role = query
            .first("role")
            .and_then(HistoryRole::parse)
            .ok_or_else(|| ApiError::invalid("role", "role must be \"sent\" or \"received\""))?;
        let page = Ledger::history(ledger, &user, role, asked).await?;
        return Ok(money_response(StatusCode::OK, &page, currency));
    }
    let page = Ledger::wallet(ledger, &user, asked).await?;
    if key.ends_with("/movements") {
        return Ok(money_response(StatusCode::OK, &page, currency));
    }
    let hold = ledger.holds().await?.into_iter().find(|hold| hold.user == user);
    let known = !page.items.is_empty() || hold.is_some() || has_packets(ledger, &user).await?;
    let overview = json!({ "user": user, "known": known, "balance_cents": page.balance_cents, "hold": hold,
                           "movements": { "items": page.items, "next_cursor": page.next_cursor } });
    Ok(money_response(StatusCode::OK, &overview, currency))
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
