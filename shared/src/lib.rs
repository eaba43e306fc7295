//! Red packets (红包): the library every Lambda function of the service shares. Five crates, one
//! name: the functions use `red_packets` alone.
//!
//! - [`domain`]: money, limits, splitters, packet rules and the books; pure, no I/O (the crate
//!   `red-packets-domain`, whose dependencies hold no I/O crate).
//! - [`ports`], [`packets`], [`settle`], [`funds`], [`holds`], [`keys`], [`config`], [`settings`]: the traits
//!   the stores implement, the use cases over them and the configuration (the crate
//!   `red-packets-core`, which no store client reaches).
//! - [`adapters`]: the Redis store with its Lua scripts (`red-packets-redis`) and the DynamoDB
//!   ledger with its exports (`red-packets-dynamo`), each implementing the ports, neither knowing
//!   the other.
//! - Here: [`http`], identity, JSON bodies and the one mapping of [`ApiError`] to HTTP responses;
//!   [`routes`]; [`telemetry`], logs and metrics; [`secrets`], Secrets Manager, where the
//!   deployed functions read their keys.
//!
//! The in-memory stores, the API Gateway events and the clock tests move are in the test kit
//! (`red-packets-testkit`), which no Lambda binary depends on. No crate has a feature: what a
//! Lambda compiles is what its dependencies name.

pub mod adapters;
pub mod error;
pub mod http;
pub mod routes;
pub mod secrets;
pub mod telemetry;

/// The ports and use cases, a crate of its own (`shared/core`) that no store client reaches.
pub use red_packets_core::{config, funds, holds, keys, packets, ports, settings, settle};
/// The pure domain, a crate of its own (`shared/domain`) so the compiler keeps it free of I/O.
pub use red_packets_domain as domain;
/// Time as epoch milliseconds, the domain's.
pub use red_packets_domain::clock;

pub use clock::{Clock, Millis, SystemClock};
pub use config::Config;
pub use error::ApiError;
