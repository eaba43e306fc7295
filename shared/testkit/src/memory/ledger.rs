//! The ledger in memory, each write guarded as DynamoDB's is: a send under its daily limits,
//! its idempotency claim and (with the wallet) its balance; a cancel by the sender of an open
//! packet; a share claimed once; a user paid once per packet; a packet finalised once. Two
//! switches inject the faults settle must survive: an unreachable ledger, a slow one, and a packet whose
//! writes the store rejects (a poison record).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use red_packets::clock::{rfc3339, Millis};
use red_packets::config::Config;
use red_packets::domain::audit::{Attribution, AuditEntry};
use red_packets::domain::grab::LoggedGrab;
use red_packets::domain::history::{HistoryItem, HistoryPage, Role};
use red_packets::domain::hourly::{Counted, Measure, Tally};
use red_packets::domain::ledger::{LedgerPacket, Refusal, ShareClaim, ShareHolder};
use red_packets::domain::patterns::{
    ChatLog, FlagAssignment, FlagResolution, FlagResolved, FlagStatus, PairFlow, PairGrab, RiskFlag,
};
use red_packets::domain::recovery::{Casualty, Remedy};
use red_packets::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use red_packets::domain::settlement::Finalisation;
use red_packets::domain::wallet::{Movement, MovementKind, TopUp, TopUpResult, WalletPage};
use red_packets::domain::withdrawal::{
    resend_allowed, resend_slot, ResendResult, ResolutionResult, Withdrawal, WithdrawalReceipt, WithdrawalRequest,
    WithdrawalResolution, WithdrawalStatus,
};
use red_packets::domain::{
    BusinessDay, Cents, ChatId, Currency, DailyLimits, Funds, Packet, PacketId, PacketStatus, UserId,
};
use red_packets::ports::{
    AuditTrail, BusinessHours, Conflict, Flags, Holds, IdempotencyClaim, Ledger, PageRequest, QueuePage, Recorded,
    RiskLedger, SettleLedger, StoreError, Wallets, Withdrawals,
};

/// The ledger in memory. Clones share one ledger, as clones of the DynamoDB ledger share a
/// table.
#[derive(Debug, Clone)]
pub struct MemoryLedger {
    settle_shards: u32,
    daily: DailyLimits,
    business_day: BusinessDay,
    currency: Currency,
    funds: Funds,
    state: Arc<Mutex<State>>,
}

/// One packet's items: record, claims by share, grabs by user, refund.
#[derive(Debug, Clone)]
struct PacketItems {
    /// False for items written under a packet the ledger has no record of (as DynamoDB would
    /// write a claim into a partition without its `META`): reads do not see such a packet.
    recorded: bool,
    packet: Packet,
    status: PacketStatus,
    refund_cents: Option<Cents>,
    refund_item_cents: Option<Cents>,
    cancelled_at_ms: Option<Millis>,
    open_shard: Option<u32>,
    claims: BTreeMap<u32, ShareClaim>,
    grabs: BTreeMap<UserId, LoggedGrab>,
    revoked: Vec<LoggedGrab>,
}

/// Everything the table holds, kept the way its readers look it up.
#[derive(Debug, Default)]
struct State {
    packets: HashMap<PacketId, PacketItems>,
    idempotency: HashMap<(UserId, String), (String, PacketId)>,
    sends: HashMap<(UserId, String), (u32, Cents)>,
    balances: HashMap<UserId, Cents>,
    movements: HashMap<UserId, Vec<Movement>>,
    topups: HashMap<String, (UserId, Cents)>,
    withdrawals: HashMap<String, Withdrawal>,
    /// The orders sent again: (withdrawal id, hour slot).
    resent: HashSet<(String, i64)>,
    audit: Vec<(String, AuditEntry)>,
    holds: HashMap<UserId, Hold>,
    holds_version: u64,
    chat_logs: HashMap<ChatId, (ChatLog, u64)>,
    chats_of_day: HashMap<(String, UserId), BTreeSet<ChatId>>,
    flows: HashMap<(UserId, UserId, u64), (PairFlow, HashSet<String>)>,
    flags: BTreeMap<String, RiskFlag>,
    casualties: HashSet<(PacketId, UserId, u32)>,
    layouts: BTreeSet<u32>,
    unreachable: bool,
    settle_writes_timing_out: u32,
    poisoned: HashSet<PacketId>,
    counted_events: HashSet<String>,
    hours: BTreeMap<(String, u8, Measure), Tally>,
}

impl MemoryLedger {
    /// An empty ledger with `config`'s shards, daily limits and funds.
    pub fn new(config: &Config) -> Self {
        MemoryLedger {
            settle_shards: config.settle_shards.max(1),
            daily: config.daily,
            business_day: config.business_day,
            currency: config.currency,
            funds: config.funds,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Every call fails as an unreachable DynamoDB's would, until switched back.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    /// The next `writes` settle writes get no answer in time, as a slow DynamoDB's would
    /// (nothing written).
    pub fn time_out_settle_writes(&self, writes: u32) {
        self.lock().settle_writes_timing_out = writes;
    }

    /// Every settle write of packet `id` is rejected, as DynamoDB rejects an item it cannot
    /// take (a poison record).
    pub fn reject_writes_of(&self, id: &PacketId) {
        self.lock().poisoned.insert(id.clone());
    }

    /// A user's balance.
    pub fn balance(&self, user: &UserId) -> Cents {
        self.lock().balances.get(user).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The state, once the ledger is reachable.
    fn state(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        let state = self.lock();
        if state.unreachable {
            return Err(StoreError::dynamodb_unavailable("the in-memory ledger is switched unreachable"));
        }
        Ok(state)
    }

    /// The state, for a settle write of packet `id`.
    fn state_for_write(&self, id: &PacketId) -> Result<MutexGuard<'_, State>, StoreError> {
        let mut state = self.state()?;
        if state.settle_writes_timing_out > 0 {
            state.settle_writes_timing_out -= 1;
            let detail = "the in-memory ledger is switched slow".to_owned();
            return Err(StoreError::TimedOut { store: "dynamodb", detail });
        }
        if state.poisoned.contains(id) {
            return Err(StoreError::Rejected(format!("packet {id}: the item cannot be written")));
        }
        Ok(state)
    }
}

impl State {
    /// `movement` credited to `user`'s balance.
    fn credit(&mut self, user: &UserId, movement: Movement) {
        *self.balances.entry(user.clone()).or_default() += movement.amount_cents;
        self.movements.entry(user.clone()).or_default().push(movement);
    }

    /// The items of `packet`, created (unrecorded) when the ledger has no record of it.
    fn packet(&mut self, packet: &Packet) -> &mut PacketItems {
        self.packets.entry(packet.id.clone()).or_insert_with(|| PacketItems::new(packet, false, None))
    }
}

impl PacketItems {
    fn new(packet: &Packet, recorded: bool, open_shard: Option<u32>) -> Self {
        PacketItems {
            recorded,
            packet: packet.clone(),
            status: PacketStatus::Open,
            refund_cents: None,
            refund_item_cents: None,
            cancelled_at_ms: None,
            open_shard,
            claims: BTreeMap::new(),
            grabs: BTreeMap::new(),
            revoked: Vec::new(),
        }
    }
}

/// A movement of `amount_cents` of `kind` about packet `id`, at `at_ms`.
fn packet_movement(kind: MovementKind, amount_cents: Cents, id: &PacketId, at_ms: Millis) -> Movement {
    Movement { kind, amount_cents, packet_id: Some(id.clone()), reference: None, status: None, at: rfc3339(at_ms) }
}

/// The page of `items` `request` asks for: its cursor is an offset, bound to its owner and role.
fn page<T: Clone>(items: &[T], owner: &str, request: PageRequest<'_>) -> Result<(Vec<T>, Option<String>), StoreError> {
    let start = match request.cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix(owner)
            .and_then(|rest| rest.strip_prefix('@'))
            .and_then(|offset| offset.parse::<usize>().ok())
            .ok_or_else(|| StoreError::invalid("cursor", "cursor is not one this endpoint returned to you"))?,
    };
    let end = (start + request.limit as usize).min(items.len());
    let next = (end < items.len()).then(|| format!("{owner}@{end}"));
    Ok((items.get(start..end).unwrap_or_default().to_vec(), next))
}

impl Ledger for MemoryLedger {
    async fn record_packet(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Result<Recorded, StoreError> {
        if let Some(limit) = self.daily.broken_by(0, 0, packet.terms.total_cents) {
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        let mut state = self.state()?;
        if let Some(claim) = claim {
            let key = (packet.sender.clone(), claim.key.as_str().to_owned());
            if let Some((hash, id)) = state.idempotency.get(&key) {
                if *hash != claim.request_hash {
                    return Err(StoreError::Conflict(Conflict::IdempotencyKeyReused));
                }
                let original = state.packets.get(id).filter(|items| items.recorded).map(|items| items.packet.clone());
                return original
                    .map(|packet| Recorded::Replay(Box::new(packet)))
                    .ok_or_else(|| StoreError::Corrupt(format!("claim names missing packet {id}")));
            }
        }
        if self.funds == Funds::Wallet
            && state.balances.get(&packet.sender).copied().unwrap_or(0) < packet.terms.total_cents
        {
            return Err(StoreError::Conflict(Conflict::InsufficientFunds));
        }
        let day = (packet.sender.clone(), self.business_day.day_of(packet.created_at_ms));
        let (sends, sent_cents) = state.sends.get(&day).copied().unwrap_or_default();
        if let Some(limit) = self.daily.broken_by(sends, sent_cents, packet.terms.total_cents) {
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        if state.packets.get(&packet.id).is_some_and(|items| items.recorded) {
            return Err(StoreError::Corrupt(format!("packet {} recorded twice", packet.id)));
        }
        state.sends.insert(day, (sends + 1, sent_cents + packet.terms.total_cents));
        if let Some(claim) = claim {
            let key = (packet.sender.clone(), claim.key.as_str().to_owned());
            state.idempotency.insert(key, (claim.request_hash.clone(), packet.id.clone()));
        }
        if self.funds == Funds::Wallet {
            *state.balances.entry(packet.sender.clone()).or_default() -= packet.terms.total_cents;
            let debit = packet_movement(MovementKind::Send, packet.terms.total_cents, &packet.id, packet.created_at_ms);
            state.movements.entry(packet.sender.clone()).or_default().push(debit);
        }
        let shard = packet.id.settle_shard(self.settle_shards);
        let items = state.packet(packet).clone();
        let recorded = PacketItems { recorded: true, packet: packet.clone(), open_shard: Some(shard), ..items };
        state.packets.insert(packet.id.clone(), recorded);
        Ok(Recorded::New)
    }

    async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, StoreError> {
        let state = self.state()?;
        Ok(state.packets.get(id).filter(|items| items.recorded).map(|recorded| {
            let mut grabs: Vec<LoggedGrab> = recorded.grabs.values().cloned().collect();
            grabs.sort_by_key(|grab| grab.seq);
            LedgerPacket {
                packet: recorded.packet.clone(),
                status: recorded.status,
                refund_cents: recorded.refund_cents,
                refund_item_cents: recorded.refund_item_cents,
                grabs,
                claims: recorded.claims.values().cloned().collect(),
                cancelled_at_ms: recorded.cancelled_at_ms,
            }
        }))
    }

    async fn cancel(&self, id: &PacketId, sender: &UserId, now_ms: Millis) -> Result<(), StoreError> {
        let mut state = self.state()?;
        let Some(recorded) = state.packets.get_mut(id).filter(|items| items.recorded) else {
            return Err(Conflict::NoSuchPacket.into());
        };
        if &recorded.packet.sender != sender {
            return Err(Conflict::NotTheSender.into());
        }
        match (recorded.status, recorded.cancelled_at_ms) {
            (PacketStatus::Cancelled, _) | (PacketStatus::Open, Some(_)) => Ok(()),
            (PacketStatus::Open, None) if recorded.packet.expires_at_ms > now_ms => {
                recorded.cancelled_at_ms = Some(now_ms);
                Ok(())
            }
            _ => Err(Conflict::NotOpen.into()),
        }
    }

    async fn history(&self, user: &UserId, role: Role, request: PageRequest<'_>) -> Result<HistoryPage, StoreError> {
        let state = self.state()?;
        let item = |recorded: &PacketItems| HistoryItem {
            packet_id: recorded.packet.id.clone(),
            sender: recorded.packet.sender.clone(),
            total_cents: recorded.packet.terms.total_cents,
            count: recorded.packet.terms.count,
            status: recorded.status,
            created_at: rfc3339(recorded.packet.created_at_ms),
            amount_cents: None,
            grabbed_at: None,
            revoked_cents: None,
        };
        let mut listed: Vec<(Millis, String, HistoryItem)> = Vec::new();
        for recorded in state.packets.values().filter(|items| items.recorded) {
            let id = recorded.packet.id.to_string();
            match role {
                Role::Sent if &recorded.packet.sender == user => {
                    listed.push((recorded.packet.created_at_ms, id, item(recorded)));
                }
                Role::Received => {
                    if let Some(grab) = recorded.grabs.get(user) {
                        let received = HistoryItem {
                            amount_cents: Some(grab.amount_cents),
                            grabbed_at: Some(rfc3339(grab.at_ms)),
                            ..item(recorded)
                        };
                        listed.push((grab.at_ms, id.clone(), received));
                    }
                    for revoked in recorded.revoked.iter().filter(|grab| &grab.user == user) {
                        let void = HistoryItem {
                            grabbed_at: Some(rfc3339(revoked.at_ms)),
                            revoked_cents: Some(revoked.amount_cents),
                            ..item(recorded)
                        };
                        listed.push((revoked.at_ms, id.clone(), void));
                    }
                }
                Role::Sent => {}
            }
        }
        listed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let items: Vec<HistoryItem> = listed.into_iter().map(|(_, _, item)| item).collect();
        let owner = format!("{user}/{}", if role == Role::Sent { "sent" } else { "received" });
        let (items, next_cursor) = page(&items, &owner, request)?;
        Ok(HistoryPage { items, next_cursor, version: None })
    }

    fn currency(&self) -> Currency {
        self.currency
    }

    async fn wallet(&self, user: &UserId, request: PageRequest<'_>) -> Result<WalletPage, StoreError> {
        if self.funds == Funds::None {
            return Err(Conflict::NoWallets.into());
        }
        let state = self.state()?;
        let mut movements = state.movements.get(user).cloned().unwrap_or_default();
        movements.reverse();
        let (items, next_cursor) = page(&movements, &format!("{user}/wallet"), request)?;
        Ok(WalletPage {
            balance_cents: state.balances.get(user).copied().unwrap_or(0),
            items,
            next_cursor,
            version: None,
        })
    }
}

impl SettleLedger for MemoryLedger {
    async fn open_packets(&self, shard: u32) -> Result<Vec<PacketId>, StoreError> {
        let state = self.state()?;
        let mut open: Vec<PacketId> = state
            .packets
            .values()
            .filter(|recorded| recorded.open_shard == Some(shard))
            .map(|r| r.packet.id.clone())
            .collect();
        open.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(open)
    }

    async fn record_grabs(&self, packet: &Packet, grabs: &[LoggedGrab]) -> Result<Vec<Refusal>, StoreError> {
        let mut refused = Vec::new();
        for grab in grabs {
            {
                let mut state = self.state_for_write(&packet.id)?;
                let recorded = state.packet(packet);
                match recorded.claims.get(&grab.seq) {
                    Some(claim) if claim.holds(grab) => {}
                    Some(_) => {
                        refused.push(Refusal::ShareHeld(grab.clone()));
                        continue;
                    }
                    None => {
                        let holder = ShareHolder::Grabber { user: grab.user.clone(), at_ms: grab.at_ms };
                        recorded
                            .claims
                            .insert(grab.seq, ShareClaim { seq: grab.seq, amount_cents: grab.amount_cents, holder });
                    }
                }
            }
            if self.put_grab_item(packet, grab).await? {
                refused.push(Refusal::UserPaid(grab.clone()));
            }
        }
        Ok(refused)
    }

    async fn put_grab_item(&self, packet: &Packet, grab: &LoggedGrab) -> Result<bool, StoreError> {
        let mut state = self.state_for_write(&packet.id)?;
        let recorded = state.packet(packet);
        if let Some(held) = recorded.grabs.get(&grab.user) {
            return Ok(!(held.seq == grab.seq && held.amount_cents == grab.amount_cents));
        }
        recorded.grabs.insert(grab.user.clone(), grab.clone());
        if self.funds == Funds::Wallet {
            state.credit(&grab.user, packet_movement(MovementKind::Grab, grab.amount_cents, &packet.id, grab.at_ms));
        }
        Ok(false)
    }

    async fn settle_layouts(&self, current: u32) -> Result<Vec<u32>, StoreError> {
        let mut state = self.state()?;
        state.layouts.insert(current);
        Ok(state.layouts.iter().copied().collect())
    }

    async fn record_casualty(&self, packet: &Packet, casualty: &Casualty, _now_ms: Millis) -> Result<(), StoreError> {
        let mut state = self.state_for_write(&packet.id)?;
        let acknowledged = &casualty.acknowledged;
        let key = (packet.id.clone(), acknowledged.user.clone(), acknowledged.seq);
        if state.casualties.insert(key) && casualty.remedy == Remedy::Revoked {
            state.packet(packet).revoked.push(acknowledged.clone());
        }
        Ok(())
    }

    async fn claim_for_refund(&self, packet: &Packet, shares: &[(u32, Cents)]) -> Result<Vec<u32>, StoreError> {
        let mut state = self.state_for_write(&packet.id)?;
        let recorded = state.packet(packet);
        let mut taken = Vec::new();
        for &(seq, amount_cents) in shares {
            match recorded.claims.get(&seq) {
                Some(ShareClaim { holder: ShareHolder::Refund, .. }) => {}
                Some(_) => taken.push(seq),
                None => {
                    recorded.claims.insert(seq, ShareClaim { seq, amount_cents, holder: ShareHolder::Refund });
                }
            }
        }
        Ok(taken)
    }

    async fn finalise(&self, packet: &Packet, result: &Finalisation, now_ms: Millis) -> Result<bool, StoreError> {
        let mut state = self.state_for_write(&packet.id)?;
        let recorded = state.packet(packet);
        if !recorded.recorded || recorded.status != PacketStatus::Open {
            return Ok(false);
        }
        recorded.status = result.status;
        recorded.refund_cents = Some(result.refund_cents);
        recorded.open_shard = None;
        if result.refund_cents > 0 {
            recorded.refund_item_cents = Some(result.refund_cents);
            if self.funds == Funds::Wallet {
                let refund = packet_movement(MovementKind::Refund, result.refund_cents, &packet.id, now_ms);
                state.credit(&packet.sender, refund);
            }
        }
        Ok(true)
    }
}

impl Wallets for MemoryLedger {
    async fn top_up(&self, topup: &TopUp, now_ms: Millis) -> Result<TopUpResult, StoreError> {
        topup.validate_in(self.funds)?;
        let mut state = self.state()?;
        let applied = match state.topups.get(&topup.reference) {
            Some((user, amount)) => {
                topup.replays(user, *amount)?;
                false
            }
            None => {
                state.topups.insert(topup.reference.clone(), (topup.user.clone(), topup.amount_cents));
                let movement = Movement {
                    kind: MovementKind::Topup,
                    amount_cents: topup.amount_cents,
                    packet_id: None,
                    reference: Some(topup.reference.clone()),
                    status: None,
                    at: rfc3339(now_ms),
                };
                state.credit(&topup.user, movement);
                true
            }
        };
        Ok(TopUpResult { applied, balance_cents: state.balances.get(&topup.user).copied().unwrap_or(0) })
    }
}

impl Withdrawals for MemoryLedger {
    async fn request_withdrawal(
        &self,
        user: &UserId,
        id: &str,
        request: &WithdrawalRequest,
        now_ms: Millis,
    ) -> Result<WithdrawalReceipt, StoreError> {
        request.validate()?;
        if self.funds == Funds::None {
            return Err(Conflict::NoWallets.into());
        }
        let mut state = self.state()?;
        let balance = state.balances.get(user).copied().unwrap_or(0);
        let (withdrawal, created) = match state.withdrawals.get(id) {
            Some(earlier) if request.is_retry_of(earlier, user) => (earlier.clone(), false),
            Some(_) => return Err(Conflict::IdempotencyKeyReused.into()),
            None if balance < request.amount_cents => return Err(Conflict::InsufficientFunds.into()),
            None => {
                let withdrawal = request.pending(id, user, rfc3339(now_ms));
                state.withdrawals.insert(id.to_owned(), withdrawal.clone());
                state.balances.insert(user.clone(), balance - request.amount_cents);
                state.movements.entry(user.clone()).or_default().push(Movement {
                    kind: MovementKind::Withdrawal,
                    amount_cents: request.amount_cents,
                    packet_id: None,
                    reference: Some(id.to_owned()),
                    status: Some(WithdrawalStatus::Pending),
                    at: rfc3339(now_ms),
                });
                (withdrawal, true)
            }
        };
        let balance_cents = state.balances.get(user).copied().unwrap_or(0);
        Ok(WithdrawalReceipt { withdrawal, created, balance_cents })
    }

    async fn withdrawal(&self, id: &str) -> Result<Option<Withdrawal>, StoreError> {
        Ok(self.state()?.withdrawals.get(id).cloned())
    }

    async fn resolve_withdrawal(
        &self,
        resolution: &WithdrawalResolution,
        outcome: WithdrawalStatus,
        now_ms: Millis,
    ) -> Result<ResolutionResult, StoreError> {
        resolution.validate()?;
        let id = &resolution.withdrawal_id;
        let mut state = self.state()?;
        let Some(withdrawal) = state.withdrawals.get_mut(id) else {
            return Err(StoreError::invalid("withdrawal_id", "no such withdrawal"));
        };
        if !resolution.applies_to(withdrawal, outcome)? {
            return Ok(ResolutionResult { applied: false, withdrawal: withdrawal.clone() });
        }
        withdrawal.resolve(outcome, &resolution.reference, rfc3339(now_ms));
        let withdrawal = withdrawal.clone();
        let movements = state.movements.entry(withdrawal.user.clone()).or_default();
        let debit =
            movements.iter_mut().find(|m| m.kind == MovementKind::Withdrawal && m.reference.as_ref() == Some(id));
        if let Some(debit) = debit {
            debit.status = Some(outcome);
        }
        if outcome == WithdrawalStatus::Failed {
            let returned = Movement {
                kind: MovementKind::WithdrawalReturn,
                amount_cents: withdrawal.amount_cents,
                packet_id: None,
                reference: Some(id.clone()),
                status: None,
                at: rfc3339(now_ms),
            };
            state.credit(&withdrawal.user, returned);
        }
        Ok(ResolutionResult { applied: true, withdrawal })
    }

    async fn pending_withdrawals(&self, page: PageRequest<'_>) -> Result<QueuePage<Withdrawal>, StoreError> {
        let state = self.state()?;
        let mut pending: Vec<Withdrawal> = state
            .withdrawals
            .values()
            .filter(|withdrawal| withdrawal.status == WithdrawalStatus::Pending)
            .cloned()
            .collect();
        pending.sort_by(|a, b| (&a.requested_at, &a.withdrawal_id).cmp(&(&b.requested_at, &b.withdrawal_id)));
        let place = |withdrawal: &Withdrawal| format!("{}#{}", withdrawal.requested_at, withdrawal.withdrawal_id);
        Ok(memory_page(pending, page, place, Order::OldestFirst))
    }

    async fn resend_withdrawal(&self, id: &str, by: &Attribution, now_ms: Millis) -> Result<ResendResult, StoreError> {
        by.validate()?;
        let mut state = self.state()?;
        let Some(withdrawal) = state.withdrawals.get(id).cloned() else {
            return Err(StoreError::invalid("withdrawal_id", "no such withdrawal"));
        };
        resend_allowed(&withdrawal, now_ms)?;
        let slot = resend_slot(now_ms);
        let changed = state.resent.insert((id.to_owned(), slot));
        Ok(ResendResult { changed, withdrawal, slot })
    }
}

impl Holds for MemoryLedger {
    async fn place_hold(&self, request: &HoldRequest, now_ms: Millis) -> Result<HoldResult, StoreError> {
        request.validate(now_ms)?;
        let day = self.business_day.day_of(now_ms);
        let mut state = self.state()?;
        if !request.changes(state.holds.get(&request.user)) {
            return Ok(HoldResult { hold: state.holds.get(&request.user).cloned(), changed: false });
        }
        let hold = request.hold(rfc3339(now_ms));
        state.holds.insert(request.user.clone(), hold.clone());
        state.holds_version += 1;
        state.audit.push((day, hold.placed_entry()));
        Ok(HoldResult { hold: Some(hold), changed: true })
    }

    async fn lift_hold(&self, request: &LiftRequest, now_ms: Millis) -> Result<HoldResult, StoreError> {
        request.validate()?;
        let day = self.business_day.day_of(now_ms);
        let mut state = self.state()?;
        if state.holds.remove(&request.user).is_none() {
            return Ok(HoldResult { hold: None, changed: false });
        }
        state.holds_version += 1;
        state.audit.push((day, request.lifted_entry(rfc3339(now_ms))));
        Ok(HoldResult { hold: None, changed: true })
    }

    async fn holds_version(&self) -> Result<u64, StoreError> {
        Ok(self.state()?.holds_version)
    }

    async fn holds(&self) -> Result<Vec<Hold>, StoreError> {
        Ok(self.state()?.holds.values().cloned().collect())
    }
}

impl RiskLedger for MemoryLedger {
    async fn sent_packet(&self, id: &PacketId) -> Result<Option<Packet>, StoreError> {
        let state = self.state()?;
        Ok(state.packets.get(id).filter(|items| items.recorded).map(|items| items.packet.clone()))
    }

    async fn chat_log(&self, chat: &ChatId) -> Result<(ChatLog, u64), StoreError> {
        Ok(self.state()?.chat_logs.get(chat).cloned().unwrap_or_default())
    }

    async fn save_chat_log(&self, chat: &ChatId, log: &ChatLog, version: u64, _: Millis) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        let current = state.chat_logs.get(chat).map_or(0, |(_, version)| *version);
        if current != version {
            return Ok(false);
        }
        state.chat_logs.insert(chat.clone(), (log.clone(), version + 1));
        Ok(true)
    }

    async fn count_chat(&self, user: &UserId, day: &str, chat: &ChatId, limit: u32) -> Result<u32, StoreError> {
        let mut state = self.state()?;
        let chats = state.chats_of_day.entry((day.to_owned(), user.clone())).or_default();
        if chats.len() <= limit as usize {
            chats.insert(chat.clone());
        }
        Ok(chats.len() as u32)
    }

    async fn count_flow(&self, grab: PairGrab<'_>) -> Result<PairFlow, StoreError> {
        let PairGrab { window, packet, sender, grabber, amount_cents, most_grabs, .. } = grab;
        let (first, second) = if grabber <= sender { (grabber, sender) } else { (sender, grabber) };
        let mut state = self.state()?;
        let (flow, seen) = state.flows.entry((first.clone(), second.clone(), window)).or_default();
        if seen.len() < most_grabs as usize && seen.insert(packet.to_string()) {
            let took = if grabber == first { &mut flow.first_took } else { &mut flow.second_took };
            took.grabs += 1;
            took.cents += amount_cents;
        }
        Ok(*flow)
    }

    async fn flag(&self, flag_id: &str) -> Result<Option<RiskFlag>, StoreError> {
        Ok(self.state()?.flags.get(flag_id).cloned())
    }

    async fn raise_flag(&self, flag: &RiskFlag) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        if state.flags.contains_key(&flag.flag_id) {
            return Ok(false);
        }
        state.flags.insert(flag.flag_id.clone(), flag.clone());
        Ok(true)
    }
}

impl Flags for MemoryLedger {
    async fn flags_of_user(&self, user: &UserId, page: PageRequest<'_>) -> Result<QueuePage<RiskFlag>, StoreError> {
        let state = self.state()?;
        let mut flags: Vec<RiskFlag> = state.flags.values().filter(|flag| flag.users.contains(user)).cloned().collect();
        flags.sort_by(|a, b| (&b.raised_at, &b.flag_id).cmp(&(&a.raised_at, &a.flag_id)));
        Ok(memory_page(flags, page, |flag| format!("{}#{}", flag.raised_at, flag.flag_id), Order::NewestFirst))
    }

    async fn flags(&self, status: FlagStatus, page: PageRequest<'_>) -> Result<QueuePage<RiskFlag>, StoreError> {
        let state = self.state()?;
        let mut flags: Vec<RiskFlag> = state.flags.values().filter(|flag| flag.status == status).cloned().collect();
        flags.sort_by(|a, b| (&a.raised_at, &a.flag_id).cmp(&(&b.raised_at, &b.flag_id)));
        Ok(memory_page(flags, page, |flag| format!("{}#{}", flag.raised_at, flag.flag_id), Order::OldestFirst))
    }

    async fn assign_flag(&self, assignment: &FlagAssignment, now_ms: Millis) -> Result<FlagResolved, StoreError> {
        assignment.validate()?;
        let day = self.business_day.day_of(now_ms);
        let mut state = self.state()?;
        let Some(flag) = state.flags.get_mut(&assignment.flag_id) else {
            return Ok(FlagResolved { flag: None, changed: false });
        };
        if flag.status != FlagStatus::Open {
            return Ok(FlagResolved { flag: Some(flag.clone()), changed: false });
        }
        let at = rfc3339(now_ms);
        flag.assignee = Some(assignment.assignee.clone());
        flag.assigned_at = Some(at.clone());
        let assigned = flag.clone();
        state.audit.push((day, assignment.entry(at)));
        Ok(FlagResolved { flag: Some(assigned), changed: true })
    }

    async fn resolve_flag(&self, resolution: &FlagResolution, now_ms: Millis) -> Result<FlagResolved, StoreError> {
        resolution.validate()?;
        let day = self.business_day.day_of(now_ms);
        let mut state = self.state()?;
        let Some(flag) = state.flags.get_mut(&resolution.flag_id) else {
            return Ok(FlagResolved { flag: None, changed: false });
        };
        if flag.status != FlagStatus::Open {
            return Ok(FlagResolved { flag: Some(flag.clone()), changed: false });
        }
        let at = rfc3339(now_ms);
        flag.status = resolution.outcome;
        flag.resolved_by = Some(resolution.operator.clone());
        flag.resolved_at = Some(at.clone());
        flag.note = Some(resolution.note.clone());
        let resolved = flag.clone();
        state.audit.push((day, resolution.entry(at)));
        Ok(FlagResolved { flag: Some(resolved), changed: true })
    }
}

/// Which way a page of [`memory_page`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    OldestFirst,
    NewestFirst,
}

/// A page of `items` (sorted by `place` in `order`), past the cursor's place: the cursor is the
/// last item's place.
fn memory_page<T>(items: Vec<T>, page: PageRequest<'_>, place: impl Fn(&T) -> String, order: Order) -> QueuePage<T> {
    let past = |item: &T| {
        page.cursor.is_none_or(|cursor| match order {
            Order::OldestFirst => place(item).as_str() > cursor,
            Order::NewestFirst => place(item).as_str() < cursor,
        })
    };
    let mut after: Vec<T> = items.into_iter().filter(past).collect();
    let next_cursor = (after.len() > page.limit as usize).then(|| {
        after.truncate(page.limit as usize);
        after.last().map(&place)
    });
    QueuePage { items: after, next_cursor: next_cursor.flatten() }
}

impl BusinessHours for MemoryLedger {
    async fn count_event(&self, counted: &Counted, _: Millis) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        if !state.counted_events.insert(counted.event_id.clone()) {
            return Ok(false);
        }
        let tally = state.hours.entry((counted.hour.day.clone(), counted.hour.hour, counted.measure)).or_default();
        tally.count += 1;
        tally.amount_cents += counted.amount_cents;
        Ok(true)
    }

    async fn day_tallies(&self, day: &str) -> Result<Vec<(u8, Measure, Tally)>, StoreError> {
        let state = self.state()?;
        Ok(state
            .hours
            .iter()
            .filter(|((of, ..), _)| of == day)
            .map(|((_, hour, measure), tally)| (*hour, *measure, *tally))
            .collect())
    }
}

impl AuditTrail for MemoryLedger {
    async fn audit_of_day(&self, day: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let state = self.state()?;
        Ok(state.audit.iter().filter(|(of, _)| of == day).map(|(_, entry)| entry.clone()).collect())
    }

    async fn audit_of_user(&self, user: &UserId, page: PageRequest<'_>) -> Result<QueuePage<AuditEntry>, StoreError> {
        let state = self.state()?;
        let mut entries: Vec<AuditEntry> = state
            .audit
            .iter()
            .filter(|(_, entry)| entry.user.as_ref() == Some(user))
            .map(|(_, entry)| entry.clone())
            .collect();
        let place = |entry: &AuditEntry| format!("{}#{}#{}", entry.at, entry.action.as_str(), entry.subject);
        entries.sort_by_key(|entry| std::cmp::Reverse(place(entry)));
        Ok(memory_page(entries, page, place, Order::NewestFirst))
    }

    async fn record(&self, entry: AuditEntry, at_ms: Millis) -> Result<(), StoreError> {
        let day = self.business_day.day_of(at_ms);
        self.state()?.audit.push((day, entry));
        Ok(())
    }
}
