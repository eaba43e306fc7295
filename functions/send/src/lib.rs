//! The send function: `POST /packets` (send) and `POST /packets/{packet_id}/cancel` (the
//! sender takes back what is left): the sender's writes.

pub mod cancel;
pub mod handler;

pub use handler::{handle, SendService};
