//! Red packets' test kit: what tests, the benchmarks and the local API use and no Lambda ships.
//!
//! - [`memory`]: the stores in memory, behind the same ports and with the same semantics;
//! - [`events`]: API Gateway HTTP API events, built or edited as Lambda delivers them;
//! - [`clock::ManualClock`]: a clock a test moves;
//! - [`telemetry`]: the metric documents a test reads back.
//!
//! The functions take it as a dev-dependency; `local` and `bench`, which ship to no Lambda, as a
//! dependency. No feature of `red-packets` decides what a Lambda binary compiles.

pub mod clock;
pub mod events;
pub mod memory;
pub mod telemetry;

pub use clock::ManualClock;

#[cfg(test)]
mod tests;
