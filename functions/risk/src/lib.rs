//! The risk function: a consumer of the ledger's events on the stack's bus (`PacketSent`,
//! `PacketFinished`, `GrabRecorded`) that runs the pattern rules (docs/RISK.md) and raises
//! `RiskFlagged` flags for operators, holding the accounts a flag names when the stack says so.

pub mod handler;
pub mod watch;

pub use handler::handle;
pub use watch::Watch;
