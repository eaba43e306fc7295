//! The operators' entry point (`OperatorFunction`), behind its function URL with `AWS_IAM`: a
//! request is SigV4-signed by the operator's own AWS identity, which Lambda authenticates and
//! hands over in the request context (`requestContext.authorizer.iam.userArn`). That identity,
//! never a name in the body, is the proposer of an adjustment and its approver, so the
//! four-eyes rule holds between two authenticated people: one identity cannot approve what it
//! proposed, whatever it writes. The signer is likewise the operator of a hold placed or lifted
//! and of a risk flag resolved.
//! The body is a funds payload this entry point takes (`propose_adjustment`,
//! `approve_adjustment`, `place_hold`, `lift_hold`, `holds`, `flags`, `resolve_flag`, `audit`); a body naming another
//! operator than the signer is refused.

use lambda_http::http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Error, Request, RequestExt, Response};
use lambda_runtime::{Context, LambdaEvent};
use red_packets::domain::validate::parse_json;
use red_packets::domain::Invalid;
use red_packets::funds::FundsEntry;
use red_packets::http::{json_body, json_response, respond};
use red_packets::ports::{
    Adjustments, AuditTrail, Books, BusinessHours, Flags, Holds, Ledger, ReportSink, SettleIndex, Wallets, Withdrawals,
};
use red_packets::{ApiError, Clock};
use serde_json::Value;

use crate::handler::handle;
use crate::ops_api::OpsApi;

/// The signed caller of a function URL request: its IAM ARN (a user, or an assumed role's
/// session, `arn:aws:sts::<account>:assumed-role/<role>/<session>`).
pub fn signer(request: &Request) -> Result<String, ApiError> {
    let arn = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context
            .authorizer
            .as_ref()
            .and_then(|authorizer| authorizer.iam.as_ref())
            .and_then(|iam| iam.user_arn.clone()),
        _ => None,
    };
    arn.filter(|arn| !arn.is_empty()).ok_or(ApiError::Unauthorized(
        "a SigV4-signed caller is required: call the operators' function URL (AWS_IAM) with your own credentials",
    ))
}

/// `payload` with its operator field (`proposer` of a proposal, `approver` of an approval) set to
/// the signer: refused when the body names somebody else.
pub fn signed_by(mut payload: Value, signer: &str) -> Result<Value, Invalid> {
    let operator_fields = [
        ("propose_adjustment", "proposer"),
        ("approve_adjustment", "approver"),
        ("place_hold", "operator"),
        ("lift_hold", "operator"),
        ("resolve_flag", "operator"),
    ];
    for (key, field) in operator_fields {
        let Some(request) = payload.get_mut(key).and_then(Value::as_object_mut) else { continue };
        if let Some(named) = request.get(field).and_then(Value::as_str).filter(|named| *named != signer) {
            let what = format!("{named} is not the signed caller ({signer}): a request cannot name another operator");
            return Err(Invalid::field(field, what));
        }
        request.insert(field.into(), Value::String(signer.to_owned()));
    }
    Ok(payload)
}

/// The operator binary's handler: a request under `/ops/v1` is the operators' REST API (API
/// Gateway's routes behind the operators' JWT authorizer, [`crate::ops_api`]); any other is the
/// signed function URL's, for automation signing with its own AWS identity.
pub async fn handle_request<L, R, S>(
    api: &OpsApi<'_, L, R, S>,
    clock: &dyn Clock,
    request: Request,
) -> Result<Response<Body>, Error>
where
    L: Ledger + Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags + BusinessHours,
    R: ReportSink,
    S: SettleIndex,
{
    if crate::ops_api::is_ops_request(&request) {
        return Ok(crate::ops_api::handle_api(api, clock, &request).await);
    }
    handle_url(api.ledger, clock, api.reports, request).await
}

/// The Lambda handler of the operators' function URL: 200 with the funds answer, 400 naming
/// the field at fault (an approval by its proposer among them), 401 without a signed caller,
/// 503 when the ledger cannot be reached.
pub async fn handle_url<L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: Request,
) -> Result<Response<Body>, Error> {
    Ok(respond(answer(ledger, clock, reports, &request).await))
}

async fn answer<L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let signer = signer(request)?;
    let payload: Value = parse_json(json_body(request)?)?;
    let payload = signed_by(payload, &signer)?;
    let event = LambdaEvent::new(payload, Context::default());
    let answer = handle(ledger, clock, reports, FundsEntry::Operator, event).await?;
    Ok(json_response(StatusCode::OK, &answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_signer_is_the_operator_and_a_body_cannot_name_another() {
        let anna = "arn:aws:sts::123456789012:assumed-role/operators/anna";
        let proposal = json!({ "propose_adjustment": { "reference": "c", "amount_cents": 1 } });
        assert_eq!(signed_by(proposal, anna).unwrap()["propose_adjustment"]["proposer"], anna);
        let approval = json!({ "approve_adjustment": { "reference": "c", "approver": anna } });
        assert_eq!(signed_by(approval, anna).unwrap()["approve_adjustment"]["approver"], anna);
        let forged = json!({ "approve_adjustment": { "reference": "c", "approver": "ben" } });
        assert_eq!(signed_by(forged, anna).unwrap_err().field.as_deref(), Some("approver"));
        let hold = json!({ "place_hold": { "user": "m", "scope": "grab", "reason": "bot" } });
        assert_eq!(signed_by(hold, anna).unwrap()["place_hold"]["operator"], anna);
        let forged = json!({ "lift_hold": { "user": "m", "operator": "ben", "reason": "ok" } });
        assert_eq!(signed_by(forged, anna).unwrap_err().field.as_deref(), Some("operator"));
        let audit = json!({ "audit": { "day": "2026-11-25" } });
        assert_eq!(signed_by(audit.clone(), anna).unwrap(), audit, "nothing to sign");
    }
}
