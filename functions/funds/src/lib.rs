//! The funds library, with no route of the API, as two binaries: `funds` (`FundsFunction`), which
//! the payments system invokes with `{"topup": …}` and its word on withdrawals
//! (`{"withdrawal_paid": …}`, `{"withdrawal_failed": …}`), and EventBridge Scheduler daily with
//! `{"reconcile": {}}` and `{"trial_balance": {}}` (statements to the reports bucket too); and
//! `operator` (`OperatorFunction`), which operators call through its function URL, signed with
//! their own AWS identity, with `{"propose_adjustment": …}`, `{"approve_adjustment": …}` and
//! `{"audit": …}` ([`operator`]).

pub mod handler;
pub mod operator;
pub mod ops_api;
pub mod reports;

pub use handler::{handle, FundsAnswer};
