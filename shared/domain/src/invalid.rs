//! A request the rules refuse, in the domain's terms: the field at fault and why. The HTTP edge
//! answers it as a 400; the `funds` function as an `InvalidFundsRequest`.

use thiserror::Error;

/// A request that breaks a rule: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct Invalid {
    /// The field at fault, as the client spelled it (none for a body that is not an object).
    pub field: Option<String>,
    /// What is wrong, for a developer.
    pub message: String,
}

impl Invalid {
    /// A refusal naming `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Invalid { field: Some(field.into()), message: message.into() }
    }

    /// A refusal of the request as a whole.
    pub fn whole(message: impl Into<String>) -> Self {
        Invalid { field: None, message: message.into() }
    }
}
