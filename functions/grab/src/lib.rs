//! The grab function: `POST /packets/{packet_id}/grab`.

pub mod handler;

pub use handler::{handle, GrabResponse, GrabService};
