//! The operators' commands: each route that changes money, a hold or a flag becomes the funds
//! payload the operators' entry point takes, with the signed-in operator as its proposer,
//! approver or operator (a body never names the operator).

use super::*;

/// The funds payload of command `action` on the route's `parameter`, by operator `me`.
pub(super) fn command_payload(
    action: OpsAction,
    parameter: Option<String>,
    request: &Request,
    query: &QueryMap,
    me: Value,
) -> Result<Value, ApiError> {
    Ok(match action {
        OpsAction::ListHolds => json!({ "holds": {} }),
        OpsAction::PlaceHold => {
            let body: HoldBody = parse_json(json_body(request)?)?;
            let user = user_of(parameter)?;
            json!({ "place_hold": { "user": user, "scope": body.scope, "reason": body.reason,
                                    "expires_at": body.expires_at, "operator": me } })
        }
        OpsAction::LiftHold => {
            let body: ReasonBody = parse_json(json_body(request)?)?;
            json!({ "lift_hold": { "user": user_of(parameter)?, "reason": body.reason, "operator": me } })
        }
        OpsAction::ProposeAdjustment => {
            let bytes = json_body(request)?;
            let fields: serde_json::Map<String, Value> = parse_json(bytes)?;
            if fields.contains_key("proposer") {
                return Err(ApiError::invalid("proposer", "the proposer is the signed-in operator, never the body's"));
            }
            let body: AdjustmentBody = parse_json(bytes)?;
            let mut proposal = serde_json::to_value(body).map_err(|error| ApiError::Internal(error.to_string()))?;
            proposal["proposer"] = me;
            json!({ "propose_adjustment": proposal })
        }
        OpsAction::ApproveAdjustment => {
            json!({ "approve_adjustment": { "reference": parameter.unwrap_or_default(), "approver": me } })
        }
        OpsAction::RejectAdjustment | OpsAction::WithdrawAdjustment => {
            let body: ReasonBody = parse_json(json_body(request)?)?;
            let how = if action == OpsAction::RejectAdjustment { "reject" } else { "withdraw" };
            json!({ "close_adjustment": { "reference": parameter.unwrap_or_default(), "how": how,
                                          "operator": me, "reason": body.reason } })
        }
        OpsAction::ListFlags => {
            let limit = page_limit(request)?;
            json!({ "flags": { "status": query.first("status"), "limit": limit, "cursor": query.first("cursor") } })
        }
        OpsAction::AssignFlag => {
            let body: AssignBody = parse_json(json_body(request)?)?;
            let assignee = body.assignee.map(Value::String).unwrap_or_else(|| me.clone());
            json!({ "assign_flag": { "flag_id": parameter.unwrap_or_default(), "assignee": assignee, "operator": me } })
        }
        OpsAction::ResolveFlag => {
            let body: ResolutionBody = parse_json(json_body(request)?)?;
            json!({ "resolve_flag": { "flag_id": parameter.unwrap_or_default(), "outcome": body.outcome,
                                      "note": body.note, "operator": me } })
        }
        OpsAction::ReadAudit
        | OpsAction::ReadUser
        | OpsAction::ReadPacket
        | OpsAction::ReleasePacket
        | OpsAction::ReadStatement
        | OpsAction::ReadTrialBalance
        | OpsAction::ReadBusinessHours
        | OpsAction::Reconcile
        | OpsAction::ListPendingAdjustments
        | OpsAction::ListPendingWithdrawals
        | OpsAction::ReadWithdrawal
        | OpsAction::ReadAdjustment
        | OpsAction::ResendWithdrawal => return Err(ApiError::NotFound),
    })
}
