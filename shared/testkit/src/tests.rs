//! The library's use cases on the in-memory stores, with no service: settle's state machine and
//! the hold check. Here rather than in `red-packets`, whose own tests cannot use this kit (it
//! would be a second copy of the library, with ports of its own).

mod holds;
mod settle;
