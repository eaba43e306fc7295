// 发红包: lucky (拼手气, the total typed) or fixed (普通, the amount of each share typed, as
// WeChat does; the total sent is each × count), the count, the greeting, and more: the chat (and
// "members only"), recipients, a passphrase, an opening time. Amounts are typed in yuan and sent in
// integer cents. One Idempotency-Key per send the user means, kept with the draft in
// sessionStorage: tapping again after a failure sends the same key with the same body
// (docs/CLIENTS.md, Idempotency); a changed draft gets a new key.
import { Button, Collapse, Input, Switch, Tabs, TextArea, Toast } from 'antd-mobile';
import { useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import {
  draftProblem,
  limitMessage,
  RedPacketsError,
  useClient,
  useErrorText,
  type PacketView,
  type SendLimits,
  type SendRequest,
} from '../api';
import { FormRow } from '../components/FormRow';
import { Shell } from '../components/Shell';
import { forgetDraft, idempotencyKeyFor } from '../drafts';
import { useI18n } from '../i18n';
import { DEFAULT_CURRENCY, formatMoney, parseMoney, type Currency } from '../money';
import { useSession } from '../session';

/** Where the send's draft and its Idempotency-Key are kept (sessionStorage). */
const DRAFT_SLOT = 'app.sendDraft';
const CHAT = /^[A-Za-z0-9_.:@-]{1,128}$/;

type Kind = 'lucky' | 'fixed';

export function shareLink(packetId: string): string {
  return `${window.location.origin}${import.meta.env.BASE_URL}p/${packetId}`;
}

export function SendPage() {
  const { t, locale } = useI18n();
  const client = useClient();
  const errorText = useErrorText();
  const { state } = useSession();
  const navigate = useNavigate();
  const myChats = state.status === 'signed-in' ? state.chats : [];

  const [kind, setKind] = useState<Kind>('lucky');
  const [amount, setAmount] = useState('');
  const [count, setCount] = useState('');
  const [greeting, setGreeting] = useState('');
  const [chatId, setChatId] = useState('');
  const [membersOnly, setMembersOnly] = useState(false);
  const [recipients, setRecipients] = useState('');
  const [passphrase, setPassphrase] = useState('');
  const [opensAt, setOpensAt] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [sent, setSent] = useState<PacketView | null>(null);
  const [balance, setBalance] = useState<{ cents: number; currency: Currency } | null>(null);
  const [limits, setLimits] = useState<SendLimits | null>(null);

  // The stack's limits, read once: stated under the form, and every draft checked against them
  // before it is sent (GET /me/limits; the server checks them again).
  useEffect(() => {
    let live = true;
    client
      .limits()
      .then(({ data }) => live && setLimits(data))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [client]);

  useEffect(() => {
    let live = true;
    client
      .wallet({ limit: 1 })
      .then(({ data }) => live && setBalance({ cents: data.balance_cents, currency: data.currency }))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [client, sent]);

  const currency = balance?.currency ?? DEFAULT_CURRENCY;
  const shares = /^\d{1,6}$/.test(count.trim()) ? Number(count.trim()) : undefined;
  const typedCents = parseMoney(amount, currency);
  const totalCents = useMemo(() => {
    if (typedCents === undefined) return undefined;
    if (kind === 'lucky') return typedCents;
    return shares === undefined ? undefined : typedCents * shares;
  }, [typedCents, kind, shares]);

  const submit = async () => {
    setError('');
    if (shares === undefined || shares < 1) return setError(t.countInvalid);
    if (totalCents === undefined || totalCents < 1) return setError(t.amountInvalid);
    const chat = chatId.trim();
    if (chat && !CHAT.test(chat)) return setError(t.chatInvalid);
    if (membersOnly && !chat) return setError(t.membersOnlyNeedsChat);
    const named = [...new Set(recipients.split(/[\s,，、]+/).filter(Boolean))];
    const draft = {
      total_cents: totalCents,
      count: shares,
      kind,
      greeting: greeting.trim() || t.defaultGreeting,
      ...(named.length ? { recipients: named } : {}),
      ...(passphrase ? { passphrase } : {}),
      ...(chat ? { chat_id: chat } : {}),
      ...(chat && membersOnly ? { members_only: true } : {}),
      ...(opensAt ? { opens_at: new Date(opensAt).toISOString() } : {}),
    } as SendRequest;
    const problem = limits && draftProblem(draft, limits);
    if (limits && problem) return setError(limitMessage(problem.limit, limits, locale));
    const idempotencyKey = idempotencyKeyFor(DRAFT_SLOT, JSON.stringify(draft));
    setBusy(true);
    try {
      const packet = await client.send(draft, { idempotencyKey });
      forgetDraft(DRAFT_SLOT);
      setSent(packet);
    } catch (failure) {
      setError(explain(failure, errorText(failure), t, locale));
    } finally {
      setBusy(false);
    }
  };

  if (sent) {
    const link = shareLink(sent.packet_id);
    return (
      <Shell title={t.tabSend}>
        <section className="sent-card" data-testid="sent">
          <div className="sent-envelope" aria-hidden="true">
            <span>福</span>
          </div>
          <h2>{t.sentTitle}</h2>
          <p className="sent-amount">{formatMoney(sent.total_cents, sent.currency)}</p>
          <p className="muted">{t.sentLead}</p>
          <div className="share-link" data-testid="share-link" data-packet={sent.packet_id}>
            {link}
          </div>
          <div className="button-row">
            <Button
              color="danger"
              data-action="copy-link"
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(link);
                  Toast.show({ content: t.copied, position: 'bottom' });
                } catch {
                  selectText('[data-testid=share-link]');
                  Toast.show({ content: t.copyFailed, position: 'bottom' });
                }
              }}
            >
              {t.copy}
            </Button>
            <Button fill="outline" color="danger" data-action="view-packet" onClick={() => navigate(`/p/${sent.packet_id}`)}>
              {t.viewPacket}
            </Button>
          </div>
          <Button fill="none" className="link-button" data-action="send-another" onClick={() => setSent(null)}>
            {t.sendAnother}
          </Button>
        </section>
      </Shell>
    );
  }

  return (
    <Shell title={t.tabSend}>
      <form
        className="send-form"
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <Tabs activeKey={kind} onChange={(key) => setKind(key as Kind)} className="kind-tabs">
          <Tabs.Tab title={t.lucky} key="lucky" />
          <Tabs.Tab title={t.fixed} key="fixed" />
        </Tabs>
        <p className="kind-hint muted small">{kind === 'lucky' ? t.luckyHint : t.fixedHint}</p>

        <div className="form-card">
          <FormRow
            label={
              <>
                {kind === 'lucky' && <span className="pin">拼</span>}
                {kind === 'lucky' ? t.totalAmount : t.eachAmount}
              </>
            }
            unit={t.yuan}
            name="amount"
            inputMode="decimal"
            placeholder="0.00"
            value={amount}
            onChange={setAmount}
            maxLength={12}
          />
        </div>
        <div className="form-card">
          <FormRow
            label={t.count}
            unit={t.countUnit}
            name="count"
            inputMode="numeric"
            placeholder="1"
            value={count}
            onChange={setCount}
            maxLength={6}
          />
        </div>
        <div className="form-card">
          <label className="visually-hidden" htmlFor="greeting">
            {t.greeting}
          </label>
          <TextArea
            id="greeting"
            name="greeting"
            placeholder={t.defaultGreeting}
            value={greeting}
            onChange={setGreeting}
            maxLength={limits?.max_greeting_chars ?? 64}
            showCount
            rows={1}
            autoSize={{ minRows: 1, maxRows: 3 }}
          />
        </div>

        <div className="form-card">
          <FormRow
            label={t.chatId}
            id="chat_id"
            name="chat_id"
            placeholder={t.chatIdPlaceholder}
            value={chatId}
            onChange={setChatId}
            maxLength={128}
          />
          {myChats.length > 0 && (
            <div className="chat-picks">
              {myChats.map((id) => (
                <button type="button" key={id} className={`chat-pick${chatId === id ? ' on' : ''}`} onClick={() => setChatId(id)}>
                  {id}
                </button>
              ))}
            </div>
          )}
          <div className="switch-row">
            <div>
              <div>{t.membersOnly}</div>
              <div className="muted small">{t.membersOnlyHint}</div>
            </div>
            <Switch checked={membersOnly} onChange={setMembersOnly} data-testid="members-only" />
          </div>
        </div>

        <Collapse className="more">
          <Collapse.Panel key="more" title={t.more}>
            <div className="more-fields">
              <label className="field-label" htmlFor="recipients">
                {t.recipients}
              </label>
              <div className="input-box">
                <TextArea id="recipients" name="recipients" placeholder={t.recipientsPlaceholder} value={recipients} onChange={setRecipients} rows={1} autoSize={{ minRows: 1, maxRows: 4 }} />
              </div>
              <label className="field-label" htmlFor="passphrase">
                {t.passphrase}
              </label>
              <div className="input-box">
                <Input id="passphrase" name="passphrase" placeholder={t.passphrasePlaceholder} value={passphrase} onChange={setPassphrase} maxLength={32} />
              </div>
              <label className="field-label" htmlFor="opens_at">
                {t.opensAt} <span className="muted small">{t.opensAtHint}</span>
              </label>
              <div className="input-box">
                <input
                  id="opens_at"
                  name="opens_at"
                  type="datetime-local"
                  className="native-input"
                  value={opensAt}
                  onChange={(event) => setOpensAt(event.target.value)}
                />
              </div>
            </div>
          </Collapse.Panel>
        </Collapse>

        {limits && (
          <p className="muted small limits-hint" data-testid="send-limits" data-max-total={limits.max_total_cents} data-max-count={limits.max_count}>
            {limitMessage('max_total_cents', limits, locale)}
            {locale === 'en' ? '; ' : '；'}
            {limitMessage('max_count', limits, locale)}
          </p>
        )}
        <div className="big-total" data-testid="send-total" data-cents={totalCents ?? 0}>
          {formatMoney(totalCents ?? 0, currency)}
        </div>
        {error && (
          <p className="form-error" role="alert" data-testid="send-error">
            {error}
          </p>
        )}
        <Button block type="submit" color="danger" size="large" loading={busy} loadingText={t.sending} className="send-button" data-submit="send">
          {t.submitSend}
        </Button>
        {balance && (
          <p className="muted small center" data-testid="send-balance" data-cents={balance.cents}>
            {t.balance} {formatMoney(balance.cents, balance.currency)}
          </p>
        )}
      </form>
    </Shell>
  );
}

/** A validation error names its field: the SDK's sentence plus the field's name, when it has one. */
function explain(failure: unknown, sentence: string, t: ReturnType<typeof useI18n>['t'], locale: string): string {
  if (!(failure instanceof RedPacketsError) || failure.code !== 'invalid_request' || !failure.field) return sentence;
  const labels: Record<string, string> = {
    total_cents: t.totalAmount,
    count: t.count,
    greeting: t.greeting,
    recipients: t.recipients,
    passphrase: t.passphrase,
    chat_id: t.chatId,
    members_only: t.membersOnly,
    opens_at: t.opensAt,
  };
  const label = labels[failure.field] ?? failure.field;
  return locale === 'en' ? `${sentence} (${label})` : `${sentence}（${label}）`;
}

function selectText(selector: string) {
  const node = document.querySelector(selector);
  if (!node) return;
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}
