//! Red packets' domain: money in integer cents, limits, splitters, packet rules, the books.
//!
//! Pure: no I/O. The compiler keeps it so: this crate's dependencies are serde, the RNG, the
//! hashes and the calendar, and none of tokio, redis, the AWS SDK or the Lambda runtime. The
//! library `red-packets` re-exports it as `red_packets::domain` (and its clock as
//! `red_packets::clock`), beside the ports, use cases and adapters that do the I/O.

pub mod access;
pub mod adjustment;
pub mod audit;
pub mod books;
pub mod clock;
pub mod day;
pub mod flags;
pub mod grab;
pub mod grab_rule;
pub mod history;
pub mod hourly;
pub mod ids;
pub mod invalid;
pub mod ledger;
pub mod limits;
pub mod live;
pub mod membership;
pub mod money;
pub mod operators;
pub mod packet;
pub mod patterns;
pub mod recovery;
pub mod reference;
pub mod risk;
pub mod settlement;
pub mod sides;
pub mod split;
pub mod tags;
pub mod validate;
pub mod wallet;
pub mod withdrawal;

#[cfg(test)]
mod tests;

pub use access::{Access, Passphrase, PassphraseDigest, PassphraseKey};
pub use books::statements;
pub use day::BusinessDay;
pub use grab::GrabOutcome;
pub use ids::{ChatId, IdempotencyKey, PacketId, UserId};
pub use invalid::Invalid;
pub use limits::{DailyLimits, Limits, SendLimits};
pub use live::LivePacket;
pub use money::{Cents, Currency};
pub use packet::{GrabTotals, Packet, PacketKind, PacketSpec, PacketStatus, PacketTerms, PacketView, SharedView};
pub use split::{Seed, SplitRule, SplitVersion};
pub use wallet::{EventType, Funds, LedgerEvent, Movement, MovementKind, TopUp};
