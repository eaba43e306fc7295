//! The funds function, with no HTTP route, deployed as two entry points of one binary
//! (`FUNDS_ENTRY`): `FundsFunction`, which the payments system invokes with `{"topup": …}` and
//! its word on withdrawals (`{"withdrawal_paid": …}`, `{"withdrawal_failed": …}`) and
//! EventBridge Scheduler daily with `{"reconcile": {}}` and `{"trial_balance": {}}`; and
//! `OperatorFunction`, which operators invoke with `{"propose_adjustment": …}` and
//! `{"approve_adjustment": …}`. Both write `{"statement": {"user", "day"}}` reports to the
//! reports bucket.

pub mod handler;
pub mod reports;

pub use handler::{handle, FundsAnswer};
