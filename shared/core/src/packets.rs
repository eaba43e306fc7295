//! Use cases over the ports that more than one caller needs: a grab (live, else from the
//! ledger), a packet's view as it is now, and reloading a packet the ledger holds open into the
//! live store. The ledger is the truth: nothing here loads a packet the ledger has settled, or
//! loads one without the ledger's grabs.

use crate::clock::{Clock, Millis};
use crate::domain::grab::GrabAttempt;
use crate::domain::ledger::LedgerPacket;
use crate::domain::{GrabOutcome, LivePacket, PacketId, PacketStatus, PacketView, UserId};
use crate::ports::{GrabCall, Ledger, LiveAnswer, LiveStore, PacketImage, Restored, StoreError};

/// How many times one grab asks the ledger: once, and once more should the packet it reloaded
/// be gone again at once. After each reload the live store is asked again, the last reload
/// included; a third time not held means the packet keeps vanishing.
const LEDGER_ASKS: usize = 2;

/// One grab attempt as the API answers it: decided by the live store; for a packet it does not
/// hold (settled and retired, lost, or a send whose load failed), by the ledger
/// ([`LedgerPacket::grab_outcome`]); a packet the ledger holds open with shares to hand out is
/// reloaded ([`reload_from_ledger`]) and grabbed again in the live store.
pub async fn grab<S: LiveStore, L: Ledger>(
    store: &S,
    ledger: &L,
    id: &PacketId,
    attempt: &GrabAttempt,
    clock: &dyn Clock,
) -> Result<GrabOutcome, StoreError> {
    for asked in 0..=LEDGER_ASKS {
        let call = GrabCall { clock, ledger, again: asked > 0 };
        let (now_ms, recorded) = match store.try_grab(id, attempt, call).await? {
            LiveAnswer::Decided(outcome) => return Ok(outcome),
            LiveAnswer::NotHeld { .. } if asked == LEDGER_ASKS => break,
            LiveAnswer::NotHeld { now_ms, recorded } => (now_ms, recorded),
        };
        let Some(recorded) = recorded else { return Ok(GrabOutcome::NotFound) };
        if let Some(outcome) = recorded.grab_outcome(attempt, now_ms) {
            return Ok(outcome);
        }
        match Box::pin(reload_from_ledger(store, &recorded)).await? {
            None => return Err(StoreError::redis_unavailable(format!("packet {id} is being finalised; try again"))),
            // The live store lost the packet's record but not its log: settle's re-sync, not a load.
            Some(Restored::Partial) => {
                return Err(StoreError::redis_unavailable(format!("packet {id} is being re-synced")))
            }
            Some(Restored::Loaded | Restored::AlreadyHeld) => {
                tracing::warn!(packet_id = %id, "loaded a packet the ledger holds open and the live store did not, from the ledger");
            }
        }
    }
    Err(StoreError::redis_unavailable(format!("packet {id} kept changing; try again")))
}

/// The packet as `viewer` sees it at `now_ms`: live from Redis while open; from the ledger
/// once settled; a closed packet not yet settled from Redis, which has every grab. `None` for
/// an unknown id.
pub async fn current_view<S: LiveStore, L: Ledger>(
    store: &S,
    ledger: &L,
    id: &PacketId,
    viewer: &UserId,
    now_ms: Millis,
) -> Result<Option<PacketView>, StoreError> {
    let live = store.snapshot(id).await?;
    let live_view = |live: &LivePacket| {
        let status = PacketStatus::at(live.remaining_count, live.packet.expires_at_ms, live.cancelled, now_ms);
        live.packet.view(viewer, &live.grabs, status, None)
    };
    if let Some(live) = live.as_ref().filter(|live| live.open) {
        return Ok(Some(live_view(live)));
    }
    let recorded = ledger.ledger_packet(id).await?;
    Ok(match (recorded, live) {
        (Some(recorded), _) if recorded.status != PacketStatus::Open => Some(recorded.view(viewer, now_ms)),
        (_, Some(live)) => Some(live_view(&live)),
        (Some(recorded), None) => Some(recorded.view(viewer, now_ms)),
        (None, None) => None,
    })
}

/// Loads `recorded` into the live store if, and only if, the ledger holds it open: with the
/// ledger's grabs, the shares nobody holds in the ledger, and closed to grabs if its sender
/// cancelled it. A packet Redis still holds (even in part) is left as it is. `None` when the
/// ledger does not hold it open.
pub async fn reload_from_ledger<S: LiveStore>(
    store: &S,
    recorded: &LedgerPacket,
) -> Result<Option<Restored>, StoreError> {
    if recorded.status != PacketStatus::Open || recorded.refund_claimed() {
        return Ok(None);
    }
    let (grabs, pool) = (recorded.grabs_to_reload(), recorded.pool());
    let cancelled = recorded.cancelled_at_ms.is_some();
    let image = PacketImage { packet: &recorded.packet, cancelled, closed: false, grabs: &grabs, pool: &pool };
    Ok(Some(store.restore(image).await?))
}
