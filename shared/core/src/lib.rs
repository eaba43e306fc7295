//! Red packets' ports and use cases: what the service does, over traits the stores implement.
//!
//! - [`ports`]: the narrow traits the Redis store and the DynamoDB ledger implement, and
//!   `StoreError`;
//! - [`packets`], [`settle`], [`funds`], [`holds`]: the use cases (the current view and reloading
//!   a packet, settle's runs, the funds function's commands, the hold check);
//! - [`config`] and [`settings`]: the environment, each setting declared once; [`keys`]: the
//!   deployment's keys, read from their secrets at run time;
//! - [`markers`]: the log markers the template's alarms count.
//!
//! Beside the domain (`red-packets-domain`, re-exported as [`domain`] and [`clock`]), below the
//! adapters (`red-packets-redis`, `red-packets-dynamo`) and the library (`red-packets`): this
//! crate depends on no store client (no redis, no AWS SDK, no Lambda runtime), so a use case
//! cannot reach past its ports.

pub mod config;
pub mod funds;
pub mod holds;
pub mod keys;
pub mod markers;
pub mod packets;
pub mod ports;
pub mod settings;
pub mod settle;

/// The pure domain (`shared/domain`).
pub use red_packets_domain as domain;
/// Time as epoch milliseconds, the domain's.
pub use red_packets_domain::clock;
