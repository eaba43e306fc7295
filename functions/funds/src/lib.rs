//! The funds library, with no route of the app's API, as two binaries: `funds` (`FundsFunction`),
//! which the payments system invokes with `{"topup": …}` and its word on withdrawals
//! (`{"withdrawal_paid": …}`, `{"withdrawal_failed": …}`), and EventBridge Scheduler daily with
//! `{"reconcile": {}}` and `{"trial_balance": {}}` (statements to the reports bucket too)
//! ([`handler`]); and `operator` (`OperatorFunction`), the operators' API behind API Gateway
//! (`/ops/v1`, [`ops_api`]).

pub mod handler;
pub mod ops_api;
pub mod reports;

pub use handler::{carry_out, handle, FundsAnswer};
