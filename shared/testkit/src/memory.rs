//! The stores in memory, behind the same ports and with the same semantics: the live store is
//! [`LiveState`](red_packets::domain::live::LiveState), the model the grab-script property test holds
//! against `grab.lua` on real Redis; the ledger keeps the same conditions as DynamoDB's writes
//! (a share claimed once, a user paid once, a packet finalised once, the send's limits and
//! idempotency). The handlers' and settle's unit tests run on them in seconds, with no
//! service; the integration suites, where an invariant is proved, stay on the real stores.

mod ledger;
mod live;

pub use ledger::MemoryLedger;
pub use live::MemoryStore;
