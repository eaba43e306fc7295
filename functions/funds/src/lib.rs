//! The funds function, with no HTTP route: the payments system invokes it (IAM) with
//! `{"topup": {"user", "amount_cents", "reference"}}`; EventBridge Scheduler invokes it daily
//! with `{"reconcile": {}}` and `{"trial_balance": {}}` (the day before); support asks for
//! `{"statement": {"user", "day"}}`. Reports go to the reports bucket.

pub mod handler;
pub mod reports;

pub use handler::handle;
