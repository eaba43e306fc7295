//! Use cases over the ports that more than one caller needs: a grab (live, else from the
//! ledger), a packet's view as it is now (whole, or one page of it at the cost of that page, and
//! whether a poll's tag still names it), and reloading a packet the ledger holds open into the
//! live store. The ledger is the truth: nothing here loads a packet the ledger has settled, or
//! loads one without the ledger's grabs.

use crate::clock::{Clock, Millis};
use crate::domain::grab::BestLuck;
use crate::domain::grab::GrabAttempt;
use crate::domain::ledger::LedgerPacket;
use crate::domain::tags::{self, TagScope};
use crate::domain::{GrabOutcome, GrabTotals, LivePacket, PacketId, PacketStatus, PacketView, UserId};
use crate::ports::{
    GrabCall, Ledger, LiveAnswer, LivePage, LiveStore, LiveVersion, PacketImage, Restored, SettledPage, StoreError,
};

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

/// One page of a packet's view with the tag that names it, as [`packet_page`] answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewPage {
    /// The view, with the page of grabs asked for.
    pub view: PacketView,
    /// Its tag, when a version names it ([`tags`]); `None` when only its bytes can (a closed
    /// packet settle has not finalised yet): the edge digests them.
    pub tag: Option<String>,
}

/// Which view a poll asks for and which page of it: what its tag is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewRead<'a> {
    /// The packet.
    pub id: &'a PacketId,
    /// The caller (whose own fields a whole view carries).
    pub viewer: &'a UserId,
    /// True for the shared view: the same for every caller.
    pub shared: bool,
    /// The page's first grab, 1 for the first.
    pub from: u32,
}

impl ViewRead<'_> {
    fn scope<'s>(&'s self, page: &'s str) -> TagScope<'s> {
        TagScope {
            read: if self.shared { "shared" } else { "view" },
            subject: self.id.as_str(),
            viewer: if self.shared { "*" } else { self.viewer.as_str() },
            page,
        }
    }

    /// The tag of the view at live `version` at `now_ms`, while the packet takes grabs: `None`
    /// once it is closed, or past its expiry (a view settle has not closed yet says `expired`).
    fn open_tag(&self, version: &LiveVersion, now_ms: Millis) -> Option<String> {
        let expires_at_ms = version.open_until_ms.filter(|expires_at_ms| now_ms < *expires_at_ms)?;
        let page = self.from.to_string();
        Some(tags::versioned(&self.scope(&page), &format!("{expires_at_ms}|{}", version.stamp)))
    }

    fn final_tag(&self) -> String {
        tags::finalised(&self.scope(&self.from.to_string()))
    }
}

/// A view a poll's tag still names: its tag, and whether it is a finalised packet's (which
/// never changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchanged {
    /// The tag.
    pub tag: String,
    /// True for a finalised packet's view.
    pub finalised: bool,
}

/// The tag among `presented` (a poll's `If-None-Match` values) that still names the view `read`
/// asks for at `now_ms`, found without building it: a finalised view's with no read at all, an
/// open packet's with one read of its live version. `None` when none does (or the packet is
/// neither open nor known to be finalised): then the view is built.
pub async fn unchanged_view<S: LiveStore>(
    store: &S,
    read: ViewRead<'_>,
    presented: &[&str],
    now_ms: Millis,
) -> Result<Option<Unchanged>, StoreError> {
    if presented.is_empty() {
        return Ok(None);
    }
    let named = |tag: &String| presented.iter().any(|value| tags::lists(value, tag));
    let final_tag = read.final_tag();
    if named(&final_tag) {
        return Ok(Some(Unchanged { tag: final_tag, finalised: true }));
    }
    let Some(version) = store.version(read.id).await? else { return Ok(None) };
    Ok(read.open_tag(&version, now_ms).filter(named).map(|tag| Unchanged { tag, finalised: false }))
}

/// The page of the view `read` asks for, at `now_ms`, read at the cost of that page whatever the
/// packet's size: while the packet is open, the page of Redis's grab log and the totals from the
/// split ([`live_page`]); once finalised, the page of the ledger's share claims and the totals
/// settle kept ([`Ledger::settled_page`]). Between the two (closed, not yet finalised), or when
/// the live store's pool has gaps a re-sync left, the whole packet is read
/// ([`current_view`]). `None` for an unknown id.
pub async fn packet_page<S: LiveStore, L: Ledger>(
    store: &S,
    ledger: &L,
    read: ViewRead<'_>,
    now_ms: Millis,
) -> Result<Option<ViewPage>, StoreError> {
    let len = PacketView::GRABS_PAGE;
    if let Some(page) = store.page(read.id, read.from, len, 0).await?.filter(|page| page.open) {
        if let Some(view) = live_page(store, read, page, now_ms).await? {
            return Ok(Some(view));
        }
    } else if let Some(settled) = ledger.settled_page(read.id, read.from, len).await? {
        return Ok(Some(ViewPage { view: settled_view(read, settled), tag: Some(read.final_tag()) }));
    }
    let Some(view) = current_view(store, ledger, read.id, read.viewer, now_ms).await? else { return Ok(None) };
    let tag = view.shared.settled.then(|| read.final_tag());
    Ok(Some(ViewPage { view: view.page(read.from), tag }))
}

/// The view of an open packet's page from the live store: the totals from the split, which the
/// pool's head places (every share from it on is still to take, unless a re-sync left gaps, or
/// the grabs do not account for every share taken: then `None`, and the caller reads the whole
/// packet); best luck, once every share is taken,
/// the grab of the split's largest share, read with the page or in one more call.
async fn live_page<S: LiveStore>(
    store: &S,
    read: ViewRead<'_>,
    page: LivePage,
    now_ms: Millis,
) -> Result<Option<ViewPage>, StoreError> {
    let packet = &page.packet;
    let count = packet.terms.count;
    let grabbed_cents = match page.next_share {
        _ if page.remaining_count == 0 && page.grab_count == count => packet.terms.total_cents,
        Some(next) if count.checked_sub(next) == page.remaining_count.checked_sub(1) => {
            packet.terms.total_cents - packet.shares_from(next)
        }
        _ => return Ok(None),
    };
    let best_luck = if page.remaining_count == 0 && page.grab_count == count {
        let Some((seq, amount_cents)) = packet.best_share() else { return Ok(None) };
        let holder = match page.grabs.iter().find(|grab| grab.seq == seq) {
            Some(grab) => Some(grab.clone()),
            None => store.page(read.id, seq, 0, seq).await?.and_then(|again| again.also),
        };
        match holder.filter(|grab| grab.seq == seq && grab.amount_cents == amount_cents) {
            Some(grab) => Some(BestLuck { user: grab.user, amount_cents }),
            None => return Ok(None),
        }
    } else {
        None
    };
    let end = read.from.saturating_add(PacketView::GRABS_PAGE);
    let totals = GrabTotals {
        grab_count: page.grab_count,
        grabbed_cents,
        best_luck,
        next_grabs_from: (end <= page.grab_count).then_some(end),
    };
    let status = PacketStatus::at(page.remaining_count, packet.expires_at_ms, page.cancelled, now_ms);
    let view = packet.page_view(read.viewer, &page.grabs, &totals, status, None);
    Ok(Some(ViewPage { view, tag: read.open_tag(&page.version, now_ms) }))
}

fn settled_view(read: ViewRead<'_>, settled: SettledPage) -> PacketView {
    let totals = GrabTotals {
        grab_count: settled.grab_count,
        grabbed_cents: settled.packet.terms.total_cents.saturating_sub(settled.refund_cents),
        best_luck: settled.best_luck,
        next_grabs_from: settled.more.then(|| read.from.saturating_add(PacketView::GRABS_PAGE)),
    };
    settled.packet.page_view(read.viewer, &settled.grabs, &totals, settled.status, Some(settled.refund_cents))
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
