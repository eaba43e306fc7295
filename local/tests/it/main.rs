//! The integration tests, one binary: each module below is a suite that was a test binary of its
//! own, linked once here instead of 23 times. A suite is chosen by its module's name
//! (`cargo test -p local --test it -- wallet::`, or `scripts/run_tests.py --test wallet`, which
//! runs each suite in a process of its own, as before, with its own timeout and time kept).
//! `support` holds what the suites share: the services, a stack of handlers, Redis servers and
//! clusters of their own, and the DynamoDB throttling injector.

mod support;

mod campaign;
mod cors;
mod deployment;
mod events_on_binaries;
mod events_stream;
mod fairness;
mod faults;
mod fleet;
mod funds_reports;
mod grab_script;
mod hostile;
mod hot_packet;
mod money_out;
mod money_safety;
mod operators_api;
mod patterns;
mod reads;
mod recovery;
mod restart;
mod risk;
mod secrets;
mod send_and_grab;
mod serverless_commands;
mod settle_and_query;
mod settle_scales;
mod slow_ledger;
mod wallet;
mod who_may_grab;
