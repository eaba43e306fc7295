//! The funds function's use cases, one per kind of caller: the payments system's commands,
//! operators' adjustments, the books' reports and risk operations. [`run`] routes a request to
//! its use case.

use super::*;

/// Carries out `request` on `ledger`, writing reports to `reports`: the payments system's
/// commands, operators' adjustments, the books' reports, and risk operations (holds, flags),
/// each its own use case below.
pub async fn run<L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    match request {
        FundsRequest::Topup(_)
        | FundsRequest::WithdrawalPaid(_)
        | FundsRequest::WithdrawalFailed(_)
        | FundsRequest::Withdrawal(_) => payments(ledger, clock, request).await,
        FundsRequest::ProposeAdjustment(_) | FundsRequest::ApproveAdjustment(_) | FundsRequest::CloseAdjustment(_) => {
            adjustments(ledger, clock, request).await
        }
        FundsRequest::Reconcile(_)
        | FundsRequest::TrialBalance(_)
        | FundsRequest::Statement(_)
        | FundsRequest::Audit(_) => books_reports(ledger, clock, reports, request).await,
        FundsRequest::PlaceHold(_)
        | FundsRequest::LiftHold(_)
        | FundsRequest::Holds(_)
        | FundsRequest::Flags(_)
        | FundsRequest::AssignFlag(_)
        | FundsRequest::ResolveFlag(_) => risk_operations(ledger, clock, request).await,
    }
}

/// A request routed to a use case that does not carry it out: a bug of [`run`]'s routing.
fn unreachable_request(request: &FundsRequest) -> Result<FundsResponse, FundsError> {
    Err(FundsError::Store(StoreError::Corrupt(format!("{} was routed to the wrong use case", request.key()))))
}

/// The payments system's commands: a top-up, a withdrawal paid or failed, a withdrawal looked up.
async fn payments<L: Wallets + Withdrawals>(
    ledger: &L,
    clock: &dyn Clock,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    match request {
        FundsRequest::Topup(topup) => {
            let result = ledger.top_up(topup, clock.now_ms()).await?;
            tracing::info!(user = %topup.user, amount_cents = topup.amount_cents, reference = %topup.reference, applied = result.applied, "top-up");
            Ok(FundsResponse::Topup(result))
        }
        FundsRequest::WithdrawalPaid(resolution) | FundsRequest::WithdrawalFailed(resolution) => {
            let outcome = match request {
                FundsRequest::WithdrawalFailed(_) => WithdrawalStatus::Failed,
                _ => WithdrawalStatus::Paid,
            };
            let result = ledger.resolve_withdrawal(resolution, outcome, clock.now_ms()).await?;
            tracing::info!(withdrawal_id = %resolution.withdrawal_id, reference = %resolution.reference, outcome = outcome.as_str(), applied = result.applied, "withdrawal resolved");
            Ok(FundsResponse::Withdrawal(result))
        }
        FundsRequest::Withdrawal(WithdrawalLookup { withdrawal_id }) => {
            let found = ledger.withdrawal(withdrawal_id).await?;
            Ok(FundsResponse::WithdrawalFound(
                found.ok_or_else(|| Invalid::field("withdrawal_id", "no such withdrawal"))?,
            ))
        }
        _ => unreachable_request(request),
    }
}

/// Operators' adjustments: proposed by one, approved or closed by another.
async fn adjustments<L: Adjustments>(
    ledger: &L,
    clock: &dyn Clock,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    match request {
        FundsRequest::ProposeAdjustment(proposal) => {
            let result = ledger.propose_adjustment(proposal, clock.now_ms()).await?;
            tracing::info!(reference = %proposal.reference, user = %proposal.user, proposer = %proposal.proposer, reason = %proposal.reason, applied = result.applied, "adjustment proposed");
            Ok(FundsResponse::Adjustment(result))
        }
        FundsRequest::CloseAdjustment(closing) => {
            let result = ledger.close_adjustment(closing, clock.now_ms()).await?;
            tracing::info!(reference = %closing.reference, how = ?closing.how, operator = %closing.operator, reason = %closing.reason, applied = result.applied, "adjustment closed");
            Ok(FundsResponse::Adjustment(result))
        }
        FundsRequest::ApproveAdjustment(approval) => {
            let result = ledger.approve_adjustment(approval, clock.now_ms()).await?;
            tracing::info!(reference = %approval.reference, approver = %approval.approver, applied = result.applied, "adjustment approved");
            Ok(FundsResponse::Adjustment(result))
        }
        _ => unreachable_request(request),
    }
}

/// The books' reports: reconciliation, the trial balance, a statement, the audit trail of a day.
async fn books_reports<L: Books + AuditTrail, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    match request {
        FundsRequest::Reconcile(options) => {
            let cutoff = Cutoff::from_options(options, clock.now_ms())?;
            let passes = options.passes.unwrap_or(1).clamp(1, MAX_PASSES);
            Ok(FundsResponse::Reconcile(reconcile(ledger, cutoff, passes).await?))
        }
        FundsRequest::TrialBalance(request) => {
            let now_ms = clock.now_ms();
            let days = ledger.business_day();
            let day = request.day.clone().unwrap_or_else(|| days.day_of(now_ms - DAY_MS));
            let (opening, closing) = day_cutoffs(days, &day, now_ms)?;
            let report = trial_balance(ledger, &day, opening, closing).await?;
            let key = report_key(days, &format!("trial-balance/{day}"), &day, now_ms)?;
            let written = write_report(reports, &key, report.to_json_lines(), report.to_csv()).await?;
            Ok(FundsResponse::TrialBalance { report, written })
        }
        FundsRequest::Audit(AuditDay { day }) => {
            ledger.business_day().bounds(day).ok_or_else(|| Invalid::field("day", "not a day (YYYY-MM-DD)"))?;
            Ok(FundsResponse::Audit { day: day.clone(), entries: ledger.audit_of_day(day).await? })
        }
        FundsRequest::Statement(request) => {
            // Closed or open is decided before the movements are read: a day closed then has all
            // its writes landed, and an open day's statement stops at the cut-off it is named by.
            let now_ms = clock.now_ms();
            let base = format!("statements/{}/{}", request.day, request.user);
            let key = report_key(ledger.business_day(), &base, &request.day, now_ms)?;
            let until_ms = Cutoff::latest_ms(now_ms);
            let report = statement_to(ledger, &request.user, &request.day, until_ms).await?;
            let written = write_report(reports, &key, report.to_json_lines(), report.to_csv()).await?;
            Ok(FundsResponse::Statement { report, written })
        }
        _ => unreachable_request(request),
    }
}

/// Risk operations: holds placed, lifted and listed; flags listed, assigned and resolved.
async fn risk_operations<L: Holds + Flags>(
    ledger: &L,
    clock: &dyn Clock,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    match request {
        FundsRequest::PlaceHold(hold) => {
            let result = ledger.place_hold(hold, clock.now_ms()).await?;
            tracing::info!(user = %hold.user, scope = hold.scope.as_str(), operator = %hold.operator, reason = %hold.reason, changed = result.changed, "hold placed");
            Ok(FundsResponse::Hold(result))
        }
        FundsRequest::LiftHold(lift) => {
            let result = ledger.lift_hold(lift, clock.now_ms()).await?;
            tracing::info!(user = %lift.user, operator = %lift.operator, reason = %lift.reason, changed = result.changed, "hold lifted");
            Ok(FundsResponse::Hold(result))
        }
        FundsRequest::Holds(ListHolds {}) => Ok(FundsResponse::Holds(ledger.holds().await?)),
        FundsRequest::Flags(ListFlags { status, limit, cursor }) => {
            let limit = limit.unwrap_or(20);
            if !(1..=100).contains(&limit) {
                return Err(Invalid::field("limit", "limit must be 1..=100").into());
            }
            let page = PageRequest { limit, cursor: cursor.as_deref() };
            Ok(FundsResponse::Flags(ledger.flags(status.unwrap_or(FlagStatus::Open), page).await?))
        }
        FundsRequest::AssignFlag(assignment) => {
            let result = ledger.assign_flag(assignment, clock.now_ms()).await?;
            tracing::info!(flag_id = %assignment.flag_id, assignee = %assignment.assignee, operator = %assignment.operator, changed = result.changed, "flag assigned");
            Ok(FundsResponse::FlagResolved(result))
        }
        FundsRequest::ResolveFlag(resolution) => {
            let result = ledger.resolve_flag(resolution, clock.now_ms()).await?;
            tracing::info!(flag_id = %resolution.flag_id, outcome = resolution.outcome.as_str(), operator = %resolution.operator, changed = result.changed, "flag resolved");
            Ok(FundsResponse::FlagResolved(result))
        }
        _ => unreachable_request(request),
    }
}
