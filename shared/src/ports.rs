//! The narrow traits the handlers and settle see: what they need of the live store (Redis) and
//! of the ledger (DynamoDB), nothing more. The domain knows nothing of these; the adapters
//! implement them; the handlers, `packets`, `funds` and `settle` use them. A port fails with a
//! [`StoreError`], in the stores' terms: the HTTP edge alone turns it into a status code, and
//! settle alone decides from it whether to skip a packet or stop.

use std::future::Future;
use std::time::Duration;

use crate::clock::{Clock, Millis};
use crate::domain::adjustment::{
    Adjustment, AdjustmentApproval, AdjustmentClosing, AdjustmentProposal, AdjustmentResult,
};
use crate::domain::audit::AuditEntry;
use crate::domain::books::{BooksFold, MovementRecord, Reread};
use crate::domain::grab::{GrabAttempt, LoggedGrab};
use crate::domain::history::{HistoryPage, Role};
use crate::domain::ledger::{LedgerPacket, Refusal};
pub use crate::domain::live::{CancelOutcome, CloseOutcome, PacketImage};
use crate::domain::patterns::{
    ChatLog, FlagAssignment, FlagResolution, FlagResolved, FlagStatus, PairFlow, PairGrab, RiskFlag,
};
use crate::domain::recovery::Casualty;
use crate::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use crate::domain::settlement::Finalisation;
use crate::domain::wallet::{TopUp, TopUpResult, WalletPage};
use crate::domain::withdrawal::{
    ResolutionResult, Withdrawal, WithdrawalReceipt, WithdrawalRequest, WithdrawalResolution, WithdrawalStatus,
};
use crate::domain::{
    BusinessDay, Cents, ChatId, Currency, GrabOutcome, IdempotencyKey, Invalid, LivePacket, Packet, PacketId, UserId,
};

/// The longest a ledger write may take to land after its write stamp: the ledger's promise,
/// which reconciliation relies on (nothing stamped before a cut-off this far back is still in
/// flight). The DynamoDB adapter's timeouts and retries are checked against it at compile time.
pub const WRITES_LAND_WITHIN: Duration = Duration::from_secs(51);

/// Why a port's call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached, or did not answer in time: nothing is known to have
    /// changed, and the same call may succeed later.
    #[error("{store} is unavailable: {detail}")]
    Unavailable {
        /// Which store: "redis", "dynamodb" or "s3".
        store: &'static str,
        /// What went wrong, for the logs.
        detail: String,
    },
    /// A record that cannot be read as the layout says, or that breaks an invariant: the
    /// record's fault, not the store's. Settle skips the packet and names it.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The store refused a write of this record for reasons of its own (too large, invalid),
    /// not a condition of ours. Settle skips the packet and names it.
    #[error("the store refused a write: {0}")]
    Rejected(String),
    /// A condition of the write refused it: the request cannot be carried out as asked.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// An argument the store cannot use (a cursor it never issued, a top-up reference used
    /// for another amount), named by its field.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

impl StoreError {
    /// Redis cannot be reached.
    pub fn redis_unavailable(detail: impl std::fmt::Display) -> Self {
        StoreError::Unavailable { store: "redis", detail: detail.to_string() }
    }

    /// DynamoDB cannot be reached.
    pub fn dynamodb_unavailable(detail: impl std::fmt::Display) -> Self {
        StoreError::Unavailable { store: "dynamodb", detail: detail.to_string() }
    }

    /// An argument the store cannot use.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        StoreError::Invalid(Invalid::field(field, message))
    }

    /// True when the failure is the packet's own (its data), so settle skips it and goes on;
    /// false when the store is at fault, so settle stops the run.
    pub fn is_the_records_fault(&self) -> bool {
        matches!(self, StoreError::Corrupt(_) | StoreError::Rejected(_))
    }
}

/// A write the ledger's conditions refused, for a reason the caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// The packet does not exist.
    #[error("no such packet")]
    NoSuchPacket,
    /// The caller did not send the packet.
    #[error("only the packet's sender may do this")]
    NotTheSender,
    /// The packet is finished, expired or finalised.
    #[error("the packet is no longer open")]
    NotOpen,
    /// An idempotency key reused with another request.
    #[error("the idempotency key was used with another request")]
    IdempotencyKeyReused,
    /// The send would pass one of the sender's daily limits, named.
    #[error("the send would pass the daily limit {0}")]
    LimitExceeded(&'static str),
    /// The sender's balance is below the packet's total.
    #[error("the balance is below the packet's total")]
    InsufficientFunds,
    /// This deployment keeps no wallets (`FUNDS=none`).
    #[error("this deployment keeps no wallets")]
    NoWallets,
}

/// What the live store answered for one grab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveAnswer {
    /// Decided by the live store.
    Decided(GrabOutcome),
    /// The live store does not hold the packet: the ledger decides, as of `now_ms` (the clock
    /// reading the live store judged the grab at).
    NotHeld {
        /// The grab's instant.
        now_ms: Millis,
        /// This caller holds the id's lookup: it reports what the ledger said with
        /// [`LiveStore::ledger_said`], for the callers waiting on it.
        holds_lookup: bool,
    },
}

/// The live, atomic side of packets (Redis).
pub trait LiveStore: Send + Sync {
    /// Makes `packet` grabbable with `shares`, and indexes it for settle. Idempotent: loading a
    /// packet already loaded changes nothing and is not an error.
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Loads `image`, a packet the ledger holds open, with the grabs the ledger already has and
    /// the shares still to hand out. Changes nothing when the live store holds anything of the
    /// packet.
    fn restore(&self, image: PacketImage<'_>) -> impl Future<Output = Result<Restored, StoreError>> + Send;

    /// The packet's meta and whole grab log at one instant; `None` when Redis does not hold it.
    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, StoreError>> + Send;

    /// One grab attempt decided at `clock`'s now on a packet the live store holds: atomic, at
    /// most one share per user, only for the packet's recipients and with its passphrase. A
    /// packet it does not hold is `NotHeld`: one caller at a time per id is told to ask the
    /// ledger (`holds_lookup`), the others wait for its verdict. The use case is
    /// [`crate::packets::grab`].
    fn try_grab(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send;

    /// [`LiveStore::try_grab`] for the same request once more, after the ledger was asked (and
    /// the packet perhaps reloaded): a store that counts grabs against a rate (the grab rate
    /// across packets) does not count this one again.
    fn try_grab_again(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        self.try_grab(packet, attempt, clock)
    }

    /// What the ledger said of `packet`, reported by the caller that held its lookup:
    /// `Some(true)` recorded, `Some(false)` absent, `None` it could not be asked (the lookup is
    /// released so the next grab asks again).
    fn ledger_said(
        &self,
        packet: &PacketId,
        recorded: Option<bool>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes an open packet to grabs as cancelled at `now_ms`, and marks it for settle, which
    /// refunds the rest. Idempotent.
    fn cancel(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;
}

/// What restoring a packet into the live store came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// Loaded now.
    Loaded,
    /// The live store held it already: nothing changed.
    AlreadyHeld,
    /// The live store lost part of it (its record, not its log): nothing changed; only settle's
    /// re-sync, which records the log's grabs first, may replace it.
    Partial,
}

/// What freezing a packet for a re-sync found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frozen {
    /// The live store holds nothing of the packet.
    Missing,
    /// Frozen: closed to fresh grabs until the re-sync's replace (or the next freeze).
    Log {
        /// Every grab the live store holds, read at the instant of the freeze, in grab order.
        grabs: Vec<LoggedGrab>,
        /// True when the packet's record was gone while its shares or log were not.
        partial: bool,
    },
}

/// A sender's claim on an `Idempotency-Key`: the key and a hash of the validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The header's value.
    pub key: IdempotencyKey,
    /// SHA-256 of the validated request, hex.
    pub request_hash: String,
}

/// What recording a new packet came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The packet is recorded now.
    New,
    /// The same sender, key and body made this packet earlier: use it, make no other.
    Replay(Box<Packet>),
}

/// The durable side of packets (DynamoDB).
pub trait Ledger: Send + Sync {
    /// The currency every amount of the ledger is minor units of (the stack's one).
    fn currency(&self) -> Currency;

    /// Records a new packet, at most once per id and per idempotency claim, and counts it
    /// against its sender's daily limits in the same write. A claim whose key was used with
    /// another body is [`Conflict::IdempotencyKeyReused`]; a replay is not counted again; a
    /// send over a limit is [`Conflict::LimitExceeded`] and records nothing.
    fn record_packet(
        &self,
        packet: &Packet,
        claim: Option<&IdempotencyClaim>,
    ) -> impl Future<Output = Result<Recorded, StoreError>> + Send;

    /// Everything the ledger holds of packet `id`: record, grabs, refund.
    fn ledger_packet(&self, id: &PacketId) -> impl Future<Output = Result<Option<LedgerPacket>, StoreError>> + Send;

    /// Records that `sender` cancelled packet `id` at `now_ms`, under a condition: the packet
    /// is theirs ([`Conflict::NotTheSender`]), still open and not expired ([`Conflict::NotOpen`]).
    /// Cancelling a cancelled packet again succeeds and changes nothing.
    fn cancel(
        &self,
        id: &PacketId,
        sender: &UserId,
        now_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One page of `user`'s own history in `role`, newest first.
    fn history(
        &self,
        user: &UserId,
        role: Role,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<HistoryPage, StoreError>> + Send;

    /// `user`'s balance and one page of their movements, newest first
    /// ([`Conflict::NoWallets`] when this deployment keeps no wallets).
    fn wallet(
        &self,
        user: &UserId,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<WalletPage, StoreError>> + Send;
}

/// Which page of a listing the caller asks for: at most `limit` entries, from `cursor` (what
/// the page before handed out; `None` for the first page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest<'a> {
    /// The most entries the page holds.
    pub limit: u32,
    /// Where the page starts: the cursor the page before handed out.
    pub cursor: Option<&'a str>,
}

/// A page of an operators' queue ([`Adjustments::pending_adjustments`],
/// [`Withdrawals::pending_withdrawals`], [`Flags::flags`]), oldest first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct QueuePage<T> {
    /// What waits, oldest first.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last.
    pub next_cursor: Option<String>,
}

/// The ledger as a whole, for reconciliation.
pub trait Books: Send + Sync {
    /// Feeds every item the books read to `fold`, each item collection whole (strongly
    /// consistent item by item, not one snapshot: the fold reads as of a cut-off).
    fn read_into(&self, fold: &mut BooksFold) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// `user`'s balance and the sum of their movements read again, so that they agree in time.
    fn wallet_exact(&self, user: &UserId) -> impl Future<Output = Result<Reread, StoreError>> + Send;

    /// Every movement of `user`'s wallet (strongly consistent), for their statement.
    fn movements_of(&self, user: &UserId) -> impl Future<Output = Result<Vec<MovementRecord>, StoreError>> + Send;

    /// The business day the books count days by (daily limits, trial balances, statements).
    fn business_day(&self) -> BusinessDay;

    /// The currency the books' amounts are minor units of.
    fn currency(&self) -> Currency;
}

/// The wallets' side of the ledger that only the payments system drives.
pub trait Wallets: Send + Sync {
    /// Credits `topup.user` once per `topup.reference`, at `now_ms`: the same reference again
    /// changes nothing (`applied: false`); with another user or amount it is
    /// [`StoreError::Invalid`] on `reference`. [`Conflict::NoWallets`] under `FUNDS=none`.
    fn top_up(&self, topup: &TopUp, now_ms: Millis) -> impl Future<Output = Result<TopUpResult, StoreError>> + Send;
}

/// Money out of the wallets: a user's withdrawal, and the payments system's word on it.
pub trait Withdrawals: Send + Sync {
    /// Debits `request.amount_cents` from `user`'s balance into pending withdrawal `id`, at
    /// `now_ms`, once: a withdrawal `id` asked for before with the same amount and destination
    /// is answered as it is now (`created: false`); with others it is
    /// [`Conflict::IdempotencyKeyReused`]. A balance short of the amount is
    /// [`Conflict::InsufficientFunds`], and nothing changes; [`Conflict::NoWallets`] under `FUNDS=none`.
    fn request_withdrawal(
        &self,
        user: &UserId,
        id: &str,
        request: &WithdrawalRequest,
        now_ms: Millis,
    ) -> impl Future<Output = Result<WithdrawalReceipt, StoreError>> + Send;

    /// Withdrawal `id` as it is now (its user, amount, destination and state); `None` when the
    /// ledger holds none: what the payments system reads to pay one out.
    fn withdrawal(&self, id: &str) -> impl Future<Output = Result<Option<Withdrawal>, StoreError>> + Send;

    /// Resolves pending withdrawal `resolution.withdrawal_id` to `outcome` (`Paid`: the money
    /// has left; `Failed`: it goes back to the balance), once: the same word again changes
    /// nothing (`applied: false`); a contradicting one, or an unknown id, is
    /// [`StoreError::Invalid`] on `withdrawal_id`.
    fn resolve_withdrawal(
        &self,
        resolution: &WithdrawalResolution,
        outcome: WithdrawalStatus,
        now_ms: Millis,
    ) -> impl Future<Output = Result<ResolutionResult, StoreError>> + Send;

    /// A page of the withdrawals still pending, oldest first, read through an index that holds
    /// only those (the resolution takes one out in its own write).
    fn pending_withdrawals(
        &self,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<QueuePage<Withdrawal>, StoreError>> + Send;
}

/// Corrections to the wallets: adjustments one operator proposes and another approves.
pub trait Adjustments: Send + Sync {
    /// Records `proposal`, once per reference (the same proposal again changes nothing; another
    /// under its reference is [`StoreError::Invalid`]). It moves no money.
    fn propose_adjustment(
        &self,
        proposal: &AdjustmentProposal,
        now_ms: Millis,
    ) -> impl Future<Output = Result<AdjustmentResult, StoreError>> + Send;

    /// Applies the proposal `approval.reference` names, once, if its approver is not its
    /// proposer ([`StoreError::Invalid`] on `approver` otherwise); a debit the balance does not
    /// cover, or a chargeback its top-up does not allow, is [`StoreError::Invalid`] and it stays
    /// proposed.
    fn approve_adjustment(
        &self,
        approval: &AdjustmentApproval,
        now_ms: Millis,
    ) -> impl Future<Output = Result<AdjustmentResult, StoreError>> + Send;

    /// Rejects or withdraws the proposal `closing.reference` names, once, while it is proposed:
    /// a rejection never by its proposer, a withdrawal only by them ([`StoreError::Invalid`] on
    /// `operator` otherwise); the same closing again changes nothing (`applied: false`); an
    /// adjustment applied or closed the other way is [`StoreError::Invalid`] on `reference`.
    fn close_adjustment(
        &self,
        closing: &AdjustmentClosing,
        now_ms: Millis,
    ) -> impl Future<Output = Result<AdjustmentResult, StoreError>> + Send;

    /// A page of the proposals still proposed, oldest first, read through an index that holds
    /// only those.
    fn pending_adjustments(
        &self,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<QueuePage<Adjustment>, StoreError>> + Send;
}

/// Account holds: operators place and lift them (each step in the audit trail, in its own
/// write), and every grab and send function reads those in force into its
/// [`HoldBook`](crate::domain::risk::HoldBook).
pub trait Holds: Send + Sync {
    /// Holds `request.user` from `request.scope`: changes nothing when the same hold is in force
    /// (`changed: false`), replaces a hold of another scope.
    fn place_hold(
        &self,
        request: &HoldRequest,
        now_ms: Millis,
    ) -> impl Future<Output = Result<HoldResult, StoreError>> + Send;

    /// Lifts `request.user`'s hold: changes nothing when none is in force.
    fn lift_hold(
        &self,
        request: &LiftRequest,
        now_ms: Millis,
    ) -> impl Future<Output = Result<HoldResult, StoreError>> + Send;

    /// A number that changes whenever a hold is placed or lifted (0 before the first): a
    /// reader whose book has this version need not read the holds again.
    fn holds_version(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Every hold in force, strongly consistent.
    fn holds(&self) -> impl Future<Output = Result<Vec<Hold>, StoreError>> + Send;
}

/// Risk flags, as operators see them: listed, and resolved once each (the resolution in the
/// audit trail, in the same write).
pub trait Flags: Send + Sync {
    /// A page of the flags naming `user`, newest first (each as it stands now), read through
    /// their mentions in the user's partition of the history index.
    fn flags_of_user(
        &self,
        user: &UserId,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<QueuePage<RiskFlag>, StoreError>> + Send;

    /// A page of the flags of `status`, oldest first, read through an index keyed by status.
    fn flags(
        &self,
        status: FlagStatus,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<QueuePage<RiskFlag>, StoreError>> + Send;

    /// Assigns a flag still open to `assignment.assignee` (again: to another); changes nothing
    /// when it is resolved (`changed: false`, the flag as it stands) or not there (`flag: None`).
    fn assign_flag(
        &self,
        assignment: &FlagAssignment,
        now_ms: Millis,
    ) -> impl Future<Output = Result<FlagResolved, StoreError>> + Send;

    /// Resolves a flag still open: changes nothing when it was resolved before (`changed:
    /// false`, the flag as it stands) or is not there (`flag: None`).
    fn resolve_flag(
        &self,
        resolution: &FlagResolution,
        now_ms: Millis,
    ) -> impl Future<Output = Result<FlagResolved, StoreError>> + Send;
}

/// The pattern rules' state and the flags they raise ([`crate::domain::patterns`]). Each
/// counting write is conditioned on what it counts, so a redelivered event counts nothing twice,
/// and answers the count as it stands either way, so a delivery that failed after counting
/// finds what it had found when it is delivered again.
pub trait RiskLedger: Send + Sync {
    /// The packet as sent (its own item only; no grabs), if it is in the ledger.
    fn sent_packet(&self, id: &PacketId) -> impl Future<Output = Result<Option<Packet>, StoreError>> + Send;

    /// The chat's log and its version (0 before the first save).
    fn chat_log(&self, chat: &ChatId) -> impl Future<Output = Result<(ChatLog, u64), StoreError>> + Send;

    /// Saves the chat's log over `version`, kept until `keep_until_ms`: false when another
    /// writer saved it since (read it again and redo the step).
    fn save_chat_log(
        &self,
        chat: &ChatId,
        log: &ChatLog,
        version: u64,
        keep_until_ms: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Counts `chat` among the chats `user` grabbed in on business day `day`, once: the user's
    /// count of that day with it, whether this call or an earlier one counted it. Counting stops
    /// past `limit + 1`, where nothing more is to be found.
    fn count_chat(
        &self,
        user: &UserId,
        day: &str,
        chat: &ChatId,
        limit: u32,
    ) -> impl Future<Output = Result<u32, StoreError>> + Send;

    /// Counts `grab` in its pair's flow of its cycle window, once: the flow with it, whether
    /// this call or an earlier one counted it. Counting stops at `grab.most_grabs` grabs in the
    /// window, which bounds the item.
    fn count_flow(&self, grab: PairGrab<'_>) -> impl Future<Output = Result<PairFlow, StoreError>> + Send;

    /// The flag of `flag_id`, if raised.
    fn flag(&self, flag_id: &str) -> impl Future<Output = Result<Option<RiskFlag>, StoreError>> + Send;

    /// Raises `flag` with its `RiskFlagged` event: false when it was raised before.
    fn raise_flag(&self, flag: &RiskFlag) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// The operators' audit trail, by business day.
pub trait AuditTrail: Send + Sync {
    /// Every entry of business day `day` (`YYYY-MM-DD`), in time order.
    fn audit_of_day(&self, day: &str) -> impl Future<Output = Result<Vec<AuditEntry>, StoreError>> + Send;

    /// A page of the entries concerning `user` (their holds, adjustments, withdrawals' words),
    /// every day's, newest first.
    fn audit_of_user(
        &self,
        user: &UserId,
        page: PageRequest<'_>,
    ) -> impl Future<Output = Result<QueuePage<AuditEntry>, StoreError>> + Send;

    /// Records `entry`, made at `at_ms`, on its own (an action whose write is elsewhere: a
    /// release from quarantine, in the live store). The ledger's own actions write theirs in
    /// their transaction.
    fn record(&self, entry: AuditEntry, at_ms: Millis) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Where reports go: a bucket in AWS, a directory locally. Write-once: a report filed under a
/// key is never rewritten.
pub trait ReportSink: Send + Sync {
    /// Files `body` under `key` (`trial-balance/2026-11-23.csv`, …) unless a report is filed
    /// there already, which is then left as it is; returns where the report is.
    fn put(&self, key: &str, body: String) -> impl Future<Output = Result<String, StoreError>> + Send;
}

/// The live store's index of packets for settle, and what settle does to each packet there:
/// which packets have work, closing, progress marks, re-sync, retirement and quarantine. Shards
/// split the open packets so that several settle invocations share them.
pub trait SettleIndex: LiveStore {
    /// How many shards index open packets (`SETTLE_SHARDS`).
    fn settle_shards(&self) -> u32;

    /// The packets of `shard` with work: grabs not yet persisted, or due at `now_ms` (expired),
    /// and retired packets whose keys a failover brought back after they should have lapsed.
    fn packets_with_work(
        &self,
        shard: u32,
        now_ms: Millis,
    ) -> impl Future<Output = Result<Vec<PacketId>, StoreError>> + Send;

    /// After settle's pass over `id`: clears its mark, and marks it again if grabs made since
    /// are not persisted.
    fn settled_pass(&self, id: &PacketId, shard: u32) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes the packet to grabs if it is finished or expired at `now_ms` (a cancelled packet
    /// is closed already).
    fn close(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CloseOutcome, StoreError>> + Send;

    /// True when the replicas hold every write made to `id` so far (always, without replicas
    /// to wait for): only such grabs are persisted, so a failover cannot take one back.
    fn replicas_hold(&self, id: &PacketId) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Records that the first `confirmed` grabs of `id`'s log are in the ledger.
    /// Nothing changes unless `last` is still the `confirmed`-th grab of the log (a failover may
    /// have put other grabs in those places).
    fn mark_persisted(
        &self,
        id: &PacketId,
        confirmed: usize,
        last: &LoggedGrab,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes packet `id` to fresh grabs for a re-sync under `token`, and reads its whole grab
    /// log at that instant.
    fn freeze(&self, id: &PacketId, token: &str) -> impl Future<Output = Result<Frozen, StoreError>> + Send;

    /// Replaces what the live store holds of a packet with the ledger's state (`image`), if and
    /// only if the freeze under `token` still stands. False when it does not (a failover lost
    /// it, or another re-sync froze the packet since): nothing changed.
    fn resync(&self, image: PacketImage<'_>, token: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// After the ledger was restored from a backup: every packet of `shard` Redis still holds
    /// (indexed, or retired with its keys not yet lapsed) is to be settled again from its first
    /// grab: its persisted mark back to 0, marked dirty, indexed by its expiry, its keys kept.
    /// The ledger's conditional writes take what it lacks and refuse what it holds. How many.
    fn replay_held(&self, shard: u32) -> impl Future<Output = Result<u32, StoreError>> + Send;

    /// Takes a finalised packet out of `shard`'s work and lets its keys lapse shortly; once they
    /// should have lapsed (after `now_ms`), settle looks once more, in case a failover brought
    /// them back (see [`SettleIndex::packets_with_work`]).
    fn retire(&self, id: &PacketId, shard: u32, now_ms: Millis) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets a packet whose books cannot balance aside for an operator, out of `shard`, closed
    /// to grabs.
    fn quarantine(
        &self,
        id: &PacketId,
        shard: u32,
        now_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The packets in quarantine, oldest first, with when each was set aside (at most `limit`).
    fn quarantined(&self, limit: usize) -> impl Future<Output = Result<Vec<(PacketId, Millis)>, StoreError>> + Send;

    /// Takes packet `id` out of quarantine and puts it back in settle's work (due now); false
    /// when it was not in quarantine. Settle then finalises it, or quarantines it again when the
    /// ledger still does not explain it.
    fn release(&self, id: &PacketId) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// Where settle's runs stand, kept in the live store: where a run over a range of shards
/// resumes, the recovery sweep's rotation, and the earlier shard layouts still to drain. A range
/// is `[first, last]` shard.
pub trait SettleCursor: Send + Sync {
    /// Where a run over `range` that stopped early left off.
    fn resume_shard(&self, range: [u32; 2]) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send;

    /// Records where the next run over `range` starts (`None` after a complete run).
    fn set_resume_shard(
        &self,
        range: [u32; 2],
        shard: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The recovery sweep's next shard for `range` and when it is due; `None` when the live
    /// store has no record of it (never swept, or it lost its data).
    fn sweep_state(&self, range: [u32; 2]) -> impl Future<Output = Result<Option<(u32, Millis)>, StoreError>> + Send;

    /// Records the recovery sweep's next shard for `range` and when it is due.
    fn set_sweep_state(
        &self,
        range: [u32; 2],
        next_shard: u32,
        due_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every `SETTLE_SHARDS` value packets were indexed under since its shards last drained.
    fn settle_layouts(&self) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Forgets an earlier `SETTLE_SHARDS` value once its extra shards are empty.
    fn forget_settle_layout(&self, shards: u32) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The settle side of the ledger: recording grabs under conditions, and finalising.
pub trait SettleLedger: Ledger + AuditTrail {
    /// The packets of `shard` the ledger holds open (the recovery sweep).
    fn open_packets(&self, shard: u32) -> impl Future<Output = Result<Vec<PacketId>, StoreError>> + Send;

    /// Records grabs, each claiming its share then writing its grab item under conditions that
    /// refuse paying a share or a user twice. Returns the grabs refused.
    fn record_grabs(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
    ) -> impl Future<Output = Result<Vec<Refusal>, StoreError>> + Send;

    /// Writes the grab item of a grab whose share claim is written; true when the ledger
    /// refused it (the user already holds a grab item for another share or amount).
    fn put_grab_item(
        &self,
        packet: &Packet,
        grab: &LoggedGrab,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Records that settle runs with `current` shards (`SETTLE_SHARDS`) and returns every value
    /// recorded so far: the open index's partitions of a larger earlier value are swept too.
    fn settle_layouts(&self, current: u32) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Records a casualty of a disagreement between the live store and the ledger, once, with
    /// its event (`GrabRegranted` / `GrabRevoked`).
    fn record_casualty(
        &self,
        packet: &Packet,
        casualty: &Casualty,
        now_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Claims `shares` (seq, amount) for the refund; returns the seqs a grab claimed first.
    fn claim_for_refund(
        &self,
        packet: &Packet,
        shares: &[(u32, Cents)],
    ) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Writes the refund and closes the packet in one transaction; false when it was finalised already.
    fn finalise(
        &self,
        packet: &Packet,
        result: &Finalisation,
        now_ms: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl<T: LiveStore> LiveStore for std::sync::Arc<T> {
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).load(packet, shares)
    }

    fn restore(&self, image: PacketImage<'_>) -> impl Future<Output = Result<Restored, StoreError>> + Send {
        (**self).restore(image)
    }

    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, StoreError>> + Send {
        (**self).snapshot(id)
    }

    fn try_grab(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        (**self).try_grab(packet, attempt, clock)
    }

    fn try_grab_again(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        (**self).try_grab_again(packet, attempt, clock)
    }

    fn ledger_said(
        &self,
        packet: &PacketId,
        recorded: Option<bool>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).ledger_said(packet, recorded)
    }

    fn cancel(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        (**self).cancel(id, now_ms)
    }
}
