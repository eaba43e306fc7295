//! The fold's small accumulators and what keys them: [`Part`] (which accounts a pass keeps),
//! the stable [`fingerprint`], the checked sums [`Sum`] and [`Total`], [`Tally`] (a multiset of
//! `(who, amount)` pairs), one packet's [`PacketAcc`] and one record's [`RecordAcc`] (a top-up, a withdrawal, an
//! adjustment), and
//! [`PacketKey`], a packet id as two words.

use std::fmt;

use crate::ids::{PacketId, UserId};
use crate::money::Cents;

/// Which share of the accounts a pass keeps: those whose key hashes to `index` modulo `of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// This pass.
    pub index: u32,
    /// How many passes.
    pub of: u32,
}

impl Part {
    /// Everything in one pass.
    pub const WHOLE: Part = Part { index: 0, of: 1 };

    pub(super) fn keeps(self, key: &[u8]) -> bool {
        self.of <= 1 || fingerprint(key) % u64::from(self.of) == u64::from(self.index)
    }
}

/// A 64-bit hash of `bytes`: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3),
/// then MurmurHash3's `fmix64` finaliser, so that every output bit (the low ones [`Part`]
/// reduces modulo its count included) depends on every input bit. Defined byte for byte, so the
/// same on every run, host and Rust release (a test pins its values); not cryptographic.
pub(super) fn fingerprint(bytes: &[u8]) -> u64 {
    fmix64(fnv1a64(bytes))
}

pub(super) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

fn fmix64(mut hash: u64) -> u64 {
    hash = (hash ^ (hash >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash = (hash ^ (hash >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// A `(who, amount)` pair as a tally hashes it: both little-endian.
pub(super) fn pair(who: u64, amount_cents: Cents) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&who.to_le_bytes());
    bytes[8..].copy_from_slice(&amount_cents.to_le_bytes());
    bytes
}

/// A sum overflowed its type; the caller names the item ([`BooksError::Overflow`](super::BooksError)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Overflow;

/// Cents summed within one account: checked arithmetic only, never wrapping nor saturating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Sum(Cents);

impl Sum {
    pub(super) const fn cents(self) -> Cents {
        self.0
    }

    fn plus(self, amount_cents: Cents) -> Result<Self, Overflow> {
        self.0.checked_add(amount_cents).map(Sum).ok_or(Overflow)
    }
}

impl fmt::Display for Sum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Cents summed across accounts (the trial balance's figures), checked likewise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Total(u128);

impl Total {
    pub(super) const fn get(self) -> u128 {
        self.0
    }

    pub(super) fn plus(self, amount_cents: u128) -> Result<Self, Overflow> {
        self.0.checked_add(amount_cents).map(Total).ok_or(Overflow)
    }
}

/// A multiset of `(who, amount)` pairs, kept as a count, a sum and a sum of hashes: two tallies
/// are equal when they hold the same pairs (up to a 2⁻⁶⁴ chance), in a few bytes.
/// 24 bytes: one packet's accumulator holds three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Tally {
    pub(super) count: u32,
    pub(super) cents: Sum,
    hashes: u64,
}

impl Tally {
    /// The tally of the one pair `(who, amount_cents)`.
    pub(super) fn one(who: u64, amount_cents: Cents) -> Self {
        Tally { count: 1, cents: Sum(amount_cents), hashes: fingerprint(&pair(who, amount_cents)) }
    }

    /// Adds `amount_cents` to or from the account whose [`fingerprint`] is `who`; on
    /// [`Overflow`] (of the count or the cents) it is left as it was.
    pub(super) fn add(&mut self, who: u64, amount_cents: Cents) -> Result<(), Overflow> {
        let count = self.count.checked_add(1).ok_or(Overflow)?;
        self.cents = self.cents.plus(amount_cents)?;
        self.count = count;
        // Modulo 2⁶⁴ on purpose: the multiset's hash, not money.
        self.hashes = self.hashes.wrapping_add(fingerprint(&pair(who, amount_cents)));
        Ok(())
    }
}

pub(super) fn who(user: &UserId) -> u64 {
    fingerprint(user.as_str().as_bytes())
}

/// One packet's accumulator: what its own collection says, and what the movements say
/// (136 bytes with its key: memory is per packet, never per item).
#[derive(Debug, Default)]
pub(super) struct PacketAcc {
    /// The record's sender (fingerprint) and total, once read.
    pub(super) sender: u64,
    pub(super) total: Cents,
    /// [`PacketAcc::READ`], [`PacketAcc::RECORDED`], [`PacketAcc::FINALISED`].
    pub(super) flags: u8,
    /// Its grab items and refund item, as of the cut-off: who is owed what.
    pub(super) paid: Tally,
    /// The grab and refund credits: who was credited what.
    pub(super) credited: Tally,
    /// The debits of its total.
    pub(super) debits: Tally,
    /// Its grabs' credits by grabber alone (no amounts): matched against its claims' holders
    /// when the claims stand for the grabs.
    pub(super) grabbers: Tally,
}

impl PacketAcc {
    /// Its collection was read.
    pub(super) const READ: u8 = 1;
    /// Its record was read, and counts as of the cut-off.
    pub(super) const RECORDED: u8 = 2;
    /// Finalised as of the cut-off.
    pub(super) const FINALISED: u8 = 4;
    /// Its grabs were read from its claims (with the wallet, a grab's record is its credit).
    pub(super) const CLAIMS: u8 = 8;

    pub(super) fn read(&self) -> bool {
        self.flags & Self::READ != 0
    }

    /// The record as of the cut-off: the sender's fingerprint, the total, finalised.
    pub(super) fn record(&self) -> Option<(u64, Cents, bool)> {
        (self.flags & Self::RECORDED != 0).then_some((self.sender, self.total, self.flags & Self::FINALISED != 0))
    }
}

/// What a record outside the packets promises a wallet: a top-up's credit, a withdrawal's
/// debit, a failed withdrawal's return, an adjustment's credit or debit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum RecordKind {
    Topup,
    Withdrawal,
    WithdrawalReturn,
    AdjustmentCredit,
    AdjustmentDebit,
}

impl RecordKind {
    /// The subject of its differences: `topup:<reference>`, `withdrawal:<id>`, …
    pub(super) fn subject(self, reference: &str) -> String {
        let kind = match self {
            RecordKind::Topup => "topup",
            RecordKind::Withdrawal => "withdrawal",
            RecordKind::WithdrawalReturn => "withdrawal_return",
            RecordKind::AdjustmentCredit | RecordKind::AdjustmentDebit => "adjustment",
        };
        format!("{kind}:{reference}")
    }

    /// What its movement is, as a difference names it.
    pub(super) fn movement(self) -> &'static str {
        match self {
            RecordKind::Topup => "top-up credit",
            RecordKind::Withdrawal => "withdrawal debit",
            RecordKind::WithdrawalReturn => "failed withdrawal's return",
            RecordKind::AdjustmentCredit => "adjustment credit",
            RecordKind::AdjustmentDebit => "adjustment debit",
        }
    }
}

/// One record's accumulator: what it promises (as of the cut-off) and what the wallets moved for it.
#[derive(Debug, Default)]
pub(super) struct RecordAcc {
    pub(super) read: bool,
    pub(super) expected: Tally,
    pub(super) moved: Tally,
}

/// A packet id's 128 bits as two words: 8-byte aligned, so an accumulator with its key is 136
/// bytes, not 144.
pub(super) type PacketKey = [u64; 2];

pub(super) fn packet_key(id: &PacketId) -> PacketKey {
    let bits =
        u128::from_str_radix(id.as_str(), 16).unwrap_or_else(|_| u128::from(fingerprint(id.as_str().as_bytes())));
    [(bits >> 64) as u64, bits as u64]
}

/// A packet key's 128 bits, big-endian: the id's own hex digits, read as a number.
pub(super) fn packet_bytes(key: PacketKey) -> [u8; 16] {
    (u128::from(key[0]) << 64 | u128::from(key[1])).to_be_bytes()
}

pub(super) fn packet_name(key: PacketKey) -> String {
    format!("{:016x}{:016x}", key[0], key[1])
}
