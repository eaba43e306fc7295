//! The Redis adapter (`red-packets-redis`): the live, atomic side of packets, on the ports of
//! `red-packets-core`; its Lua scripts are in `lua/` beside `src/`, each headed by its KEYS, ARGV
//! and return values.
//!
//! - [`connection`]: one node or a cluster, every call bounded in time, `WAIT` routing.
//! - [`keys`]: the layout, declared once: every key's name and every entry's format.
//! - [`scripts`]: the Lua scripts over the layout, behind typed wrappers; [`grab_scripts`] the
//!   grab's.
//! - [`store`]: [`RedisStore`], the [`red_packets_core::ports::LiveStore`] (grabs, loads, snapshots).
//! - `settle`: the same store's settle side (index, dirty sets, marks, retirement; where runs
//!   stand).
//! - [`sold_out`]: the per-instance memo of packets seen sold out.
//! - [`rate`]: one user's grab rate across packets, a counter per user per window.

pub mod coalesce;
pub mod connection;
mod grab_batch;
mod grab_path;
pub mod grab_scripts;
pub mod keys;
pub mod rate;
pub mod record;
pub mod scripts;
mod settle;
pub mod sold_out;
pub mod store;

pub use connection::RedisConnection;
pub use store::RedisStore;
