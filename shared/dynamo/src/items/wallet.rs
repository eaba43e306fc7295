//! A wallet's items, in its partition (`WALLET#<user>`): the balance (`BALANCE`) and the
//! movements (`MOVE#…`, a grab's credit among them); and a top-up's record (`TOPUP#<reference>`).

use serde::{Deserialize, Serialize};

use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::wallet::{EventType, LedgerEvent, Movement, MovementKind};
use red_packets_core::domain::withdrawal::WithdrawalStatus;
use red_packets_core::domain::{Cents, ChatId, Packet, PacketId, UserId};

/// The prefix of a wallet's partition (`WALLET#<user>`).
pub const WALLET_PREFIX: &str = "WALLET#";
/// The prefix of a wallet movement's sort key (`MOVE#<at>#<kind>#<subject>`).
pub const MOVE_PREFIX: &str = "MOVE#";
/// The prefix of a top-up record's partition (`TOPUP#<reference>`).
pub const TOPUP_PREFIX: &str = "TOPUP#";

/// Sort key of a wallet's balance.
pub const BALANCE: &str = "BALANCE";

/// `WALLET#<user>`: a wallet's balance and movements.
pub fn wallet_pk(user: &UserId) -> String {
    format!("{WALLET_PREFIX}{user}")
}

/// A wallet's balance (`WALLET#<user>` / `BALANCE`), changed only in the same write as a movement;
/// with the counts a poll of the user's wallet and history is compared by (`wallet::version_of`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BalanceItem {
    /// Never below 0: a debit's condition is `balance_cents >= :amount`.
    #[serde(default)]
    pub balance_cents: Cents,
    /// How many movements changed it: each change adds one, in the same write, so two reads
    /// with the same count saw no change between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<u64>,
    /// How many grabs of this user a failover revoked (their casualties, in the received
    /// history): added to in the casualty's own write. No money.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<u64>,
    /// The packet of the user's latest send, set by its debit: the sent history's first page is
    /// known to hold every send once it lists this one (the history index is eventually
    /// consistent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sent: Option<PacketId>,
}

/// One movement (`WALLET#<user>` / `MOVE#<at>#<kind>#<subject>`): written once, with its balance
/// change, under the condition that it is new; the key is built from what happened (the grab's
/// time and packet, the top-up's reference), so a retry writes the same key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MovementItem {
    pub pk: String,
    pub sk: String,
    pub user: UserId,
    pub kind: MovementKind,
    pub amount_cents: Cents,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_id: Option<PacketId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub at: String,
    pub at_ms: Millis,
    /// `WalletCredited` or `WalletDebited`.
    pub event: LedgerEvent,
    /// The write stamp of the transaction that wrote it ([`write_stamp`](super::write_stamp)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
    /// A grab's credit only: the grab it records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grab: Option<GrabDetails>,
    /// A withdrawal's debit only: where the withdrawal stands (its resolution updates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WithdrawalStatus>,
}

/// What a grab's movement holds besides the money: the share, when it was grabbed, and enough
/// of its packet for the grabber's received history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrabDetails {
    pub seq: u32,
    pub grabbed_at_ms: Millis,
    pub sender: UserId,
    pub total_cents: Cents,
    pub count: u32,
    pub packet_created_at: String,
}

/// Sort key of `user`'s credit of their grab of the packet `id` created at `created_at_ms`:
/// one per user and packet, whatever share or time the grab had, so the movement's own
/// condition (new) refuses paying a user a second share of one packet. It sorts among the
/// wallet's movements by the packet's creation.
pub fn grab_movement_sk(created_at_ms: Millis, id: &PacketId) -> String {
    format!("{MOVE_PREFIX}{}#{}#{id}", rfc3339(created_at_ms), MovementKind::Grab.as_str())
}

/// A movement as it happens, before it is an item: whose wallet, what kind, how much, about
/// which packet or top-up reference, and when.
#[derive(Debug, Clone, Copy)]
pub struct NewMovement<'a> {
    /// Whose wallet it moves.
    pub user: &'a UserId,
    /// What moves it.
    pub kind: MovementKind,
    /// How much, always positive; `kind` gives the direction.
    pub amount_cents: Cents,
    /// The packet it concerns (none for a top-up).
    pub packet_id: Option<&'a PacketId>,
    /// The top-up's reference, the withdrawal's id or the adjustment's reference.
    pub reference: Option<&'a str>,
    /// The chat of the packet it concerns, if it has one (its event names it).
    pub chat_id: Option<&'a ChatId>,
    /// When it happened.
    pub at_ms: Millis,
}

impl<'a> NewMovement<'a> {
    /// A movement of `packet`'s sender's wallet about `packet`: its send's debit, its refund.
    pub fn of_sender(packet: &'a Packet, kind: MovementKind, amount_cents: Cents, at_ms: Millis) -> Self {
        NewMovement {
            user: &packet.sender,
            kind,
            amount_cents,
            packet_id: Some(&packet.id),
            reference: None,
            chat_id: packet.terms.chat_id.as_ref(),
            at_ms,
        }
    }
}

impl MovementItem {
    /// The credit of `grab` of `packet` to its grabber, which is also the ledger's record of
    /// the grab (`GrabRecorded`), written at `written_at_ms`.
    pub fn grab(packet: &Packet, grab: &LoggedGrab, written_at_ms: Millis) -> Self {
        let at = rfc3339(grab.at_ms);
        MovementItem {
            pk: wallet_pk(&grab.user),
            sk: grab_movement_sk(packet.created_at_ms, &packet.id),
            user: grab.user.clone(),
            kind: MovementKind::Grab,
            amount_cents: grab.amount_cents,
            packet_id: Some(packet.id.clone()),
            reference: None,
            event: LedgerEvent::of_packet(EventType::GrabRecorded, packet, &grab.user, grab.amount_cents, at.clone()),
            at,
            at_ms: grab.at_ms,
            written_at_ms: Some(written_at_ms),
            status: None,
            grab: Some(GrabDetails {
                seq: grab.seq,
                grabbed_at_ms: grab.at_ms,
                sender: packet.sender.clone(),
                total_cents: packet.terms.total_cents,
                count: packet.terms.count,
                packet_created_at: rfc3339(packet.created_at_ms),
            }),
        }
    }

    /// The grab a grab's credit records.
    pub fn logged(&self) -> Option<LoggedGrab> {
        let grab = self.grab.as_ref()?;
        Some(LoggedGrab {
            seq: grab.seq,
            user: self.user.clone(),
            amount_cents: self.amount_cents,
            at_ms: grab.grabbed_at_ms,
        })
    }

    /// The item of `movement`, written at `written_at_ms`.
    pub fn new(movement: NewMovement<'_>, written_at_ms: Millis) -> Self {
        let NewMovement { user, kind, amount_cents, packet_id, reference, chat_id, at_ms } = movement;
        let at = rfc3339(at_ms);
        let subject = packet_id.map(PacketId::as_str).or(reference).unwrap_or_default().to_owned();
        MovementItem {
            pk: wallet_pk(user),
            sk: format!("{MOVE_PREFIX}{at}#{}#{subject}", kind.as_str()),
            user: user.clone(),
            kind,
            amount_cents,
            packet_id: packet_id.cloned(),
            reference: reference.map(str::to_owned),
            event: LedgerEvent::new(
                kind.event(),
                &format!("{}:{subject}", kind.as_str()),
                packet_id,
                user,
                amount_cents,
                at.clone(),
            )
            .with_reference(reference)
            .in_chat(chat_id),
            at,
            at_ms,
            written_at_ms: Some(written_at_ms),
            grab: None,
            status: (kind == MovementKind::Withdrawal).then_some(WithdrawalStatus::Pending),
        }
    }

    /// The movement as `GET /me/wallet` lists it.
    pub fn movement(&self) -> Movement {
        Movement {
            kind: self.kind,
            amount_cents: self.amount_cents,
            packet_id: self.packet_id.clone(),
            reference: self.reference.clone(),
            status: self.status,
            at: self.at.clone(),
        }
    }
}

/// `TOPUP#<reference>`: a top-up applied, keyed by the payments system's reference, so a second
/// delivery of it is refused by the write itself.
pub fn topup_pk(reference: &str) -> String {
    format!("{TOPUP_PREFIX}{reference}")
}

/// Sort key of a top-up.
pub const TOPUP: &str = "TOPUP";

/// A top-up applied (`TOPUP#<reference>` / `TOPUP`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopupItem {
    pub pk: String,
    pub sk: String,
    pub user: UserId,
    pub amount_cents: Cents,
    pub reference: String,
    pub at: String,
    /// Its write stamp ([`write_stamp`](super::write_stamp)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
}
