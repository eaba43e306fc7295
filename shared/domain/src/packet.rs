//! Packets: what a sender asked for ([`PacketSpec`]), the record kept of it ([`Packet`]) and the
//! view the API returns ([`PacketView`]), sharing one definition of the packet's terms
//! ([`PacketTerms`]).

use serde::{Deserialize, Serialize};

use super::access::{Access, PassphraseDigest};
use super::grab::{best_luck, BestLuck, LoggedGrab};
use super::ids::{ChatId, PacketId, UserId};
use super::money::Cents;
use super::split::{self, Seed, SplitRule, SplitVersion};
use crate::clock::{rfc3339, Millis};

/// Lucky (random shares) or fixed (equal shares).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PacketKind {
    /// Shares drawn by a [`SplitRule`].
    #[default]
    Lucky,
    /// Every share is `total / count`.
    Fixed,
}

impl PacketKind {
    /// The kind's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            PacketKind::Lucky => "lucky",
            PacketKind::Fixed => "fixed",
        }
    }

    /// The kind named `name` in the API, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "lucky" => Some(PacketKind::Lucky),
            "fixed" => Some(PacketKind::Fixed),
            _ => None,
        }
    }
}

/// What a packet is, as its sender asked: the terms its spec, its record and its view share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketTerms {
    /// The whole amount.
    pub total_cents: Cents,
    /// How many shares.
    pub count: u32,
    /// Lucky or fixed.
    pub kind: PacketKind,
    /// The lucky rule; `None` (`null`) for fixed packets.
    pub split: Option<SplitRule>,
    /// The sender's message, at most 64 characters.
    pub greeting: Option<String>,
    /// The chat it was sent into, when the app names one (the risk rules read packets by chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<ChatId>,
}

impl PacketTerms {
    /// `count` shares of `total_cents`: equal ones, or lucky ones drawn by the default rule; no
    /// greeting.
    pub fn new(kind: PacketKind, total_cents: Cents, count: u32) -> Self {
        let split = (kind == PacketKind::Lucky).then(SplitRule::default);
        PacketTerms { total_cents, count, kind, split, greeting: None, chat_id: None }
    }
}

/// A validated send request, defaults applied. Its JSON form is what idempotency compares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PacketSpec {
    /// The amount, the shares, the kind, the rule and the greeting.
    #[serde(flatten)]
    pub terms: PacketTerms,
    /// Lifetime from the opening (from creation for a packet not scheduled).
    pub expires_in_seconds: u32,
    /// The instant grabs may begin, epoch ms, as the sender asked; `None` for at once. Kept as
    /// asked, so a retry of the send hours later still replays it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens_at_ms: Option<Millis>,
    /// The only users who may grab, sorted and distinct; `None` for anybody.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<UserId>>,
    /// The passphrase's keyed digest, when grabs must carry it (never the phrase itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passphrase: Option<PassphraseDigest>,
    /// Only members of the chat (`terms.chat_id`, which validation requires) may grab, each
    /// grab with a membership ticket. Left out of the fingerprint when false, as before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub members_only: bool,
}

impl PacketSpec {
    /// A spec on `terms` that anybody may grab, with no passphrase, for `expires_in_seconds`.
    pub fn open_to_all(terms: PacketTerms, expires_in_seconds: u32) -> Self {
        PacketSpec {
            terms,
            expires_in_seconds,
            opens_at_ms: None,
            recipients: None,
            passphrase: None,
            members_only: false,
        }
    }

    /// SHA-256 of the spec's JSON, hex: two requests with the same fingerprint ask for the same
    /// packet, however their bodies were spelled.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let json = serde_json::to_vec(self).expect("specs serialize");
        hex::encode(Sha256::digest(json))
    }
}

/// Where a packet is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketStatus {
    /// Shares left and not expired.
    Open,
    /// Every share taken.
    Finished,
    /// Expired with shares left.
    Expired,
    /// The sender cancelled it with shares left.
    Cancelled,
}

impl PacketStatus {
    /// The status's name in the API and the stores.
    pub fn as_str(self) -> &'static str {
        match self {
            PacketStatus::Open => "open",
            PacketStatus::Finished => "finished",
            PacketStatus::Expired => "expired",
            PacketStatus::Cancelled => "cancelled",
        }
    }

    /// True once the status can no longer change: finished, expired or cancelled.
    pub fn is_final(self) -> bool {
        self != PacketStatus::Open
    }

    /// The status as a packet with `remaining_count` shares left, cancelled or not, stands at
    /// `now`: every share taken is finished whatever else happened; a cancel ends it before
    /// its expiry does.
    pub fn at(remaining_count: u32, expires_at_ms: Millis, cancelled: bool, now_ms: Millis) -> Self {
        if remaining_count == 0 {
            PacketStatus::Finished
        } else if cancelled {
            PacketStatus::Cancelled
        } else if now_ms >= expires_at_ms {
            PacketStatus::Expired
        } else {
            PacketStatus::Open
        }
    }
}

/// A packet as recorded at send: everything needed to recompute its shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Its id.
    pub id: PacketId,
    /// Who sent it.
    pub sender: UserId,
    /// The amount, the shares, the kind, the rule and the greeting, as the spec asked.
    pub terms: PacketTerms,
    /// The seed lucky shares are drawn from.
    pub seed: Seed,
    /// The version of the split's algorithm it was sent under (how its pool is ordered).
    pub split_version: SplitVersion,
    /// When it was sent.
    pub created_at_ms: Millis,
    /// Before this instant no grab succeeds (a scheduled packet: a campaign's); `None` for a
    /// packet open from its send.
    pub opens_at_ms: Option<Millis>,
    /// From this instant on, no grab succeeds.
    pub expires_at_ms: Millis,
    /// Who may grab it.
    pub access: Access,
}

impl Packet {
    /// A new packet from a validated spec, sent at `now_ms`: scheduled when the spec opens it
    /// later than that, its lifetime counted from its opening.
    pub fn new(id: PacketId, sender: UserId, spec: &PacketSpec, seed: Seed, now_ms: Millis) -> Self {
        let opens_at_ms = spec.opens_at_ms.filter(|opens_at_ms| *opens_at_ms > now_ms);
        Packet {
            id,
            sender,
            terms: spec.terms.clone(),
            seed,
            split_version: SplitVersion::CURRENT,
            created_at_ms: now_ms,
            opens_at_ms,
            expires_at_ms: opens_at_ms.unwrap_or(now_ms) + Millis::from(spec.expires_in_seconds) * 1000,
            access: Access {
                recipients: spec.recipients.clone(),
                passphrase: spec.passphrase.clone(),
                members_of: spec.terms.chat_id.clone().filter(|_| spec.members_only),
            },
        }
    }

    /// The packet sent under split version `version` instead of the newest.
    pub fn under(mut self, version: SplitVersion) -> Self {
        self.split_version = version;
        self
    }

    /// True when `now_ms` is before the packet's opening: a grab now is too early.
    pub fn opens_after(&self, now_ms: Millis) -> bool {
        self.opens_at_ms.is_some_and(|opens_at_ms| now_ms < opens_at_ms)
    }

    /// The shares, in the order they are handed out (share 1 to the first grab); the same every
    /// time for the same record.
    pub fn shares(&self) -> Vec<Cents> {
        let PacketTerms { total_cents, count, .. } = self.terms;
        match (self.terms.kind, self.terms.split) {
            (PacketKind::Fixed, _) => split::fixed(total_cents, count),
            (PacketKind::Lucky, rule) => {
                split::lucky_pool(self.split_version, rule.unwrap_or_default(), total_cents, count, &self.seed)
            }
        }
    }

    /// The commitment a send publishes before anyone grabs: SHA-256, lowercase hex, of
    ///
    /// ```text
    /// red-packet-split\nversion=<n>\npacket_id=<id>\nkind=<kind>\nsplit=<rule or none>\n
    /// total_cents=<total>\ncount=<count>\nseed=<64 lowercase hex digits>\n
    /// ```
    ///
    /// (one line each, `docs/FAIRNESS.md`). The seed's 256 random bits hide it; once the settled
    /// view reveals the seed, anyone checks the commitment and recomputes every share.
    pub fn commitment(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = format!(
            "red-packet-split\nversion={}\npacket_id={}\nkind={}\nsplit={}\ntotal_cents={}\ncount={}\nseed={}\n",
            self.split_version.number(),
            self.id,
            self.terms.kind.as_str(),
            self.terms.split.map_or("none", SplitRule::as_str),
            self.terms.total_cents,
            self.terms.count,
            self.seed.to_hex(),
        );
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// The view `viewer` gets of this packet before anyone has grabbed.
    pub fn fresh_view(&self, viewer: &UserId) -> PacketView {
        self.view(viewer, &[], PacketStatus::Open, None)
    }

    /// The view `viewer` gets of this packet with `grabs` (every grab, in grab order), in
    /// `status`; `refund_cents` is `Some` once settle has finalised it. Best luck shows once
    /// every share is taken. Only the sender sees the recipients; everybody sees whether they
    /// may grab. [`PacketView::page`] keeps one page of the grabs.
    pub fn view(
        &self,
        viewer: &UserId,
        grabs: &[LoggedGrab],
        status: PacketStatus,
        refund_cents: Option<Cents>,
    ) -> PacketView {
        let totals = GrabTotals {
            grab_count: grabs.len() as u32,
            grabbed_cents: grabs.iter().map(|grab| grab.amount_cents).sum(),
            best_luck: best_luck(self.terms.count, grabs),
            next_grabs_from: None,
        };
        self.page_view(viewer, grabs, &totals, status, refund_cents)
    }

    /// The view `viewer` gets of this packet showing the grabs of one page (`page`, in grab
    /// order), with what `totals` says of all of them: what a page read costs whatever the
    /// packet's size.
    pub fn page_view(
        &self,
        viewer: &UserId,
        page: &[LoggedGrab],
        totals: &GrabTotals,
        status: PacketStatus,
        refund_cents: Option<Cents>,
    ) -> PacketView {
        PacketView {
            shared: SharedView {
                packet_id: self.id.clone(),
                sender: self.sender.clone(),
                terms: self.terms.clone(),
                remaining_cents: self.terms.total_cents.saturating_sub(totals.grabbed_cents),
                remaining_count: self.terms.count.saturating_sub(totals.grab_count),
                status,
                created_at: rfc3339(self.created_at_ms),
                opens_at: self.opens_at_ms.map(rfc3339),
                expires_at: rfc3339(self.expires_at_ms),
                grabs: page
                    .iter()
                    .map(|grab| GrabRecord {
                        share: grab.seq,
                        user: grab.user.clone(),
                        amount_cents: grab.amount_cents,
                        grabbed_at: rfc3339(grab.at_ms),
                    })
                    .collect(),
                best_luck: totals.best_luck.clone(),
                grab_count: totals.grab_count,
                next_grabs_from: totals.next_grabs_from,
                settled: refund_cents.is_some(),
                refund_cents,
                has_passphrase: self.access.passphrase.is_some(),
                members_only: self.access.members_of.is_some(),
                split_version: self.split_version.number(),
                commitment: self.commitment(),
                seed: refund_cents.is_some().then(|| self.seed.to_hex()),
            },
            eligible: self.access.admits(viewer),
            recipients: if viewer == &self.sender { self.access.recipients.clone() } else { None },
        }
    }

    /// The share best luck goes to once every share is taken: the largest, the first of equals
    /// (as [`best_luck`] picks it among the grabs), by its seq and amount, from the split alone.
    pub fn best_share(&self) -> Option<(u32, Cents)> {
        let shares = self.shares();
        let (index, amount) = shares.iter().enumerate().max_by(|(a, x), (b, y)| x.cmp(y).then(b.cmp(a)))?;
        Some((index as u32 + 1, *amount))
    }

    /// What the shares from `seq` on (1 for the first) come to, from the split alone.
    pub fn shares_from(&self, seq: u32) -> Cents {
        self.shares().iter().skip(seq.saturating_sub(1) as usize).sum()
    }
}

/// What a view says of all of a packet's grabs, whichever page of them it shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrabTotals {
    /// How many grabs the packet has in all.
    pub grab_count: u32,
    /// What they took, in cents.
    pub grabbed_cents: Cents,
    /// Best luck, once every share is taken.
    pub best_luck: Option<BestLuck>,
    /// Where the page after this one starts, when there is one.
    pub next_grabs_from: Option<u32>,
}

impl PacketView {
    /// Grabs one view answers at most: a 100,000-share packet's whole list would be about 11 MB,
    /// over Lambda's 6 MB response limit; a page of 1,000 is about 110 KB.
    pub const GRABS_PAGE: u32 = 1_000;

    /// The view with only the page of grabs starting at grab `from` (1 for the first, in grab
    /// order), and where the next page starts when more follow.
    pub fn page(mut self, from: u32) -> Self {
        let start = from.max(1) as usize - 1;
        let end = start.saturating_add(Self::GRABS_PAGE as usize);
        let total = self.shared.grabs.len();
        self.shared.grabs = self.shared.grabs.drain(..).skip(start).take(Self::GRABS_PAGE as usize).collect();
        self.shared.next_grabs_from = (end < total).then_some(end as u32 + 1);
        self
    }

    /// What every viewer sees: the view without the caller's own fields.
    pub fn shared(self) -> SharedView {
        self.shared
    }
}

/// One grab as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrabRecord {
    /// The share it took: its position in the packet's pool, 1 for the first.
    pub share: u32,
    /// Who grabbed.
    pub user: UserId,
    /// How much.
    pub amount_cents: Cents,
    /// When, RFC 3339.
    pub grabbed_at: String,
}

/// A packet as `GET /packets/{id}` and `POST /packets` return it: what every viewer sees and
/// the caller's own fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketView {
    /// What every viewer sees.
    #[serde(flatten)]
    pub shared: SharedView,
    /// True when the viewer may grab it (a recipient, or a packet naming none).
    pub eligible: bool,
    /// The recipients, shown to the sender only; absent for a packet naming none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<UserId>>,
}

/// What every viewer of a packet sees (`GET /packets/{id}/shared`): the same for every caller,
/// so a shared cache may keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedView {
    /// Its id.
    pub packet_id: PacketId,
    /// Who sent it.
    pub sender: UserId,
    /// The amount, the shares, the kind, the rule and the greeting.
    #[serde(flatten)]
    pub terms: PacketTerms,
    /// Not yet grabbed, in cents.
    pub remaining_cents: Cents,
    /// Shares not yet grabbed.
    pub remaining_count: u32,
    /// Open, finished, expired or cancelled.
    pub status: PacketStatus,
    /// When it was sent.
    pub created_at: String,
    /// When grabs may begin, for a scheduled packet; absent for one open from its send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<String>,
    /// When it stops accepting grabs.
    pub expires_at: String,
    /// Grabs in grab order: at most [`PacketView::GRABS_PAGE`] of them, from the one
    /// [`PacketView::page`] started at (the first, unless asked).
    pub grabs: Vec<GrabRecord>,
    /// How many grabs the packet has in all.
    pub grab_count: u32,
    /// Where the next page of grabs starts (`GET /packets/{id}?grabs_from=`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_grabs_from: Option<u32>,
    /// The largest share, once every share is taken.
    pub best_luck: Option<BestLuck>,
    /// Whether settle has finalised it.
    pub settled: bool,
    /// Returned to the sender, once settled.
    pub refund_cents: Option<Cents>,
    /// True when a grab must carry the passphrase.
    pub has_passphrase: bool,
    /// True when only members of `chat_id` may grab, each with a membership ticket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub members_only: bool,
    /// The version of the split's algorithm (`docs/FAIRNESS.md`).
    pub split_version: u8,
    /// SHA-256 of the packet's split inputs, its seed included ([`Packet::commitment`]),
    /// published from the send on.
    pub commitment: String,
    /// The seed, 64 hex digits, once settled (no share is left to take); `null` before.
    pub seed: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: PacketKind, total_cents: Cents, count: u32) -> PacketSpec {
        PacketSpec::open_to_all(PacketTerms::new(kind, total_cents, count), 60)
    }

    fn sent_by_alice(spec: &PacketSpec, now_ms: Millis) -> Packet {
        Packet::new(PacketId::random(), UserId::from_claim("alice").unwrap(), spec, Seed::random(), now_ms)
    }

    /// Idempotency records in the ledger hold this fingerprint: its JSON must never change.
    #[test]
    fn a_specs_fingerprint_is_the_sha256_of_its_json_as_stored() {
        let mut lucky = spec(PacketKind::Lucky, 1_000, 3);
        lucky.terms.greeting = Some("恭喜发财".into());
        assert_eq!(
            serde_json::to_string(&lucky).unwrap(),
            r#"{"total_cents":1000,"count":3,"kind":"lucky","split":"double_average","greeting":"恭喜发财","expires_in_seconds":60}"#
        );
        assert_eq!(lucky.fingerprint(), "7ac6acec339316b0388f73b28d9e90bf17238b1523464380dae5d5b92f892bff");
    }

    #[test]
    fn a_packet_recomputes_the_same_shares_from_its_record() {
        let packet = sent_by_alice(&spec(PacketKind::Lucky, 10_000, 10), 1_000);
        assert_eq!(packet.shares(), packet.clone().shares());
        assert_eq!(packet.shares().iter().sum::<Cents>(), 10_000);
        assert_eq!(packet.expires_at_ms, 61_000);
        assert_eq!((packet.opens_at_ms, packet.opens_after(0)), (None, false));
    }

    #[test]
    fn a_scheduled_packet_opens_when_asked_and_lives_from_then() {
        let mut scheduled = spec(PacketKind::Fixed, 600, 3);
        scheduled.opens_at_ms = Some(10_000);
        let packet = sent_by_alice(&scheduled, 1_000);
        assert_eq!((packet.opens_at_ms, packet.expires_at_ms), (Some(10_000), 70_000));
        assert!(packet.opens_after(9_999));
        assert!(!packet.opens_after(10_000), "the opening instant itself is open");
        let view = packet.fresh_view(&UserId::from_claim("bob").unwrap());
        assert_eq!(view.shared.opens_at.as_deref(), Some("1970-01-01T00:00:10.000Z"));
        // An opening already past when the send arrives (a retry, a slow clock) opens at once.
        let late = sent_by_alice(&scheduled, 20_000);
        assert_eq!((late.opens_at_ms, late.expires_at_ms), (None, 80_000));
    }

    /// The commitment of a fixed packet record, as `scripts/verify_split.py` computes it from
    /// `docs/FAIRNESS.md`'s text in Python.
    #[test]
    fn the_commitment_is_the_sha256_the_published_text_gives() {
        let mut seed = [0u8; 32];
        seed[0] = 1;
        let mut packet = sent_by_alice(&spec(PacketKind::Lucky, 10_000, 10), 0);
        packet.id = PacketId::parse("0123456789abcdef0123456789abcdef").unwrap();
        packet.seed = Seed(seed);
        assert_eq!(packet.split_version, SplitVersion::V2);
        assert_eq!(packet.commitment(), "25c3c2f3fbf5b92edf7c50234d86e8f42922e19c80fd809b6234a49680241e8a");
        packet.seed.0[31] = 1;
        assert_ne!(packet.commitment(), "25c3c2f3fbf5b92edf7c50234d86e8f42922e19c80fd809b6234a49680241e8a");
    }

    /// A view publishes the commitment from the send on and reveals the seed only once settled;
    /// each grab names the share it took.
    #[test]
    fn the_view_commits_to_the_seed_and_reveals_it_only_once_settled() {
        let packet = sent_by_alice(&spec(PacketKind::Lucky, 10_000, 10), 0);
        let bob = UserId::from_claim("bob").unwrap();
        let fresh = packet.fresh_view(&bob);
        assert_eq!(
            (fresh.shared.commitment.as_str(), fresh.shared.seed.as_deref(), fresh.shared.split_version),
            (packet.commitment().as_str(), None, 2)
        );
        let json = serde_json::to_value(&fresh).unwrap();
        assert!(!json.to_string().contains(&packet.seed.to_hex()), "no answer before settle carries the seed");
        let shares = packet.shares();
        let grabs = [LoggedGrab { seq: 1, user: bob.clone(), amount_cents: shares[0], at_ms: 5 }];
        let finished_unsettled = packet.view(&bob, &grabs, PacketStatus::Open, None);
        assert_eq!((finished_unsettled.shared.seed, finished_unsettled.shared.grabs[0].share), (None, 1));
        let settled = packet.view(&bob, &grabs, PacketStatus::Expired, Some(10_000 - shares[0]));
        assert_eq!(settled.shared.seed, Some(packet.seed.to_hex()));
    }

    #[test]
    fn a_view_answers_a_page_of_grabs_and_where_the_next_starts() {
        let packet = sent_by_alice(&spec(PacketKind::Fixed, 2_500, 2_500), 0);
        let grabs: Vec<LoggedGrab> = (1..=2_500)
            .map(|seq| LoggedGrab {
                seq,
                user: UserId::from_claim(&format!("u{seq}")).unwrap(),
                amount_cents: 1,
                at_ms: 1,
            })
            .collect();
        let view = packet.view(&packet.sender, &grabs, PacketStatus::Finished, None);
        let first = view.clone().page(1);
        assert_eq!(
            (first.shared.grabs.len(), first.shared.grab_count, first.shared.next_grabs_from),
            (1_000, 2_500, Some(1_001))
        );
        let last = view.clone().page(2_001);
        assert_eq!(
            (last.shared.grabs.len(), last.shared.grabs[0].share, last.shared.next_grabs_from),
            (500, 2_001, None)
        );
        assert_eq!(view.clone().page(3_000).shared.grabs.len(), 0, "past the end: no grabs, no next page");
        assert_eq!(first.shared.remaining_count, 0, "the totals are the packet's, whatever the page");
    }

    #[test]
    fn fixed_packets_give_equal_shares() {
        let packet = sent_by_alice(&spec(PacketKind::Fixed, 600, 3), 0);
        assert_eq!(packet.shares(), vec![200, 200, 200]);
    }

    #[test]
    fn status_follows_shares_then_expiry() {
        assert_eq!(PacketStatus::at(0, 100, false, 200), PacketStatus::Finished);
        assert_eq!(PacketStatus::at(3, 100, false, 100), PacketStatus::Expired);
        assert_eq!(PacketStatus::at(3, 100, false, 99), PacketStatus::Open);
        assert_eq!(PacketStatus::at(3, 100, true, 99), PacketStatus::Cancelled);
        assert_eq!(PacketStatus::at(3, 100, true, 200), PacketStatus::Cancelled, "cancelled before it expired");
        assert_eq!(PacketStatus::at(0, 100, true, 99), PacketStatus::Finished, "the last share won the race");
    }

    #[test]
    fn only_the_sender_sees_the_recipients_and_each_viewer_whether_they_may_grab() {
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let mut exclusive = spec(PacketKind::Fixed, 100, 1);
        exclusive.recipients = Some(vec![user("bob")]);
        let packet = Packet::new(PacketId::random(), user("alice"), &exclusive, Seed::random(), 0);
        let by_sender = packet.fresh_view(&user("alice"));
        assert_eq!((by_sender.recipients.as_deref(), by_sender.eligible), (Some(&[user("bob")][..]), false));
        let by_bob = packet.fresh_view(&user("bob"));
        assert_eq!((by_bob.recipients, by_bob.eligible, by_bob.shared.has_passphrase), (None, true, false));
        assert!(!packet.fresh_view(&user("mallory")).eligible);
    }
}
