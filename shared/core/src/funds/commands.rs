//! The funds function's use cases, one per kind of caller: the payments system's commands,
//! operators' adjustments, the books' reports and risk operations. [`run`] routes each request
//! to the one function that carries it out, with the request's own payload.

use super::*;

/// Carries out `request` on `ledger`, writing reports to `reports`: each command to the
/// function of its use case below.
pub async fn run<L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsError> {
    let now_ms = clock.now_ms();
    match request {
        FundsRequest::Topup(topup) => payments::top_up(ledger, topup, now_ms).await,
        FundsRequest::WithdrawalPaid(paid) => payments::resolve(ledger, paid, WithdrawalStatus::Paid, now_ms).await,
        FundsRequest::WithdrawalFailed(failed) => {
            payments::resolve(ledger, failed, WithdrawalStatus::Failed, now_ms).await
        }
        FundsRequest::Withdrawal(lookup) => payments::withdrawal(ledger, lookup).await,
        FundsRequest::ProposeAdjustment(proposal) => adjustments::propose(ledger, proposal, now_ms).await,
        FundsRequest::ApproveAdjustment(approval) => adjustments::approve(ledger, approval, now_ms).await,
        FundsRequest::CloseAdjustment(closing) => adjustments::close(ledger, closing, now_ms).await,
        FundsRequest::Reconcile(options) => books_reports::reconcile_books(ledger, options, now_ms).await,
        FundsRequest::TrialBalance(day) => books_reports::trial_balance_of(ledger, reports, day, now_ms).await,
        FundsRequest::Statement(statement) => books_reports::statement(ledger, reports, statement, now_ms).await,
        FundsRequest::Audit(day) => books_reports::audit(ledger, day).await,
        FundsRequest::PlaceHold(hold) => risk_operations::place_hold(ledger, hold, now_ms).await,
        FundsRequest::LiftHold(lift) => risk_operations::lift_hold(ledger, lift, now_ms).await,
        FundsRequest::Holds(ListHolds {}) => Ok(FundsResponse::Holds(ledger.holds().await?)),
        FundsRequest::Flags(list) => risk_operations::flags(ledger, list).await,
        FundsRequest::AssignFlag(assignment) => risk_operations::assign_flag(ledger, assignment, now_ms).await,
        FundsRequest::ResolveFlag(resolution) => risk_operations::resolve_flag(ledger, resolution, now_ms).await,
    }
}

/// The payments system's commands: a top-up, a withdrawal paid or failed, a withdrawal looked up.
mod payments {
    use super::*;

    pub(super) async fn top_up(
        ledger: &impl Wallets,
        topup: &TopUp,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.top_up(topup, now_ms).await?;
        tracing::info!(user = %topup.user, amount_cents = topup.amount_cents, reference = %topup.reference, applied = result.applied, "top-up");
        Ok(FundsResponse::Topup(result))
    }

    pub(super) async fn resolve(
        ledger: &impl Withdrawals,
        resolution: &WithdrawalResolution,
        outcome: WithdrawalStatus,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.resolve_withdrawal(resolution, outcome, now_ms).await?;
        tracing::info!(withdrawal_id = %resolution.withdrawal_id, reference = %resolution.reference, outcome = outcome.as_str(), applied = result.applied, "withdrawal resolved");
        Ok(FundsResponse::Withdrawal(result))
    }

    pub(super) async fn withdrawal(
        ledger: &impl Withdrawals,
        WithdrawalLookup { withdrawal_id }: &WithdrawalLookup,
    ) -> Result<FundsResponse, FundsError> {
        let found = ledger.withdrawal(withdrawal_id).await?;
        Ok(FundsResponse::WithdrawalFound(found.ok_or_else(|| Invalid::field("withdrawal_id", "no such withdrawal"))?))
    }
}

/// Operators' adjustments: proposed by one, approved or closed by another.
mod adjustments {
    use super::*;

    pub(super) async fn propose(
        ledger: &impl Adjustments,
        proposal: &AdjustmentProposal,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.propose_adjustment(proposal, now_ms).await?;
        tracing::info!(reference = %proposal.reference, user = %proposal.user, proposer = %proposal.proposer, reason = %proposal.reason, applied = result.applied, "adjustment proposed");
        Ok(FundsResponse::Adjustment(result))
    }

    pub(super) async fn approve(
        ledger: &impl Adjustments,
        approval: &AdjustmentApproval,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.approve_adjustment(approval, now_ms).await?;
        tracing::info!(reference = %approval.reference, approver = %approval.approver, applied = result.applied, "adjustment approved");
        Ok(FundsResponse::Adjustment(result))
    }

    pub(super) async fn close(
        ledger: &impl Adjustments,
        closing: &AdjustmentClosing,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.close_adjustment(closing, now_ms).await?;
        tracing::info!(reference = %closing.reference, how = ?closing.how, operator = %closing.operator, reason = %closing.reason, applied = result.applied, "adjustment closed");
        Ok(FundsResponse::Adjustment(result))
    }
}

/// The books' reports: reconciliation, the trial balance, a statement, the audit trail of a day.
mod books_reports {
    use super::*;

    pub(super) async fn reconcile_books(
        ledger: &impl Books,
        options: &ReconcileOptions,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let cutoff = Cutoff::from_options(options, now_ms)?;
        let passes = options.passes.unwrap_or(1).clamp(1, MAX_PASSES);
        Ok(FundsResponse::Reconcile(reconcile(ledger, cutoff, passes).await?))
    }

    pub(super) async fn trial_balance_of(
        ledger: &impl Books,
        reports: &impl ReportSink,
        request: &DayReport,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let days = ledger.business_day();
        let day = request.day.clone().unwrap_or_else(|| days.day_of(now_ms - DAY_MS));
        let (opening, closing) = day_cutoffs(days, &day, now_ms)?;
        let report = trial_balance(ledger, &day, opening, closing).await?;
        let key = report_key(days, &format!("trial-balance/{day}"), &day, now_ms)?;
        let written = write_report(reports, &key, report.to_json_lines(), report.to_csv()).await?;
        Ok(FundsResponse::TrialBalance { report, written })
    }

    /// Closed or open is decided before the movements are read: a day closed then has all its
    /// writes landed, and an open day's statement stops at the cut-off it is named by.
    pub(super) async fn statement(
        ledger: &impl Books,
        reports: &impl ReportSink,
        request: &StatementRequest,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let base = format!("statements/{}/{}", request.day, request.user);
        let key = report_key(ledger.business_day(), &base, &request.day, now_ms)?;
        let until_ms = Cutoff::latest_ms(now_ms);
        let report = statement_to(ledger, &request.user, &request.day, until_ms).await?;
        let written = write_report(reports, &key, report.to_json_lines(), report.to_csv()).await?;
        Ok(FundsResponse::Statement { report, written })
    }

    pub(super) async fn audit(
        ledger: &(impl Books + AuditTrail),
        AuditDay { day }: &AuditDay,
    ) -> Result<FundsResponse, FundsError> {
        ledger.business_day().bounds(day).ok_or_else(|| Invalid::field("day", "not a day (YYYY-MM-DD)"))?;
        Ok(FundsResponse::Audit { day: day.clone(), entries: ledger.audit_of_day(day).await? })
    }
}

/// Risk operations: holds placed and lifted; flags listed, assigned and resolved.
mod risk_operations {
    use super::*;

    pub(super) async fn place_hold(
        ledger: &impl Holds,
        hold: &HoldRequest,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.place_hold(hold, now_ms).await?;
        tracing::info!(user = %hold.user, scope = hold.scope.as_str(), operator = %hold.operator, reason = %hold.reason, changed = result.changed, "hold placed");
        Ok(FundsResponse::Hold(result))
    }

    pub(super) async fn lift_hold(
        ledger: &impl Holds,
        lift: &LiftRequest,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.lift_hold(lift, now_ms).await?;
        tracing::info!(user = %lift.user, operator = %lift.operator, reason = %lift.reason, changed = result.changed, "hold lifted");
        Ok(FundsResponse::Hold(result))
    }

    pub(super) async fn flags(
        ledger: &impl Flags,
        ListFlags { status, limit, cursor }: &ListFlags,
    ) -> Result<FundsResponse, FundsError> {
        let limit = limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            return Err(Invalid::field("limit", "limit must be 1..=100").into());
        }
        let page = PageRequest { limit, cursor: cursor.as_deref() };
        Ok(FundsResponse::Flags(ledger.flags(status.unwrap_or(FlagStatus::Open), page).await?))
    }

    pub(super) async fn assign_flag(
        ledger: &impl Flags,
        assignment: &FlagAssignment,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.assign_flag(assignment, now_ms).await?;
        tracing::info!(flag_id = %assignment.flag_id, assignee = %assignment.assignee, operator = %assignment.operator, changed = result.changed, "flag assigned");
        Ok(FundsResponse::FlagResolved(result))
    }

    pub(super) async fn resolve_flag(
        ledger: &impl Flags,
        resolution: &FlagResolution,
        now_ms: Millis,
    ) -> Result<FundsResponse, FundsError> {
        let result = ledger.resolve_flag(resolution, now_ms).await?;
        tracing::info!(flag_id = %resolution.flag_id, outcome = resolution.outcome.as_str(), operator = %resolution.operator, changed = result.changed, "flag resolved");
        Ok(FundsResponse::FlagResolved(result))
    }
}
