//! The operators' REST API (`/ops/v1/…`, openapi.yaml's `operators` tag), served by the operator
//! binary behind API Gateway's second JWT authorizer: the operators' identity provider (the
//! company's single sign-on, or the operators' pool the stack creates), never the app users'.
//!
//! The operator is the token's verified subject, with the roles its roles claim holds
//! (`OPERATOR_ROLES_CLAIM`); each route is one [`OpsAction`], refused 403 `forbidden` naming the
//! roles it needs before anything is read. A request that changes money or a hold becomes the
//! funds payload the operators' entry point takes, with the subject as its proposer, approver or
//! operator: a body never names the operator, so the four-eyes rule compares two identities the
//! provider verified, and the audit trail records them.

use lambda_http::aws_lambda_events::query_map::QueryMap;
use lambda_http::http::{Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::{Context, LambdaEvent};
use red_packets::clock::rfc3339;
use red_packets::domain::audit::Attribution;
use red_packets::domain::history::Role as HistoryRole;
use red_packets::domain::operators::{Operator, OpsAction};
use red_packets::domain::risk::HoldScope;
use red_packets::domain::sides::compare;
use red_packets::domain::validate::parse_json;
use red_packets::domain::withdrawal::Withdrawal;
use red_packets::domain::{PacketId, UserId};
use red_packets::funds::{
    day_cutoffs, reconcile, statement_of_days, trial_balance, Cutoff, FundsEntry, ReconcileOptions,
};
use red_packets::http::{json_body, json_response, money_response, page_limit, respond};
use red_packets::ports::{
    Adjustments, AuditTrail, Books, BusinessHours, Flags, Holds, Ledger, PageRequest, ReportSink, SettleIndex, Wallets,
    Withdrawals,
};
use red_packets::settle::release_packets;
use red_packets::{ApiError, Clock};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::handler::{handle, FundsFailure};

mod commands;
mod reads;

use commands::command_payload;
use reads::*;

/// The prefix of every route of the operators' API.
pub const PREFIX: &str = "/ops/v1";

/// The operators' API's routes, as API Gateway's route keys name them, each with its action.
pub const ROUTES: &[(&str, OpsAction)] = &[
    ("GET /ops/v1/users/{user}", OpsAction::ReadUser),
    ("GET /ops/v1/users/{user}/movements", OpsAction::ReadUser),
    ("GET /ops/v1/users/{user}/packets", OpsAction::ReadUser),
    ("GET /ops/v1/users/{user}/flags", OpsAction::ReadUser),
    ("GET /ops/v1/users/{user}/audit", OpsAction::ReadUser),
    ("POST /ops/v1/users/{user}/hold", OpsAction::PlaceHold),
    ("POST /ops/v1/users/{user}/hold/lift", OpsAction::LiftHold),
    ("GET /ops/v1/packets/{packet_id}", OpsAction::ReadPacket),
    ("GET /ops/v1/packets/{packet_id}/sides", OpsAction::ReadPacket),
    ("POST /ops/v1/packets/{packet_id}/release", OpsAction::ReleasePacket),
    ("GET /ops/v1/holds", OpsAction::ListHolds),
    ("GET /ops/v1/users/{user}/statements/{day}", OpsAction::ReadStatement),
    ("POST /ops/v1/adjustments", OpsAction::ProposeAdjustment),
    ("GET /ops/v1/adjustments/pending", OpsAction::ListPendingAdjustments),
    ("GET /ops/v1/adjustments/{reference}", OpsAction::ReadAdjustment),
    ("POST /ops/v1/adjustments/{reference}/approve", OpsAction::ApproveAdjustment),
    ("POST /ops/v1/adjustments/{reference}/reject", OpsAction::RejectAdjustment),
    ("POST /ops/v1/adjustments/{reference}/withdraw", OpsAction::WithdrawAdjustment),
    ("GET /ops/v1/withdrawals/pending", OpsAction::ListPendingWithdrawals),
    ("GET /ops/v1/withdrawals/{withdrawal_id}", OpsAction::ReadWithdrawal),
    ("POST /ops/v1/withdrawals/{withdrawal_id}/resend", OpsAction::ResendWithdrawal),
    ("GET /ops/v1/flags", OpsAction::ListFlags),
    ("POST /ops/v1/flags/{flag_id}/assign", OpsAction::AssignFlag),
    ("POST /ops/v1/flags/{flag_id}/resolve", OpsAction::ResolveFlag),
    ("GET /ops/v1/audit/{day}", OpsAction::ReadAudit),
    ("GET /ops/v1/reports/trial-balance/{day}", OpsAction::ReadTrialBalance),
    ("GET /ops/v1/reports/hours/{day}", OpsAction::ReadBusinessHours),
    ("POST /ops/v1/reconciliations", OpsAction::Reconcile),
];

/// The route key of `method` and `path` (`GET /ops/v1/users/{user}`), as API Gateway matches it;
/// `None` for a path it has no route for.
pub fn route_key(method: &Method, path: &str) -> Option<&'static str> {
    route(method, path).map(|matched| matched.key)
}

/// Whether `request` is for the operators' API (its path is under [`PREFIX`]).
pub fn is_ops_request(request: &Request) -> bool {
    request.uri().path().starts_with(PREFIX)
}

/// The operator of a request the operators' authorizer let through: its `sub` and roles.
pub fn operator(request: &Request, roles_claim: &str) -> Result<Operator, ApiError> {
    let claims = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => {
            context.authorizer.as_ref().and_then(|authorizer| authorizer.jwt.as_ref()).map(|jwt| &jwt.claims)
        }
        _ => None,
    };
    let claims = claims.ok_or(ApiError::Unauthorized("an operator's verified token is required"))?;
    let subject = claims.get("sub").ok_or(ApiError::Unauthorized("the operator's token has no sub claim"))?;
    Operator::from_claims(subject, claims.get(roles_claim).map(String::as_str))
        .ok_or(ApiError::Unauthorized("the operator's sub claim is not a usable operator name"))
}

/// A route matched: its action and its path parameters in path order (the user, reference,
/// flag or day).
struct Matched<'a> {
    action: OpsAction,
    key: &'a str,
    parameters: Vec<String>,
}

impl Matched<'_> {
    /// The first path parameter.
    fn parameter(&self) -> Option<String> {
        self.parameters.first().cloned()
    }
}

/// The route of `method` and `path`, or `None` (API Gateway answers 404 for those itself).
fn route(method: &Method, path: &str) -> Option<Matched<'static>> {
    let asked: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTES.iter().find_map(|(key, action)| {
        let (route_method, template) = key.split_once(' ')?;
        if route_method != method.as_str() {
            return None;
        }
        let parts: Vec<&str> = template.split('/').collect();
        if parts.len() != asked.len() {
            return None;
        }
        let mut parameters = Vec::new();
        for (part, given) in parts.iter().zip(&asked) {
            if part.starts_with('{') {
                parameters.push(percent_decoded(given));
            } else if part != given {
                return None;
            }
        }
        Some(Matched { action: *action, key, parameters })
    })
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |offset: usize| bytes.get(at + offset).and_then(|b| (*b as char).to_digit(16));
        match (bytes[at], hex(1), hex(2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn user_of(parameter: Option<String>) -> Result<UserId, ApiError> {
    parameter.as_deref().and_then(UserId::from_claim).ok_or_else(|| ApiError::invalid("user", "not a user id"))
}

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
#[derive(Debug, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdjustmentBody {
    reference: String,
    user: UserId,
    direction: red_packets::domain::adjustment::Direction,
    amount_cents: red_packets::domain::Cents,
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chargeback_of: Option<String>,
}

/// Why a hold is lifted.
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
    outcome: String,
    note: String,
}

/// What the operators' API works on: the ledger, the live store (a packet's Redis side and its
/// quarantine), where reports go, and the claim that holds an operator's roles.
pub struct OpsApi<'a, L, R, S> {
    /// The ledger.
    pub ledger: &'a L,
    /// The live store.
    pub live: &'a S,
    /// Where the funds payloads' reports go (the API itself files none).
    pub reports: &'a R,
    /// `OPERATOR_ROLES_CLAIM`.
    pub roles_claim: &'a str,
}

/// The Lambda handler of the operators' API: every outcome an HTTP response in the API's two
/// error shapes.
pub async fn handle_api<L, R, S>(api: &OpsApi<'_, L, R, S>, clock: &dyn Clock, request: &Request) -> Response<Body>
where
    L: Ledger + Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags + BusinessHours,
    R: ReportSink,
    S: SettleIndex,
{
    respond(answer(api, clock, request).await)
}

async fn answer<L, R, S>(
    api: &OpsApi<'_, L, R, S>,
    clock: &dyn Clock,
    request: &Request,
) -> Result<Response<Body>, ApiError>
where
    L: Ledger + Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags + BusinessHours,
    R: ReportSink,
    S: SettleIndex,
{
    let (ledger, reports) = (api.ledger, api.reports);
    let operator = operator(request, api.roles_claim)?;
    let matched = route(request.method(), request.uri().path()).ok_or(ApiError::NotFound)?;
    let (action, key, parameter) = (matched.action, matched.key, matched.parameter());
    if !operator.may(action) {
        return Err(ApiError::RoleRequired(action.roles().iter().map(|role| role.as_str()).collect()));
    }
    tracing::info!(route = key, operator = operator.subject, "operators' API");
    let me = Value::String(operator.subject.clone());
    let query = request.query_string_parameters();
    let payload = match action {
        OpsAction::ReadUser => return read_user(ledger, key, user_of(parameter)?, request).await,
        OpsAction::ReadPacket if key.ends_with("/sides") => {
            let id = parameter.as_deref().and_then(PacketId::parse).ok_or(ApiError::NotFound)?;
            return read_sides(ledger, api.live, &id).await;
        }
        OpsAction::ReadPacket => return read_packet(ledger, clock, parameter.as_deref()).await,
        OpsAction::ReleasePacket => {
            let id = parameter.as_deref().and_then(PacketId::parse).ok_or(ApiError::NotFound)?;
            let body: ReasonBody = parse_json(json_body(request)?)?;
            let by = Attribution { operator: operator.subject.clone(), reason: body.reason };
            by.validate()?;
            let released = release_packets(api.live, ledger, clock, std::slice::from_ref(&id), &by).await?;
            tracing::info!(packet_id = %id, operator = %by.operator, reason = %by.reason, released, "packet released");
            return Ok(json_response(StatusCode::OK, &json!({ "packet_id": id, "released": released == 1 })));
        }
        OpsAction::ReadStatement => {
            let days = day_range(matched.parameters.get(1).map(String::as_str), request)?;
            return read_statement(ledger, clock, &user_of(parameter)?, &days, report_format(request)?).await;
        }
        OpsAction::ReadAudit => return read_audit(ledger, &day_range(parameter.as_deref(), request)?).await,
        OpsAction::ReadTrialBalance => {
            return read_trial_balance(ledger, clock, &parameter.unwrap_or_default(), report_format(request)?).await
        }
        OpsAction::ReadBusinessHours => return read_business_hours(ledger, &parameter.unwrap_or_default()).await,
        OpsAction::Reconcile => {
            let options: ReconcileOptions = parse_json(json_body(request)?)?;
            let cutoff = Cutoff::from_options(&options, clock.now_ms())?;
            let reconciliation = reconcile(ledger, cutoff, 1).await.map_err(FundsFailure::from)?;
            return Ok(money_response(StatusCode::OK, &reconciliation, ledger_currency(ledger)));
        }
        OpsAction::ListPendingAdjustments => {
            let page = ledger.pending_adjustments(page_request(request, &query)?).await?;
            return Ok(money_response(StatusCode::OK, &page, ledger_currency(ledger)));
        }
        OpsAction::ListPendingWithdrawals => {
            let filter = PendingFilter::of(&query, ledger.business_day())?;
            return read_pending_withdrawals(ledger, clock, page_request(request, &query)?, filter).await;
        }
        OpsAction::ReadWithdrawal => return read_withdrawal(ledger, clock, &parameter.unwrap_or_default()).await,
        OpsAction::ResendWithdrawal => {
            let body: ReasonBody = parse_json(json_body(request)?)?;
            let by = Attribution { operator: operator.subject.clone(), reason: body.reason };
            let id = parameter.unwrap_or_default();
            let resent = ledger.resend_withdrawal(&id, &by, clock.now_ms()).await?;
            tracing::info!(withdrawal_id = %id, operator = %by.operator, changed = resent.changed, "withdrawal resent");
            let answer = json!({ "changed": resent.changed, "withdrawal": resent.withdrawal });
            return Ok(money_response(StatusCode::OK, &answer, ledger_currency(ledger)));
        }
        OpsAction::ReadAdjustment => {
            let adjustment = ledger.adjustment(&parameter.unwrap_or_default()).await?.ok_or(ApiError::NotFound)?;
            return Ok(money_response(StatusCode::OK, &adjustment, ledger_currency(ledger)));
        }
        _ => command_payload(action, parameter, request, &query, me)?,
    };
    let event = LambdaEvent::new(payload, Context::default());
    let answer = handle(ledger, clock, reports, FundsEntry::Operator, event).await?;
    let value = serde_json::to_value(&answer).map_err(|error| ApiError::Internal(error.to_string()))?;
    Ok(money_response(StatusCode::OK, &unwrapped(value), ledger_currency(ledger)))
}

/// A page's limit and cursor from the query string.
fn page_request<'a>(request: &Request, query: &'a QueryMap) -> Result<PageRequest<'a>, ApiError> {
    Ok(PageRequest { limit: page_limit(request)?, cursor: query.first("cursor") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_matched_with_its_parameter() {
        let matched = route(&Method::GET, "/ops/v1/users/alice").unwrap();
        assert_eq!((matched.action, matched.parameter().as_deref()), (OpsAction::ReadUser, Some("alice")));
        let matched = route(&Method::POST, "/ops/v1/adjustments/case%2017/approve").unwrap();
        assert_eq!((matched.action, matched.parameter().as_deref()), (OpsAction::ApproveAdjustment, Some("case 17")));
        assert_eq!(route(&Method::POST, "/ops/v1/users/mallory/hold").unwrap().action, OpsAction::PlaceHold);
        assert!(route(&Method::PUT, "/ops/v1/users/mallory/hold").is_none());
        assert_eq!(route(&Method::GET, "/ops/v1/holds/").unwrap().action, OpsAction::ListHolds);
        assert!(route(&Method::DELETE, "/ops/v1/holds").is_none());
        assert!(route(&Method::GET, "/ops/v1/users").is_none());
        assert!(route(&Method::GET, "/ops/v2/holds").is_none());
        assert_eq!(
            route(&Method::GET, "/ops/v1/withdrawals/pending").unwrap().action,
            OpsAction::ListPendingWithdrawals
        );
        assert_eq!(
            route(&Method::GET, "/ops/v1/adjustments/pending").unwrap().action,
            OpsAction::ListPendingAdjustments
        );
        let matched = route(&Method::GET, "/ops/v1/adjustments/case%2017").unwrap();
        assert_eq!((matched.action, matched.parameter().as_deref()), (OpsAction::ReadAdjustment, Some("case 17")));
        let matched = route(&Method::POST, "/ops/v1/withdrawals/wd-0a/resend").unwrap();
        assert_eq!((matched.action, matched.parameter().as_deref()), (OpsAction::ResendWithdrawal, Some("wd-0a")));
        let matched = route(&Method::GET, "/ops/v1/withdrawals/wd-0a").unwrap();
        assert_eq!((matched.action, matched.parameter().as_deref()), (OpsAction::ReadWithdrawal, Some("wd-0a")));
    }

    #[test]
    fn a_funds_answer_becomes_its_inner_object() {
        assert_eq!(unwrapped(json!({ "hold": { "changed": true }, "currency": {} })), json!({ "changed": true }));
        assert_eq!(unwrapped(json!({ "holds": [1, 2], "currency": {} })), json!({ "items": [1, 2] }));
    }
}
