//! The items of a packet's grabs, in the packet's partition: the grab item (`GRAB#<user>`,
//! the grab's record without the wallet), the share claim (`SHARE#<seq>`) that comes before it,
//! and the casualty (`CASUALTY#<user>#<seq>`) of a grab Redis acknowledged and the ledger refused.

use serde::{Deserialize, Serialize};

use super::{history_pk, packet_pk};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::ledger::{ShareClaim, ShareHolder};
use red_packets_core::domain::recovery::{Casualty, Remedy};
use red_packets_core::domain::wallet::{EventType, LedgerEvent};
use red_packets_core::domain::{Cents, Packet, PacketId, UserId};
use red_packets_core::ports::StoreError;

/// The prefix of a grab item's sort key (`GRAB#<user>`, without the wallet).
pub const GRAB_PREFIX: &str = "GRAB#";
/// The prefix of a share claim's sort key (`SHARE#<seq>`).
pub const SHARE_PREFIX: &str = "SHARE#";
/// The prefix of a casualty's sort key (`CASUALTY#<user>#<seq>`).
pub const CASUALTY_PREFIX: &str = "CASUALTY#";

/// `GRAB#<user>`.
pub fn grab_sk(user: &UserId) -> String {
    format!("{GRAB_PREFIX}{user}")
}

/// `SHARE#<seq>`, zero-padded so the claims sort by share.
pub fn share_sk(seq: u32) -> String {
    format!("{SHARE_PREFIX}{seq:05}")
}

/// `CASUALTY#<user>#<seq>`: what became of `user`'s grab of share `seq`, which Redis
/// acknowledged and the ledger refused.
pub fn casualty_sk(user: &UserId, seq: u32) -> String {
    format!("{CASUALTY_PREFIX}{user}#{seq:05}")
}

/// A grab item (`PKT#<id>` / `GRAB#<user>`), with enough of its packet for the grabber's history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrabItem {
    pub pk: String,
    pub sk: String,
    pub packet_id: PacketId,
    pub user: UserId,
    pub amount_cents: Cents,
    pub seq: u32,
    pub grabbed_at: String,
    pub grabbed_at_ms: Millis,
    pub sender: UserId,
    pub total_cents: Cents,
    pub count: u32,
    pub packet_created_at: String,
    pub history_pk: String,
    pub history_sk: String,
    /// `GrabRecorded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<LedgerEvent>,
    /// When settle wrote it ([`write_stamp`](super::write_stamp)), with the grabber's credit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
}

impl GrabItem {
    /// The item recording `grab` of `packet`, written at `written_at_ms`.
    pub fn new(packet: &Packet, grab: &LoggedGrab, written_at_ms: Millis) -> Self {
        let grabbed_at = rfc3339(grab.at_ms);
        GrabItem {
            pk: packet_pk(&packet.id),
            sk: grab_sk(&grab.user),
            packet_id: packet.id.clone(),
            user: grab.user.clone(),
            amount_cents: grab.amount_cents,
            seq: grab.seq,
            history_pk: history_pk(&grab.user),
            history_sk: format!("RECV#{grabbed_at}#{}", packet.id),
            grabbed_at,
            grabbed_at_ms: grab.at_ms,
            sender: packet.sender.clone(),
            total_cents: packet.terms.total_cents,
            count: packet.terms.count,
            packet_created_at: rfc3339(packet.created_at_ms),
            event: Some(LedgerEvent::of_packet(
                EventType::GrabRecorded,
                packet,
                &grab.user,
                grab.amount_cents,
                rfc3339(grab.at_ms),
            )),
            written_at_ms: Some(written_at_ms),
        }
    }

    /// The grab as the log had it.
    pub fn logged(&self) -> LoggedGrab {
        LoggedGrab {
            seq: self.seq,
            user: self.user.clone(),
            amount_cents: self.amount_cents,
            at_ms: self.grabbed_at_ms,
        }
    }
}

/// A share's claim (`PKT#<id>` / `SHARE#<seq>`): written before the grab item of the grab that
/// took it, or for the refund at finalisation, under a condition that it is new or the same,
/// so a share is never claimed by two (see `DynamoLedger::record_grabs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShareItem {
    pub pk: String,
    pub sk: String,
    pub packet_id: PacketId,
    pub seq: u32,
    pub amount_cents: Cents,
    /// The grabber; absent on a refund claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grabbed_at_ms: Option<Millis>,
    /// True on a refund claim.
    #[serde(default)]
    pub refund: bool,
}

impl ShareItem {
    /// The claim of `grab` on its share.
    pub fn grabbed(packet: &Packet, grab: &LoggedGrab) -> Self {
        ShareItem {
            pk: packet_pk(&packet.id),
            sk: share_sk(grab.seq),
            packet_id: packet.id.clone(),
            seq: grab.seq,
            amount_cents: grab.amount_cents,
            user: Some(grab.user.clone()),
            grabbed_at_ms: Some(grab.at_ms),
            refund: false,
        }
    }

    /// The refund's claim on share `seq` of `amount_cents`.
    pub fn refunded(packet: &Packet, seq: u32, amount_cents: Cents) -> Self {
        ShareItem {
            pk: packet_pk(&packet.id),
            sk: share_sk(seq),
            packet_id: packet.id.clone(),
            seq,
            amount_cents,
            user: None,
            grabbed_at_ms: None,
            refund: true,
        }
    }

    /// The claim as the domain sees it.
    pub fn claim(&self) -> Result<ShareClaim, StoreError> {
        let holder = match (&self.user, self.grabbed_at_ms, self.refund) {
            (Some(user), Some(at_ms), false) => ShareHolder::Grabber { user: user.clone(), at_ms },
            (None, None, true) => ShareHolder::Refund,
            _ => {
                return Err(StoreError::Corrupt(format!("share claim {} of {} is malformed", self.sk, self.packet_id)))
            }
        };
        Ok(ShareClaim { seq: self.seq, amount_cents: self.amount_cents, holder })
    }
}

/// A casualty of a disagreement between Redis and the ledger (`PKT#<id>` /
/// `CASUALTY#<user>#<seq>`), written once: the grab Redis acknowledged and what the user got
/// instead. A revoked grab is in the user's received history (no money moved).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CasualtyItem {
    pub pk: String,
    pub sk: String,
    pub packet_id: PacketId,
    pub user: UserId,
    /// The share Redis acknowledged: its seq, amount and time.
    pub acknowledged_seq: u32,
    pub acknowledged_cents: Cents,
    pub acknowledged_at: String,
    /// `regranted` or `revoked`.
    pub remedy: String,
    /// The share the user holds instead (regranted only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_seq: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_cents: Option<Cents>,
    pub recorded_at: String,
    pub sender: UserId,
    pub total_cents: Cents,
    pub count: u32,
    pub packet_created_at: String,
    /// Revoked only: the user's received history lists it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
    /// `GrabRegranted` (amount: the share held now) or `GrabRevoked` (amount: the share revoked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<LedgerEvent>,
}

impl CasualtyItem {
    /// The item recording `casualty` of `packet`, at `now_ms`.
    pub fn new(packet: &Packet, casualty: &Casualty, now_ms: Millis) -> Self {
        let acknowledged = &casualty.acknowledged;
        let recorded_at = rfc3339(now_ms);
        let (remedy, granted, event_type, amount_cents) = match &casualty.remedy {
            Remedy::Regranted { holds, .. } => ("regranted", Some(holds), EventType::GrabRegranted, holds.amount_cents),
            Remedy::Revoked => ("revoked", None, EventType::GrabRevoked, acknowledged.amount_cents),
        };
        let subject = format!("{}#{}", packet.id, acknowledged.seq);
        let revoked = granted.is_none();
        CasualtyItem {
            pk: packet_pk(&packet.id),
            sk: casualty_sk(&acknowledged.user, acknowledged.seq),
            packet_id: packet.id.clone(),
            user: acknowledged.user.clone(),
            acknowledged_seq: acknowledged.seq,
            acknowledged_cents: acknowledged.amount_cents,
            acknowledged_at: rfc3339(acknowledged.at_ms),
            remedy: remedy.into(),
            granted_seq: granted.map(|grab| grab.seq),
            granted_cents: granted.map(|grab| grab.amount_cents),
            sender: packet.sender.clone(),
            total_cents: packet.terms.total_cents,
            count: packet.terms.count,
            packet_created_at: rfc3339(packet.created_at_ms),
            history_pk: revoked.then(|| history_pk(&acknowledged.user)),
            history_sk: revoked.then(|| format!("RECV#{}#{}", rfc3339(acknowledged.at_ms), packet.id)),
            event: Some(
                LedgerEvent::new(
                    event_type,
                    &subject,
                    Some(&packet.id),
                    &acknowledged.user,
                    amount_cents,
                    recorded_at.clone(),
                )
                .in_chat(packet.terms.chat_id.as_ref()),
            ),
            recorded_at,
        }
    }
}
