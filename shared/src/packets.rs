//! Use cases over the ports that more than one function needs: a packet's view as it is now,
//! and reloading a packet the ledger holds open into the live store. The ledger is the truth:
//! nothing here loads a packet the ledger has settled, or loads one without the ledger's grabs.

use crate::clock::Millis;
use crate::domain::ledger::LedgerPacket;
use crate::domain::{LivePacket, PacketId, PacketStatus, PacketView, UserId};
use crate::ports::{Ledger, LiveStore, Restored, StoreError};

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
    let cancelled = recorded.cancelled_at_ms.is_some();
    Ok(Some(store.restore(&recorded.packet, cancelled, &recorded.grabs_to_reload(), &recorded.pool()).await?))
}
