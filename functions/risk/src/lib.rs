//! The risk function: the consumer of the ledger's events on the stack's bus. It counts each
//! send, grab, refund, revoked grab and withdrawal once in its business hour (the operators'
//! hourly view, `domain::hourly`), and runs `PacketSent`, `PacketFinished` and `GrabRecorded`
//! through the pattern rules (docs/RISK.md), raising `RiskFlagged` flags for operators and
//! holding the accounts a flag names when the stack says so.

pub mod handler;
pub mod watch;

pub use handler::{event_types, handle};
pub use watch::Watch;
