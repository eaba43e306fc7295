//! The one error type every handler returns; [`crate::http::error_response`] maps it to HTTP.

use thiserror::Error;

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
    /// 404: no such packet.
    #[error("no such packet")]
    NotFound,
    /// 409: every share is taken.
    #[error("every share of this packet has been taken")]
    SoldOut,
    /// 410: the packet expired.
    #[error("this packet has expired")]
    Expired,
    /// 413: the body is over the limit.
    #[error("the request body is over {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 422: an `Idempotency-Key` reused with a different body.
    #[error("this Idempotency-Key was already used with a different request body")]
    IdempotencyKeyReused,
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

impl ApiError {
    /// A 400 naming `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::InvalidRequest { field: Some(field.into()), message: message.into() }
    }

    /// A 503 for Redis.
    pub fn redis_unavailable(detail: impl std::fmt::Display) -> Self {
        ApiError::Unavailable { dependency: "redis", detail: detail.to_string() }
    }

    /// A 503 for DynamoDB.
    pub fn dynamodb_unavailable(detail: impl std::fmt::Display) -> Self {
        ApiError::Unavailable { dependency: "dynamodb", detail: detail.to_string() }
    }

    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidRequest { .. } => 400,
            ApiError::Unauthorized(_) => 401,
            ApiError::NotFound => 404,
            ApiError::SoldOut => 409,
            ApiError::Expired => 410,
            ApiError::PayloadTooLarge { .. } => 413,
            ApiError::IdempotencyKeyReused => 422,
            ApiError::Unavailable { .. } => 503,
            ApiError::Internal(_) => 500,
        }
    }

    /// The stable machine-readable code in the error body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest { .. } => "invalid_request",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::NotFound => "not_found",
            ApiError::SoldOut => "sold_out",
            ApiError::Expired => "expired",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::IdempotencyKeyReused => "idempotency_key_reused",
            ApiError::Unavailable { .. } => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }
}
