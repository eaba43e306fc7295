// A packet, at /app/p/:packetId (the share link). Whoever has not grabbed it sees the red envelope
// with the sender's greeting and the 開 button; tapping it spins the coin while the grab is asked
// for, then the flap opens onto the amount in big gold digits, or the envelope says why not (the
// SDK's sentence for the error's code). A packet sent members_only carries the user's membership
// ticket for its chat when they have one; without one the grab is still sent and the server
// refuses it (403 not_eligible). The sender, and whoever grabbed, see the details: the grabs
// (user, amount, time). The page reads the caller's view (GET /packets/{id}) once, for its own
// fields; then it polls the shared view (GET /packets/{id}/shared: no token, the same for every
// viewer, cacheable at the edge) every 2.5 s with its ETag (a 304 is one cache read) for the
// grabs, the status and 手气最佳, until it is settled (its shared view never changes after that);
// the sender can take back (收回) what is left.
import { Button, Dialog, ErrorBlock, Input, SpinLoading, Tag, Toast } from 'antd-mobile';
import { LeftOutline } from 'antd-mobile-icons';
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { useNavigate, useParams } from 'react-router-dom';
import {
  isBehind,
  messageFor,
  RedPacketsError,
  useClient,
  useErrorText,
  watchSharedPacket,
  type PacketView,
  type SharedPacketView,
} from '../api';
import { initial, LanguageSwitch } from '../components/Shell';
import { formatTime, useI18n } from '../i18n';
import { formatDigits, formatMoney } from '../money';
import { useSession, useUser } from '../session';

const POLL_MS = 2_500;
/** The coin spins at least this long, so the opening reads as one. */
const SPIN_MS = 900;
/** The flap's swing, then the details. */
const FLAP_MS = 750;

/** The error code whose sentence says why a packet that is over cannot be grabbed. */
const OVER: Record<string, string> = { finished: 'sold_out', expired: 'expired', cancelled: 'cancelled' };

type Phase = 'envelope' | 'opening' | 'opened' | 'details';

interface Mine {
  cents: number;
  already: boolean;
}

export function PacketPage() {
  const { packetId = '' } = useParams();
  const client = useClient();
  const errorText = useErrorText();
  const { t } = useI18n();
  const { ticketFor } = useSession();
  const user = useUser();
  const navigate = useNavigate();

  const [view, setView] = useState<PacketView | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [phase, setPhase] = useState<Phase | null>(null);
  const [mine, setMine] = useState<Mine | null>(null);
  const [refusal, setRefusal] = useState<{ code: string; text: string } | null>(null);
  const [passphrase, setPassphrase] = useState('');
  const [cancelling, setCancelling] = useState(false);
  const live = useRef(true);

  useEffect(() => {
    live.current = true;
    return () => {
      live.current = false;
    };
  }, []);

  // the caller's view, read once: the shared view and the caller's own fields (eligible, recipients)
  const load = useCallback(async () => {
    const answer = await client.packet(packetId);
    if (live.current) setView(answer.data);
  }, [client, packetId]);

  // a shared view: the shown one's own fields kept; never one older than what is shown (an open
  // packet's shared view may be 2 s old at the edge, and a poll may land after a cancel's answer)
  const apply = useCallback((shared: SharedPacketView) => {
    if (!live.current) return;
    setView((shown) => {
      if (!shown || isBehind(shared, shown)) return shown;
      return { ...shared, eligible: shown.eligible, ...(shown.recipients ? { recipients: shown.recipients } : {}) };
    });
  }, []);

  /** The shared view now (after the user's grab or refusal); a failure leaves the view shown. */
  const refresh = useCallback(async () => {
    const answer = await client.sharedPacket(packetId);
    if (!answer.notModified) apply(answer.data);
  }, [client, packetId, apply]);

  // the first view decides the page: details for the sender and for whoever grabbed already
  useEffect(() => {
    setView(null);
    setPhase(null);
    setMine(null);
    setRefusal(null);
    setLoadError(null);
    load().catch((error: unknown) => live.current && setLoadError(error));
  }, [load]);

  useEffect(() => {
    if (!view || phase !== null) return;
    const grabbed = view.grabs.find((grab) => grab.user === user);
    if (grabbed) setMine({ cents: grabbed.amount_cents, already: true });
    setPhase(view.sender === user || grabbed ? 'details' : 'envelope');
  }, [view, phase, user]);

  // polling the shared view, while the page is shown and the packet is not settled (the SDK's
  // watch stops by itself at the settled view; a failed poll is tried again at the next one, the
  // view shown stays)
  const loaded = view !== null;
  const settled = view?.settled ?? false;
  useEffect(() => {
    if (!loaded || settled) return;
    const watch = watchSharedPacket(client, packetId, {
      intervalMs: POLL_MS,
      paused: () => document.hidden,
      onView: apply,
    });
    return () => watch.stop();
  }, [loaded, settled, client, packetId, apply]);

  const open = async () => {
    if (!view || phase === 'opening') return;
    setRefusal(null);
    setPhase('opening');
    const started = Date.now();
    try {
      let membershipTicket: string | undefined;
      if (view.members_only && view.chat_id) membershipTicket = await ticketFor(view.chat_id).catch(() => undefined);
      const answer = await client.grab(view.packet_id, {
        ...(view.has_passphrase ? { passphrase } : {}),
        ...(membershipTicket ? { membershipTicket } : {}),
      });
      await sleep(SPIN_MS - (Date.now() - started));
      if (!live.current) return;
      setMine({ cents: answer.amount_cents, already: answer.already_grabbed });
      setPhase('opened');
      refresh().catch(() => {});
      await sleep(FLAP_MS);
      if (live.current) setPhase('details');
    } catch (failure) {
      await sleep(SPIN_MS - (Date.now() - started));
      if (!live.current) return;
      const code = failure instanceof RedPacketsError ? failure.code : 'network_error';
      // A members-only packet refuses those its chat's ticket does not admit: said as such.
      const forMembers = code === 'not_eligible' && view.members_only && view.chat_id;
      setRefusal({ code, text: forMembers ? t.notAMember(view.chat_id as string) : errorText(failure) });
      setPhase('envelope');
      refresh().catch(() => {});
    }
  };

  const cancel = async () => {
    if (!view) return;
    const confirmed = await Dialog.confirm({
      title: t.cancelConfirm,
      content: t.cancelConfirmLead,
      confirmText: t.cancelOk,
      cancelText: t.cancelKeep,
    });
    if (!confirmed) return;
    setCancelling(true);
    try {
      const answer = await client.cancel(view.packet_id);
      if (live.current) setView(answer);
      Toast.show({ content: t.cancelled, position: 'bottom' });
    } catch (failure) {
      Toast.show({ content: errorText(failure), position: 'bottom' });
    } finally {
      if (live.current) setCancelling(false);
    }
  };

  const back = (
    <button type="button" className="icon-button" aria-label={t.back} data-action="back" onClick={() => navigate(-1)}>
      <LeftOutline />
    </button>
  );

  if (loadError) {
    const missing = loadError instanceof RedPacketsError && loadError.code === 'not_found';
    return (
      <div className="packet-page">
        <div className="packet-bar">
          {back}
          <LanguageSwitch light />
        </div>
        <ErrorBlock status={missing ? 'empty' : 'disconnected'} title={missing ? t.packetMissing : errorText(loadError)} description="" />
      </div>
    );
  }
  if (!view || phase === null) {
    return (
      <div className="packet-page dim center-fill">
        <SpinLoading color="#f5c76e" />
      </div>
    );
  }

  if (phase !== 'details') {
    return (
      <div className="packet-page dim">
        <div className="packet-bar">
          {back}
          <LanguageSwitch light />
        </div>
        <Envelope
          view={view}
          phase={phase}
          mine={mine}
          refusal={refusal}
          passphrase={passphrase}
          onPassphrase={setPassphrase}
          onOpen={open}
          onDetails={() => setPhase('details')}
        />
      </div>
    );
  }

  return (
    <div className="packet-page">
      <Details view={view} mine={mine} me={user} cancelling={cancelling} onCancel={cancel} back={back} />
    </div>
  );
}

function Envelope(props: {
  view: PacketView;
  phase: Phase;
  mine: Mine | null;
  refusal: { code: string; text: string } | null;
  passphrase: string;
  onPassphrase(value: string): void;
  onOpen(): void;
  onDetails(): void;
}) {
  const { t, locale } = useI18n();
  const { view: packet, phase: now, refusal: why } = props;
  // a refusal that another try would not change hides the 開 button
  const retryable = !why || ['wrong_passphrase', 'network_error', 'timeout', 'unavailable', 'gateway_unavailable', 'gateway_throttled', 'not_open_yet', 'grab_rate_limited'].includes(why.code);
  const opensAt = packet.opens_at && Date.parse(packet.opens_at) > Date.now() ? packet.opens_at : undefined;
  return (
    <div className={`envelope ${now}`} data-testid="envelope" data-phase={now}>
      <div className="envelope-back" />
      <div className="envelope-inside" aria-live="polite">
        {props.mine && (
          <>
            <span className="digits">{formatDigits(props.mine.cents, packet.currency)}</span>
            <span className="unit">{packet.currency.code === 'CNY' ? t.yuan : packet.currency.code}</span>
          </>
        )}
      </div>
      <div className="envelope-flap">
        <div className="envelope-sender">
          <span className="avatar">{initial(packet.sender)}</span>
          <span className="envelope-sender-name" data-testid="envelope-sender">
            {t.packetOf(packet.sender)}
          </span>
        </div>
        {why ? (
          <p className="envelope-refusal" role="alert" data-testid="grab-refused" data-code={why.code}>
            {why.text}
          </p>
        ) : (
          <p className="envelope-greeting" data-testid="envelope-greeting">
            {packet.greeting || t.defaultGreeting}
          </p>
        )}
        <div className="envelope-tags">
          {packet.members_only && packet.chat_id && <span className="envelope-tag">{t.membersOnlyTag(packet.chat_id)}</span>}
          {opensAt && <span className="envelope-tag">{t.opensAtLabel(formatTime(opensAt, locale))}</span>}
        </div>
        {packet.has_passphrase && retryable && packet.status === 'open' && (
          <div className="envelope-passphrase">
            <Input
              name="passphrase"
              placeholder={t.passphraseToOpen}
              value={props.passphrase}
              onChange={props.onPassphrase}
              maxLength={32}
            />
          </div>
        )}
      </div>
      {retryable && packet.status === 'open' && (
        <button
          type="button"
          className="coin"
          data-action="open"
          aria-label={t.open}
          disabled={now !== 'envelope'}
          onClick={props.onOpen}
        >
          <span className="coin-face">{t.open}</span>
        </button>
      )}
      {packet.status !== 'open' && !why && (
        <p className="envelope-refusal over" data-testid="packet-over">
          {messageFor(OVER[packet.status] ?? 'sold_out', locale)}
        </p>
      )}
      <button type="button" className="envelope-foot" data-action="details" onClick={props.onDetails}>
        {t.viewDetails} ›
      </button>
    </div>
  );
}

function Details({
  view,
  mine,
  me,
  cancelling,
  onCancel,
  back,
}: {
  view: PacketView;
  mine: Mine | null;
  me: string;
  cancelling: boolean;
  onCancel(): void;
  back: ReactNode;
}) {
  const { t, locale } = useI18n();
  const taken = view.grab_count;
  const isSender = view.sender === me;
  const best = view.settled && view.best_luck ? view.best_luck : null;
  const grabbedCents = view.total_cents - view.remaining_cents;
  return (
    <section className="details" data-testid="packet-details">
      <div className="details-head">
        <div className="packet-bar">
          {back}
          <LanguageSwitch light />
        </div>
        <div className="details-sender">
          <span className="avatar">{initial(view.sender)}</span>
          <span>{t.detailsOf(view.sender)}</span>
          {view.kind === 'lucky' && <span className="pin small">拼</span>}
        </div>
        <p className="details-greeting">{view.greeting || t.defaultGreeting}</p>
        {mine && (
          <div className="details-amount" data-testid="grab-amount" data-cents={mine.cents}>
            <span className="digits">{formatDigits(mine.cents, view.currency)}</span>
            <span className="unit">{view.currency.code === 'CNY' ? t.yuan : view.currency.code}</span>
          </div>
        )}
        {mine && <p className="details-note">{mine.already ? t.alreadyGrabbed : t.youGot}</p>}
        <div className="details-curve" />
      </div>

      <div className="details-summary">
        <span data-testid="packet-summary">
          {t.summary(view.count, formatMoney(view.total_cents, view.currency), taken)}
          {taken > 0 && grabbedCents > 0 && isSender ? ` · ${formatMoney(grabbedCents, view.currency)}` : ''}
        </span>
        <Tag
          color={view.status === 'open' ? 'success' : 'default'}
          fill="outline"
          data-testid="packet-status"
          data-status={view.status}
          data-settled={String(view.settled)}
        >
          {statusText(view.status, t)}
        </Tag>
      </div>
      {(view.chat_id || view.members_only) && (
        <div className="details-tags">
          {view.chat_id && <Tag color="warning" fill="outline">{view.members_only ? t.membersOnlyTag(view.chat_id) : t.chatTag(view.chat_id)}</Tag>}
        </div>
      )}

      {isSender && view.settled && view.refund_cents != null && view.refund_cents > 0 && (
        <p className="details-refund" data-testid="refund" data-cents={view.refund_cents}>
          {t.refunded(formatMoney(view.refund_cents, view.currency))}
        </p>
      )}
      {isSender && view.status === 'cancelled' && !view.settled && <p className="details-refund muted">{t.refundPending}</p>}

      <ul className="grab-list" data-testid="grab-list">
        {view.grabs.length === 0 && <li className="grab-empty muted">{t.noGrabs}</li>}
        {view.grabs.map((grab) => {
          const lucky = best !== null && best.user === grab.user && best.amount_cents === grab.amount_cents;
          return (
            <li
              key={grab.share + grab.user}
              className={`grab-row${grab.user === me ? ' me' : ''}`}
              data-testid="grab-row"
              data-user={grab.user}
              data-cents={grab.amount_cents}
              data-best-luck={String(lucky)}
            >
              <span className="avatar">{initial(grab.user)}</span>
              <div className="grab-who">
                <div className="grab-user">{grab.user}</div>
                <div className="grab-time muted small">{formatTime(grab.grabbed_at, locale, true)}</div>
              </div>
              <div className="grab-amount">
                <div>{formatMoney(grab.amount_cents, view.currency)}</div>
                {lucky && (
                  <div className="best-luck" data-testid="best-luck">
                    <Crown />
                    <span>{t.bestLuck}</span>
                  </div>
                )}
              </div>
            </li>
          );
        })}
      </ul>

      {isSender && view.status === 'open' && view.remaining_count > 0 && (
        <div className="details-actions">
          <Button block color="danger" fill="outline" loading={cancelling} onClick={onCancel} data-action="cancel">
            {t.cancel} {formatMoney(view.remaining_cents, view.currency)}
          </Button>
        </div>
      )}
    </section>
  );
}

/** The best luck's crown (an emoji needs a font the phone may lack). */
function Crown() {
  return (
    <svg className="crown" viewBox="0 0 24 24" aria-hidden="true">
      <path d="M3 7l4.5 4L12 4l4.5 7L21 7l-2 12H5L3 7z" />
    </svg>
  );
}

function statusText(status: PacketView['status'], t: ReturnType<typeof useI18n>['t']): string {
  switch (status) {
    case 'open':
      return t.statusOpen;
    case 'finished':
      return t.statusFinished;
    case 'expired':
      return t.statusExpired;
    case 'cancelled':
      return t.statusCancelled;
    default:
      return String(status);
  }
}

function sleep(ms: number) {
  return new Promise((done) => setTimeout(done, Math.max(0, ms)));
}
