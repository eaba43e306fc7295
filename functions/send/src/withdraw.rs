//! `POST /me/withdrawals`: the caller's money out to the payments system. The amount is debited
//! into a pending withdrawal at once (402 when the balance is short); the payments system pays
//! it out or fails it (the money comes back), through the funds function.
//!
//! Every request carries an `Idempotency-Key` of its own: the withdrawal's id is made from the
//! caller and the key, so a retry is refused by the ledger's write and answered with the
//! withdrawal as it is now (200, where the first answer was 201); the same key with another
//! amount or destination is a 422, as for a send.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use red_packets::domain::risk::HeldAction;
use red_packets::domain::validate::parse_json;
use red_packets::domain::withdrawal::{withdrawal_id, WithdrawalRequest};
use red_packets::http::{caller, idempotency_key, json_body, money_response};
use red_packets::ports::{Holds, Ledger, LiveStore, Withdrawals};
use red_packets::ApiError;

use crate::SendService;

/// Asks for a withdrawal of the caller's money (counted as `Withdrawals`, outcome
/// `requested` or `replayed`, and `WithdrawnCents`).
pub async fn withdraw<L: Ledger + Withdrawals + Holds, S: LiveStore>(
    service: &SendService<L, S>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let user = caller(request)?;
    let key = idempotency_key(request)?;
    // A hold that stops money out (`money_out` or `all`) refuses before anything is debited,
    // within the holds' refresh like the other scopes.
    if service.holds.stops(&service.ledger, &user, HeldAction::Withdraw, service.clock.now_ms()).await.is_some() {
        return Err(ApiError::AccountHeld { action: "withdrawing" });
    }
    let body: WithdrawalRequest = parse_json(json_body(request)?)?;
    body.validate()?;
    let id = withdrawal_id(&user, &key);
    let receipt = service.ledger.request_withdrawal(&user, &id, &body, service.clock.now_ms()).await?;
    let status = if receipt.created {
        metrics::counter!("Withdrawals", "outcome" => "requested").increment(1);
        metrics::counter!("WithdrawnCents").increment(body.amount_cents);
        tracing::info!(withdrawal_id = %id, amount_cents = body.amount_cents, "withdrawal requested");
        StatusCode::CREATED
    } else {
        metrics::counter!("Withdrawals", "outcome" => "replayed").increment(1);
        StatusCode::OK
    };
    Ok(money_response(status, &receipt, service.ledger.currency()))
}
