//! The send function: `POST /packets` (send), `POST /packets/{packet_id}/cancel` (the
//! sender takes back what is left) and `POST /me/withdrawals` (money out): the writes that
//! take money from the caller's wallet; and `GET /me/limits`, what a send may be.

pub mod cancel;
pub mod handler;
pub mod limits;
pub mod withdraw;

pub use handler::{handle, SendService};
