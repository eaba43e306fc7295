//! The operators' commands: each route that changes money, a hold or a flag builds the typed
//! funds request it is, with the signed-in operator as its proposer, approver or operator (a body
//! never names the operator), and carries it out ([`crate::handler::carry_out`]); a release, a
//! resend and an on-demand reconciliation call their use case directly.

use red_packets::domain::adjustment::{AdjustmentApproval, AdjustmentClosing, AdjustmentProposal, Closing, Direction};
use red_packets::domain::audit::Attribution;
use red_packets::domain::flags::{FlagAssignment, FlagResolution, FlagStatus, ListFlags};
use red_packets::domain::risk::{HoldRequest, HoldScope, LiftRequest};
use red_packets::domain::Cents;
use red_packets::funds::{FundsRequest, FundsResponse, ListHolds, ReconcileOptions};
use red_packets::settle::release_packets;
use serde::Deserialize;

use super::*;
use crate::handler::carry_out;

/// A hold placed through the API: its scope, why, and until when.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HoldBody {
    scope: HoldScope,
    reason: String,
    #[serde(default)]
    expires_at: Option<String>,
}

/// An adjustment proposed through the API: all of it but its proposer, the signed-in operator.
/// Typed here, so a field the books could not read (a user no token can be) is refused naming it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdjustmentBody {
    reference: String,
    user: UserId,
    direction: Direction,
    amount_cents: Cents,
    reason: String,
    #[serde(default)]
    chargeback_of: Option<String>,
}

/// Why: a hold lifted, a proposal rejected or withdrawn, a packet released, an order resent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    reason: String,
}

/// Whom a flag is assigned to (default: the signed-in operator).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AssignBody {
    #[serde(default)]
    assignee: Option<String>,
}

/// A flag's resolution: its outcome and a note.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolutionBody {
    outcome: FlagStatus,
    note: String,
}

impl<L: OpsLedger, R: ReportSink, S> Asked<'_, L, R, S> {
    /// Carries out `request` and answers its own answer: the object under the funds answer's
    /// key (a list as `items`), with the currency beside it.
    async fn carry_out(&self, request: FundsRequest) -> Result<Response<Body>, ApiError> {
        let response = carry_out(self.api.ledger, self.clock, self.api.reports, &request).await?;
        self.answer(&own_answer(&response)?)
    }
}

/// A funds response's own answer: `{"hold": {…}}` answers `{…}`, `{"holds": […]}` `{"items": […]}`.
fn own_answer(response: &FundsResponse) -> Result<Value, ApiError> {
    let wrapped = serde_json::to_value(response).map_err(|error| ApiError::Internal(error.to_string()))?;
    let Value::Object(fields) = wrapped else { return Ok(wrapped) };
    Ok(match fields.into_iter().next() {
        Some((_, Value::Object(answer))) => Value::Object(answer),
        Some((_, items)) => json!({ "items": items }),
        None => Value::Null,
    })
}

/// `POST /ops/v1/reconciliations`: the daily reconciliation's check, now.
pub(super) async fn reconcile_now<L: OpsLedger, R, S>(asked: &Asked<'_, L, R, S>) -> Result<Response<Body>, ApiError> {
    let options: ReconcileOptions = asked.body()?;
    let cutoff = Cutoff::from_options(&options, asked.clock.now_ms())?;
    let reconciliation = reconcile(asked.api.ledger, cutoff, 1).await.map_err(FundsFailure::from)?;
    asked.answer(&reconciliation)
}

/// `POST /ops/v1/packets/{packet_id}/release`: a packet out of quarantine, for settle to take.
pub(super) async fn release_packet<L: OpsLedger, R, S: SettleIndex>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let id = asked.packet_id()?;
    let body: ReasonBody = asked.body()?;
    let by = Attribution { operator: asked.me(), reason: body.reason };
    by.validate()?;
    let released =
        release_packets(asked.api.live, asked.api.ledger, asked.clock, std::slice::from_ref(&id), &by).await?;
    tracing::info!(packet_id = %id, operator = %by.operator, reason = %by.reason, released, "packet released");
    Ok(json_response(StatusCode::OK, &json!({ "packet_id": id, "released": released == 1 })))
}

/// `POST /ops/v1/withdrawals/{withdrawal_id}/resend`: an overdue withdrawal's order sent again.
pub(super) async fn resend_withdrawal<L: OpsLedger, R, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let body: ReasonBody = asked.body()?;
    let by = Attribution { operator: asked.me(), reason: body.reason };
    let id = asked.parameter("withdrawal_id");
    let resent = asked.api.ledger.resend_withdrawal(id, &by, asked.clock.now_ms()).await?;
    tracing::info!(withdrawal_id = %id, operator = %by.operator, changed = resent.changed, "withdrawal resent");
    asked.answer(&json!({ "changed": resent.changed, "withdrawal": resent.withdrawal }))
}

/// `GET /ops/v1/holds`: the holds in force.
pub(super) async fn holds<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    asked.carry_out(FundsRequest::Holds(ListHolds {})).await
}

/// `POST /ops/v1/users/{user}/hold`: a hold placed or replaced.
pub(super) async fn place_hold<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let HoldBody { scope, reason, expires_at } = asked.body()?;
    let hold = HoldRequest { user: asked.user()?, scope, operator: asked.me(), reason, expires_at };
    asked.carry_out(FundsRequest::PlaceHold(hold)).await
}

/// `POST /ops/v1/users/{user}/hold/lift`: a hold lifted.
pub(super) async fn lift_hold<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let ReasonBody { reason } = asked.body()?;
    asked.carry_out(FundsRequest::LiftHold(LiftRequest { user: asked.user()?, operator: asked.me(), reason })).await
}

/// `POST /ops/v1/adjustments`: an adjustment proposed by the signed-in operator.
pub(super) async fn propose_adjustment<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let fields: serde_json::Map<String, Value> = asked.body()?;
    if fields.contains_key("proposer") {
        return Err(ApiError::invalid("proposer", "the proposer is the signed-in operator, never the body's"));
    }
    let AdjustmentBody { reference, user, direction, amount_cents, reason, chargeback_of } = asked.body()?;
    let proposal =
        AdjustmentProposal { reference, user, direction, amount_cents, reason, proposer: asked.me(), chargeback_of };
    asked.carry_out(FundsRequest::ProposeAdjustment(proposal)).await
}

/// `POST /ops/v1/adjustments/{reference}/approve`: another operator's proposal applied.
pub(super) async fn approve_adjustment<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let approval = AdjustmentApproval { reference: asked.parameter("reference").to_owned(), approver: asked.me() };
    asked.carry_out(FundsRequest::ApproveAdjustment(approval)).await
}

/// `POST /ops/v1/adjustments/{reference}/reject` and `…/withdraw`: a proposal closed, `how`.
pub(super) async fn close_adjustment<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
    how: Closing,
) -> Result<Response<Body>, ApiError> {
    let ReasonBody { reason } = asked.body()?;
    let reference = asked.parameter("reference").to_owned();
    let closing = AdjustmentClosing { reference, how, operator: asked.me(), reason };
    asked.carry_out(FundsRequest::CloseAdjustment(closing)).await
}

/// `GET /ops/v1/flags[?status=&limit=&cursor=]`: a page of the flags of one status.
pub(super) async fn flags<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let query = asked.query();
    let status = query
        .first("status")
        .map(|status| {
            serde_json::from_value(Value::String(status.to_owned()))
                .map_err(|_| ApiError::invalid("status", "status must be open, confirmed or dismissed"))
        })
        .transpose()?;
    let page = asked.page(&query)?;
    let list = ListFlags { status, limit: Some(page.limit), cursor: page.cursor.map(str::to_owned) };
    asked.carry_out(FundsRequest::Flags(list)).await
}

/// `POST /ops/v1/flags/{flag_id}/assign`: an open flag assigned (to the operator by default).
pub(super) async fn assign_flag<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let AssignBody { assignee } = asked.body()?;
    let flag_id = asked.parameter("flag_id").to_owned();
    let assignment = FlagAssignment { flag_id, assignee: assignee.unwrap_or_else(|| asked.me()), operator: asked.me() };
    asked.carry_out(FundsRequest::AssignFlag(assignment)).await
}

/// `POST /ops/v1/flags/{flag_id}/resolve`: a flag confirmed or dismissed, once.
pub(super) async fn resolve_flag<L: OpsLedger, R: ReportSink, S>(
    asked: &Asked<'_, L, R, S>,
) -> Result<Response<Body>, ApiError> {
    let ResolutionBody { outcome, note } = asked.body()?;
    let flag_id = asked.parameter("flag_id").to_owned();
    asked.carry_out(FundsRequest::ResolveFlag(FlagResolution { flag_id, outcome, operator: asked.me(), note })).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets::domain::risk::HoldResult;

    #[test]
    fn a_funds_answer_becomes_its_inner_object() {
        let held = FundsResponse::Hold(HoldResult { changed: true, hold: None });
        assert_eq!(own_answer(&held).unwrap(), json!({ "changed": true, "hold": null }));
        assert_eq!(own_answer(&FundsResponse::Holds(Vec::new())).unwrap(), json!({ "items": [] }));
    }
}
