//! The funds function, with no HTTP route: the payments system invokes it (IAM) with
//! `{"topup": {"user", "amount_cents", "reference"}}`; EventBridge Scheduler invokes it daily
//! with `{"reconcile": {}}`.

pub mod handler;

pub use handler::handle;
