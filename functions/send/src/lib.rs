//! The send function: `POST /packets`.

pub mod handler;

pub use handler::{handle, SendService};
