//! The query function: `GET /packets/{packet_id}` and `GET /me/packets`.

pub mod handler;

pub use handler::{handle, QueryService};
