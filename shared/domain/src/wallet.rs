//! The money trail: where a packet's money comes from and goes to. A send debits the sender's
//! balance by the total; each recorded grab credits the grabber; a finalised packet's refund
//! credits the sender; top-ups (from the payments system only) credit a user; a withdrawal
//! debits them, and its failure credits the money back; an approved adjustment credits or
//! debits them. Every change is a [`Movement`] written once, with the balance change, under a
//! condition on its reference.

use serde::{Deserialize, Serialize};

use super::ids::{ChatId, PacketId, UserId};
use super::invalid::Invalid;
use super::money::Cents;
use super::packet::Packet;
use super::reference::reference_ok;
use super::withdrawal::WithdrawalStatus;

/// Whether this deployment keeps balances (`FUNDS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Funds {
    /// Built-in balances: send debits, grabs and refunds credit (`wallet`, the default).
    #[default]
    Wallet,
    /// No balances: packets move no money here; the events feed a wallet kept elsewhere.
    None,
}

impl Funds {
    /// `wallet` or `none`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "wallet" => Some(Funds::Wallet),
            "none" => Some(Funds::None),
            _ => None,
        }
    }
}

/// What moved a balance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MovementKind {
    /// Money in from the payments system.
    Topup,
    /// A packet's total, out of its sender's balance.
    Send,
    /// A share, into its grabber's balance.
    Grab,
    /// What was left of a packet, back to its sender.
    Refund,
    /// Money out to the payments system, pending until it is paid or fails.
    Withdrawal,
    /// A failed withdrawal's money, back to its user.
    WithdrawalReturn,
    /// An approved adjustment into the wallet.
    AdjustmentCredit,
    /// An approved adjustment out of it (a chargeback among them).
    AdjustmentDebit,
}

impl MovementKind {
    /// True for the kinds that take money out of the balance.
    pub fn debits(self) -> bool {
        matches!(self, MovementKind::Send | MovementKind::Withdrawal | MovementKind::AdjustmentDebit)
    }

    /// The balance change of a movement of `amount_cents`: negative for a debit.
    pub fn delta(self, amount_cents: Cents) -> i128 {
        if self.debits() {
            -i128::from(amount_cents)
        } else {
            i128::from(amount_cents)
        }
    }

    /// The event a movement of this kind publishes.
    pub fn event(self) -> EventType {
        if self.debits() {
            EventType::WalletDebited
        } else {
            EventType::WalletCredited
        }
    }

    /// `topup`, `send`, `grab`, `refund`, `withdrawal`, `withdrawal_return`,
    /// `adjustment_credit` or `adjustment_debit`.
    pub fn as_str(self) -> &'static str {
        match self {
            MovementKind::Topup => "topup",
            MovementKind::Send => "send",
            MovementKind::Grab => "grab",
            MovementKind::Refund => "refund",
            MovementKind::Withdrawal => "withdrawal",
            MovementKind::WithdrawalReturn => "withdrawal_return",
            MovementKind::AdjustmentCredit => "adjustment_credit",
            MovementKind::AdjustmentDebit => "adjustment_debit",
        }
    }

    /// Every kind.
    pub const ALL: [MovementKind; 8] = [
        MovementKind::Topup,
        MovementKind::Send,
        MovementKind::Grab,
        MovementKind::Refund,
        MovementKind::Withdrawal,
        MovementKind::WithdrawalReturn,
        MovementKind::AdjustmentCredit,
        MovementKind::AdjustmentDebit,
    ];
}

/// One line of a wallet, as `GET /me/wallet` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Movement {
    /// What moved the balance.
    pub kind: MovementKind,
    /// How much, always positive; `kind` gives the direction.
    pub amount_cents: Cents,
    /// The packet it concerns (none for a top-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_id: Option<PacketId>,
    /// The top-up's reference, the withdrawal's id or the adjustment's reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// A withdrawal's state now: `pending` until the payments system says `paid` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WithdrawalStatus>,
    /// When it happened (RFC 3339).
    pub at: String,
}

/// A balance and one page of its movements, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletPage {
    /// What the user holds now.
    pub balance_cents: Cents,
    /// Newest first.
    pub items: Vec<Movement>,
    /// Pass back as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
    /// The version of the wallet the page was read at, when the ledger keeps one (the
    /// balance's count of movements): what a poll's tag is computed from. Not in the answer.
    #[serde(skip)]
    pub version: Option<String>,
}

/// Most a single top-up may add: 1,000,000.00 in cents.
pub const MAX_TOPUP_CENTS: Cents = 100_000_000;

/// A top-up from the payments system, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopUp {
    /// Whose balance.
    pub user: UserId,
    /// How much, 1..=[`MAX_TOPUP_CENTS`].
    pub amount_cents: Cents,
    /// The payments system's own id of this payment: a second top-up with it changes nothing.
    pub reference: String,
}

impl TopUp {
    /// Checks the amount and the reference (1..=64 of `[A-Za-z0-9_.:-]`).
    pub fn validate(&self) -> Result<(), Invalid> {
        if !(1..=MAX_TOPUP_CENTS).contains(&self.amount_cents) {
            return Err(Invalid::field("amount_cents", format!("amount_cents must be 1..={MAX_TOPUP_CENTS}")));
        }
        if !reference_ok(&self.reference) {
            return Err(Invalid::field("reference", "reference must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        Ok(())
    }

    /// [`TopUp::validate`], and refused where the deployment keeps no wallets (`FUNDS=none`).
    pub fn validate_in(&self, funds: Funds) -> Result<(), Invalid> {
        self.validate()?;
        if funds == Funds::None {
            return Err(Invalid::field("topup", "this deployment keeps no wallets (FUNDS=none)"));
        }
        Ok(())
    }

    /// Whether the top-up already applied under this one's reference, of `user` for
    /// `amount_cents`, is this same one (a second delivery: nothing changes), or why not.
    pub fn replays(&self, user: &UserId, amount_cents: Cents) -> Result<(), Invalid> {
        if *user != self.user || amount_cents != self.amount_cents {
            return Err(Invalid::field("reference", "this reference was applied to another user or amount"));
        }
        Ok(())
    }
}

/// What applying a top-up came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopUpResult {
    /// False when this reference was applied before (nothing changed now).
    pub applied: bool,
    /// The user's balance after it.
    pub balance_cents: Cents,
}

/// The events the ledger publishes (through DynamoDB Streams and an EventBridge Pipe), one
/// per ledger write that carries an `event` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// A packet was recorded (user: the sender; amount: its total).
    PacketSent,
    /// Settle recorded a grab (user: the grabber; amount: the share).
    GrabRecorded,
    /// Every share was taken (amount: 0 left).
    PacketFinished,
    /// It expired with shares left (amount: what is refunded).
    PacketExpired,
    /// Its sender cancelled it (amount: what is refunded).
    PacketCancelled,
    /// What was left went back to the sender (user: the sender; amount: the refund).
    PacketRefunded,
    /// A balance went up (top-up, grab, refund, a failed withdrawal's return, an adjustment).
    WalletCredited,
    /// A balance went down (send, withdrawal, an adjustment).
    WalletDebited,
    /// A grab Redis acknowledged was refused by the ledger after a failover, and its user holds
    /// another share instead (amount: the share held now).
    GrabRegranted,
    /// A grab Redis acknowledged was refused by the ledger after a failover, and no share was
    /// left to give instead (amount: the share revoked; it was never credited).
    GrabRevoked,
    /// A user asked for a withdrawal (user; amount; reference: its id, which the payments
    /// system pays out and resolves it by).
    WithdrawalRequested,
    /// The payments system paid it out (reference: its id).
    WithdrawalPaid,
    /// The payments system could not (reference: its id); the money is back in the wallet.
    WithdrawalFailed,
    /// A risk rule flagged users (user: the first it names; amount: the money it concerns;
    /// reference: the flag's id; chat_id: the chat, for a chat's rule).
    RiskFlagged,
}

impl EventType {
    /// Every event type.
    pub const ALL: [EventType; 14] = [
        EventType::PacketSent,
        EventType::GrabRecorded,
        EventType::PacketFinished,
        EventType::PacketExpired,
        EventType::PacketCancelled,
        EventType::PacketRefunded,
        EventType::WalletCredited,
        EventType::WalletDebited,
        EventType::GrabRegranted,
        EventType::GrabRevoked,
        EventType::WithdrawalRequested,
        EventType::WithdrawalPaid,
        EventType::WithdrawalFailed,
        EventType::RiskFlagged,
    ];

    /// The name, as `detail-type` carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::PacketSent => "PacketSent",
            EventType::GrabRecorded => "GrabRecorded",
            EventType::PacketFinished => "PacketFinished",
            EventType::PacketExpired => "PacketExpired",
            EventType::PacketCancelled => "PacketCancelled",
            EventType::PacketRefunded => "PacketRefunded",
            EventType::WalletCredited => "WalletCredited",
            EventType::WalletDebited => "WalletDebited",
            EventType::GrabRegranted => "GrabRegranted",
            EventType::GrabRevoked => "GrabRevoked",
            EventType::WithdrawalRequested => "WithdrawalRequested",
            EventType::WithdrawalPaid => "WithdrawalPaid",
            EventType::WithdrawalFailed => "WithdrawalFailed",
            EventType::RiskFlagged => "RiskFlagged",
        }
    }
}

/// The event a ledger item publishes, stored on the item itself (its `event` attribute), so
/// the event is the write: no second write can be lost or doubled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEvent {
    /// Stable: derived from what happened, so a redelivery carries the same id.
    pub event_id: String,
    /// Which event.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The packet (empty for a movement of no packet).
    pub packet_id: String,
    /// Whom it concerns.
    pub user: UserId,
    /// Integer cents.
    pub amount_cents: Cents,
    /// When (RFC 3339).
    pub occurred_at: String,
    /// The top-up's reference, the withdrawal's id or the adjustment's reference (empty otherwise).
    #[serde(default)]
    pub reference: String,
    /// An adjustment's proposer (empty otherwise).
    #[serde(default)]
    pub proposed_by: String,
    /// An adjustment's approver (empty otherwise).
    #[serde(default)]
    pub approved_by: String,
    /// The chat of the packet it concerns, when its sender named one (empty otherwise).
    #[serde(default)]
    pub chat_id: String,
}

impl LedgerEvent {
    /// The event of `event_type` about `subject` (a packet id, or a top-up's reference):
    /// its id is `<type>:<subject>:<user>`.
    pub fn new(
        event_type: EventType,
        subject: &str,
        packet_id: Option<&PacketId>,
        user: &UserId,
        amount_cents: Cents,
        occurred_at: String,
    ) -> Self {
        LedgerEvent {
            event_id: format!("{}:{subject}:{user}", event_type.as_str()),
            event_type,
            packet_id: packet_id.map(|id| id.to_string()).unwrap_or_default(),
            user: user.clone(),
            amount_cents,
            occurred_at,
            reference: String::new(),
            proposed_by: String::new(),
            approved_by: String::new(),
            chat_id: String::new(),
        }
    }

    /// The event of `event_type` about `packet` (its subject), concerning `user`: it names the
    /// packet's chat.
    pub fn of_packet(
        event_type: EventType,
        packet: &Packet,
        user: &UserId,
        amount_cents: Cents,
        occurred_at: String,
    ) -> Self {
        Self::new(event_type, packet.id.as_str(), Some(&packet.id), user, amount_cents, occurred_at)
            .in_chat(packet.terms.chat_id.as_ref())
    }

    /// The event naming `chat` (a packet's), if there is one.
    pub fn in_chat(mut self, chat: Option<&ChatId>) -> Self {
        self.chat_id = chat.map(|chat| chat.as_str().to_owned()).unwrap_or_default();
        self
    }

    /// The event naming `reference` (a top-up's, a withdrawal's id, an adjustment's).
    pub fn with_reference(mut self, reference: Option<&str>) -> Self {
        self.reference = reference.unwrap_or_default().to_owned();
        self
    }

    /// The event naming the two operators of an adjustment.
    pub fn approved(mut self, proposer: &str, approver: &str) -> Self {
        self.proposed_by = proposer.to_owned();
        self.approved_by = approver.to_owned();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topup(amount_cents: Cents, reference: &str) -> TopUp {
        TopUp { user: UserId::from_claim("alice").unwrap(), amount_cents, reference: reference.into() }
    }

    #[test]
    fn sends_withdrawals_and_debit_adjustments_debit_and_everything_else_credits() {
        for kind in MovementKind::ALL {
            let debit = matches!(kind, MovementKind::Send | MovementKind::Withdrawal | MovementKind::AdjustmentDebit);
            assert_eq!(kind.delta(500), if debit { -500 } else { 500 }, "{kind:?}");
            assert_eq!(kind.event(), if debit { EventType::WalletDebited } else { EventType::WalletCredited });
            let named: MovementKind = serde_json::from_value(serde_json::json!(kind.as_str())).unwrap();
            assert_eq!(named, kind, "as_str is the JSON name");
        }
    }

    #[test]
    fn top_ups_name_what_is_wrong() {
        assert!(topup(1, "pay-1").validate().is_ok());
        assert!(topup(MAX_TOPUP_CENTS, "pay.2:x_y").validate().is_ok());
        let field = |t: TopUp| match t.validate() {
            Err(Invalid { field, .. }) => field,
            other => panic!("expected a 400, got {other:?}"),
        };
        assert_eq!(field(topup(0, "pay-1")).as_deref(), Some("amount_cents"));
        assert_eq!(field(topup(MAX_TOPUP_CENTS + 1, "pay-1")).as_deref(), Some("amount_cents"));
        assert_eq!(field(topup(5, "")).as_deref(), Some("reference"));
        assert_eq!(field(topup(5, "has space")).as_deref(), Some("reference"));
        assert_eq!(field(topup(5, &"x".repeat(65))).as_deref(), Some("reference"));
    }

    #[test]
    fn event_ids_are_stable_and_distinct_per_type_subject_and_user() {
        let bob = UserId::from_claim("bob").unwrap();
        let id = PacketId::random();
        let a = LedgerEvent::new(EventType::GrabRecorded, id.as_str(), Some(&id), &bob, 5, "t".into());
        let b = LedgerEvent::new(EventType::GrabRecorded, id.as_str(), Some(&id), &bob, 5, "t2".into());
        assert_eq!(a.event_id, b.event_id, "a redelivery, or a retry at another time, has the same id");
        let credit = LedgerEvent::new(EventType::WalletCredited, id.as_str(), Some(&id), &bob, 5, "t".into());
        assert_ne!(a.event_id, credit.event_id);
        assert_eq!(EventType::ALL.len(), 14);
    }
}
