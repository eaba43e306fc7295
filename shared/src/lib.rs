//! Red packets (红包): the library every Lambda function of the service shares.
//!
//! - [`domain`]: money, limits, splitters and packet rules; pure, no I/O.
//! - [`adapters`]: the Redis store (Lua scripts behind typed wrappers) and the DynamoDB ledger,
//!   each behind a narrow trait from [`ports`].
//! - [`packets`]: use cases over the ports shared by several functions (the current view,
//!   reloading an open packet from the ledger).
//! - [`http`]: identity, JSON bodies and the one mapping of [`ApiError`] to HTTP responses.
//! - [`config`]: the environment, with DESIGN.md's defaults.
//! - With the `test-support` feature (tests, `local`, `bench`; never a Lambda binary): `events`,
//!   `adapters::memory`, settle's fault points, `RedisStore`'s `without_*` switches, `ManualClock`.

pub mod adapters;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod events;
pub mod funds;
pub mod holds;
pub mod http;
pub mod packets;
pub mod ports;
pub mod routes;
pub mod settings;
pub mod settle;
pub mod telemetry;

pub use clock::{Clock, Millis, SystemClock};
pub use config::Config;
pub use error::ApiError;
