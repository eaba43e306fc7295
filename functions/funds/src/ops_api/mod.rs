//! The operators' REST API (`/ops/v1/…`, openapi.yaml's `operators` tag): the operator binary's
//! handler, behind API Gateway's second JWT authorizer: the operators' identity provider (the
//! company's single sign-on, or the operators' pool the stack creates), never the app users'.
//!
//! Each request came by one of [`red_packets::routes::OPS_ROUTES`]: its event's route key names
//! its [`OpsAction`], whose roles ([`OpsAction::roles`]) are checked against the token's roles
//! claim (`OPERATOR_ROLES_CLAIM`) before anything is read, 403 `forbidden` naming them. The
//! action's own function then carries it out: a read through the ports ([`reads`]), a command as
//! the typed funds request it is ([`commands`]), with the token's verified subject as its
//! proposer, approver or operator: a body never names the operator, so the four-eyes rule
//! compares two identities the provider verified, and the audit trail records them.

use lambda_http::aws_lambda_events::query_map::QueryMap;
use lambda_http::http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use red_packets::clock::rfc3339;
use red_packets::domain::adjustment::Closing;
use red_packets::domain::history::Role as HistoryRole;
use red_packets::domain::operators::{Operator, OpsAction};
use red_packets::domain::sides::compare;
use red_packets::domain::validate::parse_json;
use red_packets::domain::withdrawal::Withdrawal;
use red_packets::domain::{PacketId, UserId};
use red_packets::funds::{day_cutoffs, reconcile, statement_of_days, trial_balance, Cutoff};
use red_packets::http::{json_body, json_response, money_response, ops_route, page_limit, path_parameter, respond};
use red_packets::ports::{
    Adjustments, AuditTrail, Books, BusinessHours, Flags, Holds, Ledger, PageRequest, ReportSink, SettleIndex, Wallets,
    Withdrawals,
};
use red_packets::{ApiError, Clock};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::handler::FundsFailure;

mod commands;
mod reads;

/// Every port the operators' API reads or writes through.
pub trait OpsLedger:
    Ledger + Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags + BusinessHours
{
}

impl<L> OpsLedger for L where
    L: Ledger + Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags + BusinessHours
{
}

/// What the operators' API works on: the ledger, the live store (a packet's Redis side and its
/// quarantine), where reports go, and the claim that holds an operator's roles.
pub struct OpsApi<'a, L, R, S> {
    /// The ledger.
    pub ledger: &'a L,
    /// The live store.
    pub live: &'a S,
    /// Where the funds requests' reports go (the API itself files none).
    pub reports: &'a R,
    /// `OPERATOR_ROLES_CLAIM`.
    pub roles_claim: &'a str,
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

/// One request, as its action's function reads it: the API, the clock, the request and the
/// operator who made it.
pub(crate) struct Asked<'a, L, R, S> {
    api: &'a OpsApi<'a, L, R, S>,
    clock: &'a dyn Clock,
    request: &'a Request,
    operator: &'a Operator,
}

impl<L: OpsLedger, R, S> Asked<'_, L, R, S> {
    /// The path parameter `name` (empty without one: no record has an empty key).
    fn parameter(&self, name: &str) -> &str {
        path_parameter(self.request, name).unwrap_or_default()
    }

    /// The `{user}` path parameter.
    fn user(&self) -> Result<UserId, ApiError> {
        UserId::from_claim(self.parameter("user")).ok_or_else(|| ApiError::invalid("user", "not a user id"))
    }

    /// The `{packet_id}` path parameter; a malformed one names no packet.
    fn packet_id(&self) -> Result<PacketId, ApiError> {
        PacketId::parse(self.parameter("packet_id")).ok_or(ApiError::NotFound)
    }

    /// The query string.
    fn query(&self) -> QueryMap {
        self.request.query_string_parameters()
    }

    /// A page's limit and cursor from the query string.
    fn page<'q>(&self, query: &'q QueryMap) -> Result<PageRequest<'q>, ApiError> {
        Ok(PageRequest { limit: page_limit(self.request)?, cursor: query.first("cursor") })
    }

    /// The JSON body, as `T`.
    fn body<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        Ok(parse_json(json_body(self.request)?)?)
    }

    /// The signed-in operator's name: the proposer, approver or operator of what they ask.
    fn me(&self) -> String {
        self.operator.subject.clone()
    }

    /// `value` with the ledger's currency beside its amounts.
    fn answer(&self, value: &impl serde::Serialize) -> Result<Response<Body>, ApiError> {
        Ok(money_response(StatusCode::OK, value, Ledger::currency(self.api.ledger)))
    }
}

/// The Lambda handler of the operators' API: every outcome an HTTP response in the API's two
/// error shapes.
pub async fn handle_api<L, R, S>(api: &OpsApi<'_, L, R, S>, clock: &dyn Clock, request: &Request) -> Response<Body>
where
    L: OpsLedger,
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
    L: OpsLedger,
    R: ReportSink,
    S: SettleIndex,
{
    let operator = operator(request, api.roles_claim)?;
    let route = ops_route(request)?;
    if !operator.may(route.action) {
        return Err(ApiError::RoleRequired(route.action.roles().iter().map(|role| role.as_str()).collect()));
    }
    tracing::info!(route = route.key, operator = operator.subject, "operators' API");
    let asked = Asked { api, clock, request, operator: &operator };
    match route.action {
        OpsAction::ReadUser => reads::user(&asked).await,
        OpsAction::ReadUserMovements => reads::user_movements(&asked).await,
        OpsAction::ReadUserPackets => reads::user_packets(&asked).await,
        OpsAction::ReadUserFlags => reads::user_flags(&asked).await,
        OpsAction::ReadUserAudit => reads::user_audit(&asked).await,
        OpsAction::ReadStatement => reads::statement(&asked).await,
        OpsAction::ReadPacket => reads::packet(&asked).await,
        OpsAction::ReadPacketSides => reads::packet_sides(&asked).await,
        OpsAction::ListPendingAdjustments => reads::pending_adjustments(&asked).await,
        OpsAction::ReadAdjustment => reads::adjustment(&asked).await,
        OpsAction::ListPendingWithdrawals => reads::pending_withdrawals(&asked).await,
        OpsAction::ReadWithdrawal => reads::withdrawal(&asked).await,
        OpsAction::ReadAudit => reads::audit(&asked).await,
        OpsAction::ReadTrialBalance => reads::trial_balance_of(&asked).await,
        OpsAction::ReadBusinessHours => reads::business_hours(&asked).await,
        OpsAction::Reconcile => commands::reconcile_now(&asked).await,
        OpsAction::ReleasePacket => commands::release_packet(&asked).await,
        OpsAction::ResendWithdrawal => commands::resend_withdrawal(&asked).await,
        OpsAction::ListHolds => commands::holds(&asked).await,
        OpsAction::PlaceHold => commands::place_hold(&asked).await,
        OpsAction::LiftHold => commands::lift_hold(&asked).await,
        OpsAction::ProposeAdjustment => commands::propose_adjustment(&asked).await,
        OpsAction::ApproveAdjustment => commands::approve_adjustment(&asked).await,
        OpsAction::RejectAdjustment => commands::close_adjustment(&asked, Closing::Reject).await,
        OpsAction::WithdrawAdjustment => commands::close_adjustment(&asked, Closing::Withdraw).await,
        OpsAction::ListFlags => commands::flags(&asked).await,
        OpsAction::AssignFlag => commands::assign_flag(&asked).await,
        OpsAction::ResolveFlag => commands::resolve_flag(&asked).await,
    }
}
