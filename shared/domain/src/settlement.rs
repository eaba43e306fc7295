//! Settlement rules, pure: what a closed packet's grabs come to (status, refund, best luck) and
//! the reconciliation finance relies on (grabs + refund == total, grabs <= count).

use super::grab::{best_luck, BestLuck, LoggedGrab};
use super::ledger::ShareClaim;
use super::money::Cents;
use super::packet::PacketStatus;

/// Checks a grab from Redis against the packet's shares before it reaches the ledger: grab
/// `seq` must carry share `seq` exactly.
pub fn check_against_shares(grab: &LoggedGrab, shares: &[Cents]) -> Result<(), Mismatch> {
    match (grab.seq as usize).checked_sub(1).and_then(|index| shares.get(index)) {
        Some(&share) if share == grab.amount_cents => Ok(()),
        Some(&share) => Err(Mismatch(format!(
            "grab {} by {} says {} cents, share {} is {share}",
            grab.seq, grab.user, grab.amount_cents, grab.seq
        ))),
        None => Err(Mismatch(format!("grab {} by {} has no share of that number", grab.seq, grab.user))),
    }
}

/// What a packet is finalised as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finalisation {
    /// `Finished` when every share was taken, else `Cancelled` or `Expired`.
    pub status: PacketStatus,
    /// What goes back to the sender: total minus every grab.
    pub refund_cents: Cents,
    /// The largest share of a finished packet.
    pub best_luck: Option<BestLuck>,
    /// How many grabs it had: what a page of its view says of all of them.
    pub grab_count: u32,
    /// The last share a grab took (0 for none): where its view's last page ends.
    pub last_grab_seq: u32,
}

/// A packet whose books do not balance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

/// Finalises a closed packet from every grab it ever had; `cancelled` when its sender
/// cancelled it (a packet whose every share was taken is finished all the same).
pub fn finalise(
    total_cents: Cents,
    count: u32,
    grabs: &[LoggedGrab],
    cancelled: bool,
) -> Result<Finalisation, Mismatch> {
    let amounts: Vec<Cents> = grabs.iter().map(|grab| grab.amount_cents).collect();
    let grabbed = checked_sum(&amounts)?;
    let refund_cents = total_cents
        .checked_sub(grabbed)
        .ok_or_else(|| Mismatch(format!("grabs sum to {grabbed}, over the total {total_cents}")))?;
    if grabs.len() > count as usize {
        return Err(Mismatch(format!("{} grabs of a {count}-share packet", grabs.len())));
    }
    let status = match (grabs.len() == count as usize, cancelled) {
        (true, _) => PacketStatus::Finished,
        (false, true) => PacketStatus::Cancelled,
        (false, false) => PacketStatus::Expired,
    };
    if status == PacketStatus::Finished && refund_cents != 0 {
        return Err(Mismatch(format!("every share taken yet {refund_cents} cents left")));
    }
    Ok(Finalisation {
        status,
        refund_cents,
        best_luck: best_luck(count, grabs),
        grab_count: grabs.len() as u32,
        last_grab_seq: grabs.iter().map(|grab| grab.seq).max().unwrap_or(0),
    })
}

/// Finalises a packet from the ledger's own records: `claims` (one per share, every share
/// claimed) and `grabs` (the grab items). The refund is the total less the grab items, which
/// covers the shares claimed for the refund and any share whose claimant was paid another one.
/// Every grab item must hold the claim of its share.
pub fn finalise_from_ledger(
    total_cents: Cents,
    count: u32,
    claims: &[ShareClaim],
    grabs: &[LoggedGrab],
    cancelled: bool,
) -> Result<Finalisation, Mismatch> {
    let claimed: Vec<Cents> = claims.iter().map(|claim| claim.amount_cents).collect();
    if claims.len() != count as usize || checked_sum(&claimed)? != total_cents {
        return Err(Mismatch(format!(
            "{} share claims summing to {} for {count} shares of {total_cents}",
            claims.len(),
            checked_sum(&claimed)?
        )));
    }
    for grab in grabs {
        if !claims.iter().any(|claim| claim.holds(grab)) {
            return Err(Mismatch(format!(
                "grab item of {} (share {}) holds no claim on its share",
                grab.user, grab.seq
            )));
        }
    }
    finalise(total_cents, count, grabs, cancelled)
}

/// The finance check: the recorded grabs and refund account for the total exactly, and there
/// are no more grabs than shares.
pub fn reconcile(total_cents: Cents, count: u32, grab_amounts: &[Cents], refund_cents: Cents) -> Result<(), Mismatch> {
    let grabbed = checked_sum(grab_amounts)?;
    if grab_amounts.len() > count as usize {
        return Err(Mismatch(format!("{} grab items for {count} shares", grab_amounts.len())));
    }
    if grabbed.checked_add(refund_cents) != Some(total_cents) {
        return Err(Mismatch(format!("grabs {grabbed} + refund {refund_cents} != total {total_cents}")));
    }
    Ok(())
}

fn checked_sum(amounts: &[Cents]) -> Result<Cents, Mismatch> {
    amounts
        .iter()
        .try_fold(0 as Cents, |sum, &amount| sum.checked_add(amount))
        .ok_or_else(|| Mismatch("grab amounts overflow".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;
    use crate::ledger::ShareHolder;

    fn grab(seq: u32, user: &str, amount_cents: Cents) -> LoggedGrab {
        LoggedGrab { seq, user: UserId::from_claim(user).unwrap(), amount_cents, at_ms: 1_000 + i64::from(seq) }
    }

    #[test]
    fn a_finished_packet_refunds_nothing_and_names_the_earliest_best_luck() {
        let grabs = [grab(1, "a", 30), grab(2, "b", 50), grab(3, "c", 50), grab(4, "d", 20)];
        let done = finalise(150, 4, &grabs, false).unwrap();
        assert_eq!(done.status, PacketStatus::Finished);
        assert_eq!(done.refund_cents, 0);
        assert_eq!(done.best_luck.unwrap().user.as_str(), "b", "the earliest grab wins a tie");
    }

    #[test]
    fn an_expired_packet_refunds_the_rest_and_has_no_best_luck() {
        let done = finalise(1_000, 10, &[grab(1, "a", 120), grab(2, "b", 80)], false).unwrap();
        assert_eq!(done.status, PacketStatus::Expired);
        assert_eq!(done.refund_cents, 800);
        assert_eq!(done.best_luck, None);
        let untouched = finalise(1_000, 10, &[], false).unwrap();
        assert_eq!(untouched.refund_cents, 1_000);
    }

    #[test]
    fn a_cancelled_packet_refunds_the_rest_unless_its_last_share_went_first() {
        let cancelled = finalise(1_000, 10, &[grab(1, "a", 120)], true).unwrap();
        assert_eq!((cancelled.status, cancelled.refund_cents), (PacketStatus::Cancelled, 880));
        let raced = finalise(150, 2, &[grab(1, "a", 100), grab(2, "b", 50)], true).unwrap();
        assert_eq!((raced.status, raced.refund_cents), (PacketStatus::Finished, 0));
    }

    #[test]
    fn impossible_books_are_mismatches() {
        assert!(finalise(100, 2, &[grab(1, "a", 60), grab(2, "b", 60)], false).is_err());
        assert!(finalise(100, 1, &[grab(1, "a", 50), grab(2, "b", 50)], false).is_err());
        assert!(finalise(100, 2, &[grab(1, "a", 50), grab(2, "b", 40)], false).is_err(), "finished with money left");
    }

    fn claim(seq: u32, amount_cents: Cents, user: Option<&str>) -> ShareClaim {
        let holder = match user {
            Some(user) => {
                ShareHolder::Grabber { user: UserId::from_claim(user).unwrap(), at_ms: 1_000 + i64::from(seq) }
            }
            None => ShareHolder::Refund,
        };
        ShareClaim { seq, amount_cents, holder }
    }

    #[test]
    fn a_grab_must_carry_its_shares_amount() {
        let shares = [30, 50, 20];
        assert!(check_against_shares(&grab(2, "b", 50), &shares).is_ok());
        assert!(check_against_shares(&grab(2, "b", 51), &shares).is_err(), "a changed amount");
        assert!(check_against_shares(&grab(4, "d", 20), &shares).is_err(), "no fourth share");
        assert!(check_against_shares(&grab(0, "z", 30), &shares).is_err(), "no share zero");
    }

    #[test]
    fn the_ledger_finalises_from_its_claims_and_grab_items() {
        let claims = [claim(1, 30, Some("a")), claim(2, 50, Some("b")), claim(3, 20, None)];
        let done = finalise_from_ledger(100, 3, &claims, &[grab(1, "a", 30), grab(2, "b", 50)], false).unwrap();
        assert_eq!((done.status, done.refund_cents), (PacketStatus::Expired, 20));

        // b holds share 2's claim but was paid share 3 (a failover): share 2 goes to the refund.
        let orphan = [claim(1, 30, Some("a")), claim(2, 50, Some("b")), claim(3, 20, Some("b"))];
        let done = finalise_from_ledger(100, 3, &orphan, &[grab(1, "a", 30), grab(3, "b", 20)], false).unwrap();
        assert_eq!(done.refund_cents, 50);

        assert!(finalise_from_ledger(100, 3, &claims[..2], &[], false).is_err(), "a share unclaimed");
        let later = [grab(1, "a", 30), LoggedGrab { at_ms: 9_999, ..grab(2, "b", 50) }];
        assert!(
            finalise_from_ledger(100, 3, &claims, &later, false).is_ok(),
            "the same share, user and amount at another time is the same grab"
        );
        let stranger = [grab(1, "a", 30), grab(2, "c", 50)];
        assert!(finalise_from_ledger(100, 3, &claims, &stranger, false).is_err(), "a grab item without its claim");
    }

    #[test]
    fn reconciliation_catches_missing_and_extra_money() {
        assert!(reconcile(100, 3, &[30, 30], 40).is_ok());
        assert!(reconcile(100, 3, &[30], 40).is_err());
        assert!(reconcile(100, 3, &[30, 30], 41).is_err());
        assert!(reconcile(100, 1, &[50, 50], 0).is_err());
        assert!(reconcile(100, 3, &[Cents::MAX, 2], 0).is_err());
    }

    #[test]
    fn the_log_format_of_grab_lua_parses() {
        let logged: LoggedGrab =
            serde_json::from_str(r#"{"seq":3,"user":"bob","amount":822,"at":1795248000123}"#).unwrap();
        assert_eq!(
            logged,
            LoggedGrab {
                seq: 3,
                user: UserId::from_claim("bob").unwrap(),
                amount_cents: 822,
                at_ms: 1_795_248_000_123
            }
        );
    }
}
