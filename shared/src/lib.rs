//! Red packets (红包): the library every Lambda function of the service shares.
//!
//! - [`domain`]: money, limits, splitters and packet rules; pure, no I/O.
//! - [`adapters`]: the Redis store (Lua scripts behind typed wrappers) and the DynamoDB ledger,
//!   each behind a narrow trait from [`ports`].
//! - [`packets`]: use cases over the ports shared by several functions (the current view,
//!   reloading an open packet from the ledger).
//! - [`http`]: identity, JSON bodies and the one mapping of [`ApiError`] to HTTP responses.
//! - [`config`]: the environment, with DESIGN.md's defaults.
//! - [`settle`], [`funds`], [`holds`]: the use cases of the settle and funds functions, and the
//!   hold check the grab and send functions share.
//!
//! The pure domain is a crate of its own (`red-packets-domain`, re-exported as [`domain`] and
//! [`clock`]); the in-memory stores, the API Gateway events and the clock tests move are in the
//! test kit (`red-packets-testkit`), which no Lambda binary depends on. This crate has no
//! feature: what a Lambda compiles is what its dependencies name.

pub mod adapters;
pub mod config;
pub mod error;
pub mod funds;
pub mod holds;
pub mod http;
pub mod packets;
pub mod ports;
pub mod routes;
pub mod settings;
pub mod settle;
pub mod telemetry;

/// The pure domain, a crate of its own (`shared/domain`) so the compiler keeps it free of I/O.
pub use red_packets_domain as domain;
/// Time as epoch milliseconds, the domain's.
pub use red_packets_domain::clock;

pub use clock::{Clock, Millis, SystemClock};
pub use config::Config;
pub use error::ApiError;
