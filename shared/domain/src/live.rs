//! A packet as the live store holds it while it is grabbable: the record, what is left, every
//! grab in order and how many of them the ledger holds; and [`LiveState`], the same packet as
//! a plain Rust state machine. `grab.lua`, `cancel.lua`, `close.lua`, `persisted.lua`,
//! `freeze.lua` and `load.lua` are checked against it by a property test on real Redis
//! (`local/tests/it/grab_script.rs`), and the in-memory live store
//! (the test kit's `memory::MemoryStore`) is built on it: one model, two uses.

use std::collections::HashMap;

use super::grab::{GrabAttempt, GrabOutcome, LoggedGrab};
use super::grab_rule::{decide, GrabDecision, GrabState, Standing};
use super::ids::UserId;
use super::money::Cents;
use super::packet::Packet;
use crate::clock::Millis;

/// A packet as the live store is to hold it: the packet, cancelled or not, `closed` to grabs or
/// not, the grabs already taken and the shares still to hand out, in order.
#[derive(Debug, Clone, Copy)]
pub struct PacketImage<'a> {
    /// The packet.
    pub packet: &'a Packet,
    /// The sender cancelled it.
    pub cancelled: bool,
    /// It takes no more grabs.
    pub closed: bool,
    /// The grabs it holds, in seq order.
    pub grabs: &'a [LoggedGrab],
    /// The shares not yet taken, `(seq, amount)`, in the order they are handed out.
    pub pool: &'a [(u32, Cents)],
}

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

/// What cancelling a packet in the live store came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The live store holds no such packet.
    Missing,
    /// Cancelled: closed to grabs, now or by an earlier call.
    Cancelled,
    /// Every share is taken: nothing to cancel.
    Finished,
    /// Expired (or closed) with shares left: settle refunds it as expired.
    Expired,
    /// Settle is re-syncing it from the ledger: nothing changed, ask again shortly.
    Resyncing,
}

/// What closing a packet to grabs came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseOutcome {
    /// The live store holds no such packet.
    Missing,
    /// Neither finished nor expired: still open.
    StillOpen,
    /// Closed to grabs, now or earlier.
    Closed,
}

/// Where a live packet stands for grabs (`open_until` in `grab.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Grabbable until its expiry.
    Open,
    /// Closed by settle: finished or expired.
    Closed,
    /// Cancelled by its sender.
    Cancelled,
    /// Frozen by settle's re-sync under this token: no fresh grab until the replace.
    Frozen(String),
}

/// What one grab did to a live packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveGrab {
    /// Decided: the outcome, and whether this grab is the packet's only one settle has not
    /// persisted (the caller marks the packet for settle then).
    Decided {
        /// The answer.
        outcome: GrabOutcome,
        /// True when the packet just became dirty.
        dirtied: bool,
    },
    /// Settle is re-syncing the packet: try again shortly.
    Resyncing,
}

/// A packet's live state, kept the plain way: what the scripts keep in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveState {
    /// The packet as sent.
    pub packet: Packet,
    /// Shares not yet taken, `(seq, amount)`, in the order they go out.
    pub pool: Vec<(u32, Cents)>,
    /// Every grab, in grab order.
    pub grabs: Vec<LoggedGrab>,
    /// Open, closed, cancelled or frozen.
    pub gate: Gate,
    /// How many of `grabs` the ledger has confirmed.
    pub persisted: usize,
    /// Wrong passphrases tried, per user.
    pub wrong_tries: HashMap<UserId, u32>,
}

impl LiveState {
    /// A packet loaded at its send, every share to hand out.
    pub fn new(packet: &Packet, shares: &[Cents]) -> Self {
        let pool: Vec<(u32, Cents)> = (1..).zip(shares.iter().copied()).collect();
        LiveState::restored(PacketImage { packet, cancelled: false, closed: false, grabs: &[], pool: &pool })
    }

    /// A packet loaded from the ledger's state: its grabs (all persisted), the shares still to
    /// hand out, cancelled or closed to grabs as the ledger says (`load.lua`).
    pub fn restored(image: PacketImage<'_>) -> Self {
        let PacketImage { packet, cancelled, closed, grabs, pool } = image;
        let gate = if cancelled {
            Gate::Cancelled
        } else if closed {
            Gate::Closed
        } else {
            Gate::Open
        };
        LiveState {
            packet: packet.clone(),
            pool: pool.to_vec(),
            grabs: grabs.to_vec(),
            gate,
            persisted: grabs.len(),
            wrong_tries: HashMap::new(),
        }
    }

    /// One grab at `now_ms` (`grab.lua`), as [`decide`] rules on this state: a wrong
    /// passphrase is counted, a share taken is logged.
    pub fn grab(&mut self, attempt: &GrabAttempt, now_ms: Millis) -> LiveGrab {
        match decide(&self.grab_state(), attempt, now_ms) {
            GrabDecision::Answer(outcome) => {
                if outcome == GrabOutcome::WrongPassphrase {
                    *self.wrong_tries.entry(attempt.user.clone()).or_default() += 1;
                }
                LiveGrab::Decided { outcome, dirtied: false }
            }
            GrabDecision::Resyncing => LiveGrab::Resyncing,
            GrabDecision::Take => {
                let (seq, amount_cents) = self.pool.remove(0);
                let dirtied = self.grabs.len() == self.persisted;
                let grab = LoggedGrab { seq, user: attempt.user.clone(), amount_cents, at_ms: now_ms };
                let outcome = GrabOutcome::grabbed(&grab, self.remaining_count());
                self.grabs.push(grab);
                LiveGrab::Decided { outcome, dirtied }
            }
        }
    }

    /// This packet as [`decide`] reads it.
    pub fn grab_state(&self) -> GrabState<'_> {
        GrabState {
            packet: &self.packet,
            grabs: &self.grabs,
            remaining_count: self.remaining_count(),
            standing: match self.gate {
                Gate::Open => Standing::Open,
                Gate::Closed => Standing::Closed,
                Gate::Cancelled => Standing::Cancelled,
                Gate::Frozen(_) => Standing::Frozen,
            },
            wrong_tries: Some(&self.wrong_tries),
        }
    }

    /// Shares left to hand out.
    fn remaining_count(&self) -> u32 {
        u32::try_from(self.pool.len()).unwrap_or(u32::MAX)
    }

    /// The sender cancels at `now_ms` (`cancel.lua`).
    pub fn cancel(&mut self, now_ms: Millis) -> CancelOutcome {
        match self.gate {
            Gate::Cancelled => CancelOutcome::Cancelled,
            Gate::Frozen(_) => CancelOutcome::Resyncing,
            _ if self.pool.is_empty() => CancelOutcome::Finished,
            Gate::Closed => CancelOutcome::Expired,
            Gate::Open if now_ms >= self.packet.expires_at_ms => CancelOutcome::Expired,
            Gate::Open => {
                self.gate = Gate::Cancelled;
                CancelOutcome::Cancelled
            }
        }
    }

    /// Settle closes it at `now_ms` if it is finished or expired, or whatever its state when
    /// `force`d (a quarantine); a frozen packet stays open to its re-sync (`close.lua`).
    pub fn close(&mut self, now_ms: Millis, force: bool) -> CloseOutcome {
        match self.gate {
            Gate::Closed | Gate::Cancelled => CloseOutcome::Closed,
            _ if force => {
                self.gate = Gate::Closed;
                CloseOutcome::Closed
            }
            Gate::Frozen(_) => CloseOutcome::StillOpen,
            Gate::Open if now_ms < self.packet.expires_at_ms && !self.pool.is_empty() => CloseOutcome::StillOpen,
            Gate::Open => {
                self.gate = Gate::Closed;
                CloseOutcome::Closed
            }
        }
    }

    /// Records that the first `confirmed` grabs are in the ledger, if `last` is still the
    /// `confirmed`-th grab of the log (`persisted.lua`); returns the persisted mark.
    pub fn mark_persisted(&mut self, confirmed: usize, last: &LoggedGrab) -> usize {
        if confirmed > self.persisted && self.grabs.get(confirmed.wrapping_sub(1)) == Some(last) {
            self.persisted = confirmed;
        }
        self.persisted
    }

    /// Freezes it for a re-sync under `token` (`freeze.lua`) and returns its whole log.
    pub fn freeze(&mut self, token: &str) -> Vec<LoggedGrab> {
        self.gate = Gate::Frozen(token.to_owned());
        self.grabs.clone()
    }

    /// True while the re-sync under `token` holds its freeze.
    pub fn frozen_by(&self, token: &str) -> bool {
        matches!(&self.gate, Gate::Frozen(held) if held == token)
    }

    /// The packet as a snapshot reads it.
    pub fn snapshot(&self) -> LivePacket {
        LivePacket {
            packet: self.packet.clone(),
            open: matches!(self.gate, Gate::Open | Gate::Frozen(_)),
            frozen: matches!(self.gate, Gate::Frozen(_)),
            cancelled: self.gate == Gate::Cancelled,
            remaining_count: self.remaining_count(),
            grabs: self.grabs.clone(),
            persisted: self.persisted,
        }
    }
}
