//! The ledger's ports (DynamoDB): packets, history, the books, wallets.

use super::*;

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

    /// One page of a finalised packet ([`SettledPage`]): the grabs of shares `from` to
    /// `from + len - 1`, with the totals settle wrote when it finalised it. `None` when the
    /// ledger holds no such packet, holds it open, or finalised it before the totals were kept:
    /// then [`Ledger::ledger_packet`] says it all. This default reads the whole packet; DynamoDB
    /// reads the page's share claims alone.
    fn settled_page(
        &self,
        id: &PacketId,
        from: u32,
        len: u32,
    ) -> impl Future<Output = Result<Option<SettledPage>, StoreError>> + Send {
        async move {
            let Some(recorded) = self.ledger_packet(id).await? else { return Ok(None) };
            if recorded.status == crate::domain::PacketStatus::Open {
                return Ok(None);
            }
            let end = from.saturating_add(len);
            let totals = recorded.packet.view(&recorded.packet.sender, &recorded.grabs, recorded.status, None);
            Ok(Some(SettledPage {
                grabs: recorded.grabs.iter().filter(|grab| (from..end).contains(&grab.seq)).cloned().collect(),
                more: recorded.grabs.iter().any(|grab| grab.seq >= end),
                grab_count: totals.shared.grab_count,
                best_luck: totals.shared.best_luck,
                status: recorded.status,
                refund_cents: recorded.refund_cents.unwrap_or(totals.shared.remaining_cents),
                packet: recorded.packet,
            }))
        }
    }

    /// The version of `user`'s wallet and history as the ledger keeps it beside them, in one key
    /// read: it changes with every movement of their wallet. `None` when this ledger keeps none
    /// (no wallets): then a poll builds its answer.
    fn user_version(&self, user: &UserId) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        let _ = user;
        async { Ok(None) }
    }

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

/// One page of a finalised packet as the ledger holds it ([`Ledger::settled_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledPage {
    /// The packet as sent.
    pub packet: Packet,
    /// How settle finalised it.
    pub status: crate::domain::PacketStatus,
    /// What went back to its sender.
    pub refund_cents: Cents,
    /// How many grabs it had in all.
    pub grab_count: u32,
    /// Its best luck, when every share was taken.
    pub best_luck: Option<crate::domain::grab::BestLuck>,
    /// The page's grabs, by share.
    pub grabs: Vec<LoggedGrab>,
    /// True when a grab of a later share follows the page.
    pub more: bool,
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
