//! The operations' ports: withdrawals, adjustments, holds, flags, the risk ledger, the audit
//! trail, the hourly view and the reports' sink.

use super::*;
use crate::domain::hourly::{Counted, Measure, Tally};

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

    /// Sends withdrawal `id`'s order to the payments system again, by `by` (in the audit trail,
    /// in the same write): its `WithdrawalRequested` event once more, the same event id, which
    /// the write itself publishes. Only while it is pending (the write's condition) and overdue
    /// ([`resend_allowed`](crate::domain::withdrawal::resend_allowed), else
    /// [`StoreError::Invalid`] on `withdrawal_id`), once per hour ([`ResendResult::changed`]
    /// false for the hour's second). Moves no money.
    fn resend_withdrawal(
        &self,
        id: &str,
        by: &Attribution,
        now_ms: Millis,
    ) -> impl Future<Output = Result<ResendResult, StoreError>> + Send;
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

    /// The adjustment under `reference`, whatever its state; `None` when nothing was proposed
    /// under it.
    fn adjustment(&self, reference: &str) -> impl Future<Output = Result<Option<Adjustment>, StoreError>> + Send;

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

/// The hourly view of the business (`domain::hourly`), kept in the ledger.
pub trait BusinessHours: Send + Sync {
    /// Adds `counted` to its hour's shard unless its event was counted before, in one write
    /// whose condition is that mark (kept [`crate::domain::hourly::COUNTED_MARK_KEPT_MS`] from `now_ms`): `true` when it
    /// was counted now, `false` for an event counted already.
    fn count_event(&self, counted: &Counted, now_ms: Millis) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Business day `day`'s tallies as kept, `(hour, measure, tally)` per shard that holds any.
    fn day_tallies(&self, day: &str) -> impl Future<Output = Result<Vec<(u8, Measure, Tally)>, StoreError>> + Send;
}

/// Where reports go: a bucket in AWS, a directory locally. Write-once: a report filed under a
/// key is never rewritten.
pub trait ReportSink: Send + Sync {
    /// Files `body` under `key` (`trial-balance/2026-11-23.csv`, …) unless a report is filed
    /// there already, which is then left as it is; returns where the report is.
    fn put(&self, key: &str, body: String) -> impl Future<Output = Result<String, StoreError>> + Send;
}
