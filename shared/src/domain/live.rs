//! A packet as the live store holds it while it is grabbable: the record, what is left, every
//! grab in order and how many of them the ledger holds.

use super::grab::LoggedGrab;
use super::packet::Packet;

/// A packet as the live store holds it: the record, its shares left and every grab in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePacket {
    /// The packet as sent (seed included).
    pub packet: Packet,
    /// False once the packet was closed to grabs.
    pub open: bool,
    /// True while settle re-syncs it from the ledger (closed to fresh grabs until then).
    pub frozen: bool,
    /// True once the sender cancelled it.
    pub cancelled: bool,
    /// Shares left.
    pub remaining_count: u32,
    /// Every grab, in grab order.
    pub grabs: Vec<LoggedGrab>,
    /// How many of `grabs` the ledger has confirmed.
    pub persisted: usize,
}

impl LivePacket {
    /// The grabs the ledger has not confirmed yet.
    pub fn pending(&self) -> &[LoggedGrab] {
        &self.grabs[self.persisted.min(self.grabs.len())..]
    }
}
