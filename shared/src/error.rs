//! The HTTP edge's error: every handler returns it, [`crate::http::error_response`] maps it to
//! a response. Nothing below the handlers speaks it: the domain refuses with
//! [`Invalid`], the ports fail with [`StoreError`], and the two `From`s here are the only places
//! those become HTTP statuses.

use thiserror::Error;

use crate::clock::Millis;
use crate::domain::{Cents, GrabOutcome, Invalid};
use crate::ports::{Conflict, StoreError};

/// Everything a request can end in other than success.
#[derive(Debug, Error)]
pub enum ApiError {
    /// 400: the request is malformed; `field` names the offending field when there is one.
    #[error("{message}")]
    InvalidRequest {
        /// The field at fault, as the client spelled it.
        field: Option<String>,
        /// What is wrong, for a developer.
        message: String,
    },
    /// 401: no verified identity.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 402: the sender's balance is below the packet's total (`FUNDS=wallet`).
    #[error("your balance is below this packet's total")]
    InsufficientFunds,
    /// 403: only the sender may do this.
    #[error("only the packet's sender may do this")]
    Forbidden,
    /// 403: the packet names its recipients and the caller is not one.
    #[error("this packet is for its recipients only")]
    NotEligible,
    /// 403 `not_eligible` too: the packet is for its chat's members only, and why the grab's
    /// ticket did not admit the caller (none carried, why the one carried admits nobody, or
    /// another chat's), so the app team sees what to fix.
    #[error("this packet is for its chat's members only: {0}")]
    NotAMember(&'static str),
    /// 403: an operator holds the caller's account from this action (docs/RISK.md).
    #[error("your account is on hold from {}: contact support", action)]
    AccountHeld {
        /// `sending`, `grabbing` or `withdrawing`.
        action: &'static str,
    },
    /// 403 `forbidden` on the operators' API: the operator's roles do not include one the
    /// action needs (named).
    #[error("this needs one of the roles {}", .0.join(", "))]
    RoleRequired(Vec<&'static str>),
    /// 403: the grab carried a wrong passphrase, or none.
    #[error("the passphrase is wrong or missing")]
    WrongPassphrase,
    /// 404: no such packet.
    #[error("no such packet")]
    NotFound,
    /// 404: this deployment keeps no wallets (`FUNDS=none`).
    #[error("this deployment keeps no wallets")]
    NoWallets,
    /// 409: every share is taken.
    #[error("every share of this packet has been taken")]
    SoldOut,
    /// 409: a scheduled packet, not open yet: grabs begin at `opens_at_ms`.
    #[error("this packet opens at {}", crate::clock::rfc3339(*opens_at_ms))]
    NotYetOpen {
        /// The opening, epoch ms (the body's `opens_at`).
        opens_at_ms: crate::clock::Millis,
        /// Whole seconds until then, rounded up (the `Retry-After` header).
        retry_after_seconds: u64,
    },
    /// 409: the packet is finished or expired: there is nothing to cancel.
    #[error("this packet is no longer open")]
    NotOpen,
    /// 410: the packet expired.
    #[error("this packet has expired")]
    Expired,
    /// 410: the sender cancelled the packet.
    #[error("the sender cancelled this packet")]
    Cancelled,
    /// 413: the body is over the limit.
    #[error("the request body is over {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 422: an `Idempotency-Key` reused with a different body.
    #[error("this Idempotency-Key was already used with a different request body")]
    IdempotencyKeyReused,
    /// 429: too many wrong passphrases from this caller on this packet.
    #[error("too many wrong passphrases for this packet")]
    TooManyAttempts,
    /// 429: the caller made more grab attempts across packets than the rate allows in this window.
    #[error("too many grabs: try again in {retry_after_seconds} s")]
    GrabRateLimited {
        /// Whole seconds until the next window (the `Retry-After` header).
        retry_after_seconds: u64,
    },
    /// 429: the send would pass one of the sender's daily limits; `field` names it.
    #[error("this send would pass your daily limit {field}")]
    LimitExceeded {
        /// `max_sends_per_day` or `max_sent_cents_per_day`.
        field: &'static str,
    },
    /// 503: a store cannot be reached; the client should retry.
    #[error("{dependency} is unavailable, retry shortly")]
    Unavailable {
        /// Which store: "redis" or "dynamodb".
        dependency: &'static str,
        /// What went wrong, for the logs only.
        detail: String,
    },
    /// 500: a broken invariant or corrupt data; never a client's mistake.
    #[error("internal error")]
    Internal(String),
}

/// The share a grab answers with: taken now, or (`already`) by an earlier grab of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrabbedShare {
    /// The share.
    pub amount_cents: Cents,
    /// When it was taken.
    pub grabbed_at_ms: Millis,
    /// Shares left.
    pub remaining_count: u32,
    /// True for a repeat of an earlier grab.
    pub already: bool,
}

impl ApiError {
    /// A 400 naming `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidRequest { field: Some(field.into()), message: message.into() }
    }

    /// The 409 for a grab at `now_ms` of a packet opening at `opens_at_ms`.
    pub fn not_yet_open(opens_at_ms: crate::clock::Millis, now_ms: crate::clock::Millis) -> Self {
        let wait_ms = u64::try_from(opens_at_ms.saturating_sub(now_ms)).unwrap_or(0);
        ApiError::NotYetOpen { opens_at_ms, retry_after_seconds: wait_ms.div_ceil(1000).max(1) }
    }

    /// A grab's outcome as the API answers it: the share taken now or held already, or the
    /// refusal's error. `now_ms` dates a not-yet-open packet's Retry-After; `not_a_member` says
    /// why a members-only packet refused the caller (the ticket's verdict, known to the handler).
    pub fn from_grab(outcome: GrabOutcome, now_ms: Millis, not_a_member: &'static str) -> Result<GrabbedShare, Self> {
        Err(match outcome {
            GrabOutcome::Grabbed { amount_cents, grabbed_at_ms, remaining_count } => {
                return Ok(GrabbedShare { amount_cents, grabbed_at_ms, remaining_count, already: false })
            }
            GrabOutcome::Already { amount_cents, grabbed_at_ms, remaining_count } => {
                return Ok(GrabbedShare { amount_cents, grabbed_at_ms, remaining_count, already: true })
            }
            GrabOutcome::SoldOut => ApiError::SoldOut,
            GrabOutcome::Expired => ApiError::Expired,
            GrabOutcome::Cancelled => ApiError::Cancelled,
            GrabOutcome::NotEligible => ApiError::NotEligible,
            GrabOutcome::NotAMember => ApiError::NotAMember(not_a_member),
            GrabOutcome::WrongPassphrase => ApiError::WrongPassphrase,
            GrabOutcome::TooManyAttempts => ApiError::TooManyAttempts,
            GrabOutcome::NotFound => ApiError::NotFound,
            GrabOutcome::RateLimited { retry_after_seconds } => ApiError::GrabRateLimited { retry_after_seconds },
            GrabOutcome::NotYetOpen { opens_at_ms } => ApiError::not_yet_open(opens_at_ms, now_ms),
        })
    }

    /// A 503 for Redis.
    pub fn redis_unavailable(detail: impl std::fmt::Display) -> Self {
        ApiError::Unavailable { dependency: "redis", detail: detail.to_string() }
    }

    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidRequest { .. } => 400,
            ApiError::Unauthorized(_) => 401,
            ApiError::InsufficientFunds => 402,
            ApiError::Forbidden
            | ApiError::RoleRequired(_)
            | ApiError::NotEligible
            | ApiError::NotAMember(_)
            | ApiError::WrongPassphrase
            | ApiError::AccountHeld { .. } => 403,
            ApiError::NotFound | ApiError::NoWallets => 404,
            ApiError::SoldOut | ApiError::NotOpen | ApiError::NotYetOpen { .. } => 409,
            ApiError::Expired | ApiError::Cancelled => 410,
            ApiError::PayloadTooLarge { .. } => 413,
            ApiError::IdempotencyKeyReused => 422,
            ApiError::TooManyAttempts | ApiError::LimitExceeded { .. } | ApiError::GrabRateLimited { .. } => 429,
            ApiError::Unavailable { .. } => 503,
            ApiError::Internal(_) => 500,
        }
    }

    /// The stable machine-readable code in the error body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest { .. } => "invalid_request",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::InsufficientFunds => "insufficient_funds",
            ApiError::Forbidden | ApiError::RoleRequired(_) => "forbidden",
            ApiError::NotEligible | ApiError::NotAMember(_) => "not_eligible",
            ApiError::WrongPassphrase => "wrong_passphrase",
            ApiError::AccountHeld { .. } => "account_held",
            ApiError::NotFound | ApiError::NoWallets => "not_found",
            ApiError::SoldOut => "sold_out",
            ApiError::NotOpen => "not_open",
            ApiError::NotYetOpen { .. } => "not_open_yet",
            ApiError::Expired => "expired",
            ApiError::Cancelled => "cancelled",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::IdempotencyKeyReused => "idempotency_key_reused",
            ApiError::TooManyAttempts => "too_many_attempts",
            ApiError::GrabRateLimited { .. } => "grab_rate_limited",
            ApiError::LimitExceeded { .. } => "limit_exceeded",
            ApiError::Unavailable { .. } => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        ApiError::InvalidRequest { field: invalid.field, message: invalid.message }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable { store, detail } | StoreError::TimedOut { store, detail } => {
                ApiError::Unavailable { dependency: store, detail }
            }
            StoreError::Corrupt(detail) => ApiError::Internal(format!("corrupt record: {detail}")),
            StoreError::Rejected(detail) => ApiError::Internal(format!("the store refused a write: {detail}")),
            StoreError::Invalid(invalid) => invalid.into(),
            StoreError::Conflict(conflict) => match conflict {
                Conflict::NoSuchPacket => ApiError::NotFound,
                Conflict::NotTheSender => ApiError::Forbidden,
                Conflict::NotOpen => ApiError::NotOpen,
                Conflict::IdempotencyKeyReused => ApiError::IdempotencyKeyReused,
                Conflict::LimitExceeded(field) => ApiError::LimitExceeded { field },
                Conflict::InsufficientFunds => ApiError::InsufficientFunds,
                Conflict::NoWallets => ApiError::NoWallets,
            },
        }
    }
}
