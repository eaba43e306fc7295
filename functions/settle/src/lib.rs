//! The settle function: invoked by EventBridge Scheduler every minute with
//! `{"shards": [from, to]}`; persists grabs, finalises and refunds, reconciles.

pub mod handler;

pub use handler::handle;
