//! The pure domain: money in integer cents, limits, splitters and packet rules. No I/O here.

pub mod access;
pub mod adjustment;
pub mod audit;
pub mod books;
pub mod day;
pub mod grab;
pub mod grab_rule;
pub mod history;
pub mod ids;
pub mod invalid;
pub mod ledger;
pub mod limits;
pub mod live;
pub mod money;
pub mod packet;
pub mod patterns;
pub mod recovery;
pub mod reference;
pub mod risk;
pub mod settlement;
pub mod split;
pub mod validate;
pub mod wallet;
pub mod withdrawal;

pub use access::{Access, Passphrase, PassphraseDigest, PassphraseKey};
pub use books::statements;
pub use day::BusinessDay;
pub use grab::GrabOutcome;
pub use ids::{ChatId, IdempotencyKey, PacketId, UserId};
pub use invalid::Invalid;
pub use limits::{DailyLimits, Limits};
pub use live::LivePacket;
pub use money::{Cents, Currency};
pub use packet::{Packet, PacketKind, PacketSpec, PacketStatus, PacketTerms, PacketView};
pub use split::{Seed, SplitRule, SplitVersion};
pub use wallet::{EventType, Funds, LedgerEvent, Movement, MovementKind, TopUp};
