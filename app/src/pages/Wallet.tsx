// 零钱: the balance, its movements newest first (paged back by cursor), and a withdrawal to a
// bound card or account (the payments system's token for it). One Idempotency-Key per withdrawal
// the user means, kept with its draft in sessionStorage as the send's is.
import { Button, Dialog, ErrorBlock, List, PullToRefresh, SpinLoading, Tag, Toast } from 'antd-mobile';
import { useCallback, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { useClient, useErrorText } from '../api';
import { FormRow } from '../components/FormRow';
import { LoadMore } from '../components/LoadMore';
import { Shell } from '../components/Shell';
import { forgetDraft, idempotencyKeyFor } from '../drafts';
import { formatTime, useI18n } from '../i18n';
import { DEFAULT_CURRENCY, formatDigits, formatMoney, OUT_KINDS, parseMoney } from '../money';
import { usePages } from '../paging';

/** Where the withdrawal's draft and its Idempotency-Key are kept (sessionStorage). */
const DRAFT_SLOT = 'app.withdrawDraft';
const DESTINATION = /^[A-Za-z0-9_.:-]{1,64}$/;

export function WalletPage() {
  const client = useClient();
  const errorText = useErrorText();
  const { t, locale } = useI18n();
  const navigate = useNavigate();
  const wallet = useCallback(async (cursor?: string) => (await client.wallet({ limit: 20, cursor })).data, [client]);
  const { first: page, items, cursor, loading, error, reload, more } = usePages(wallet);
  const [amount, setAmount] = useState('');
  const [destination, setDestination] = useState('');
  const [withdrawing, setWithdrawing] = useState(false);
  const [formError, setFormError] = useState('');

  const currency = page?.currency ?? DEFAULT_CURRENCY;

  const withdraw = async () => {
    setFormError('');
    const cents = parseMoney(amount, currency);
    if (cents === undefined || cents < 1) return setFormError(t.amountInvalid);
    const to = destination.trim();
    if (!DESTINATION.test(to)) return setFormError(t.withdrawDestinationInvalid);
    const request = { amount_cents: cents, destination: to };
    // Money out is confirmed first, with what leaves and where to, as WeChat does.
    const confirmed = await Dialog.confirm({
      title: t.withdrawConfirm,
      content: t.withdrawConfirmLead(formatMoney(cents, currency), to),
      confirmText: t.withdrawSubmit,
      cancelText: t.cancelKeep,
    });
    if (!confirmed) return;
    setWithdrawing(true);
    try {
      const idempotencyKey = idempotencyKeyFor(DRAFT_SLOT, JSON.stringify(request));
      const receipt = await client.withdraw(request, { idempotencyKey });
      forgetDraft(DRAFT_SLOT);
      setAmount('');
      Toast.show({ content: t.withdrawn(formatMoney(receipt.amount_cents, receipt.currency)), position: 'bottom' });
      await reload();
    } catch (failure) {
      setFormError(errorText(failure));
    } finally {
      setWithdrawing(false);
    }
  };

  return (
    <Shell title={t.tabWallet}>
      <PullToRefresh onRefresh={reload}>
        <div className="wallet">
          <section className="balance-card">
            <div className="balance-label">{t.walletTitle}</div>
            {page ? (
              <div className="balance" data-testid="wallet-balance" data-cents={page.balance_cents}>
                <span className="balance-symbol">{currency.code === 'CNY' ? '¥' : currency.code}</span>
                <span className="balance-digits">{formatDigits(page.balance_cents, currency)}</span>
              </div>
            ) : (
              <div className="balance">{loading ? <SpinLoading color="#f5c76e" /> : '—'}</div>
            )}
          </section>

          <form
            className="withdraw-card"
            onSubmit={(event) => {
              event.preventDefault();
              void withdraw();
            }}
          >
            <h3>{t.withdraw}</h3>
            <FormRow
              label={t.withdrawAmount}
              unit={t.yuan}
              name="withdraw_amount"
              inputMode="decimal"
              placeholder="0.00"
              value={amount}
              onChange={setAmount}
              maxLength={12}
            />
            <FormRow
              label={t.withdrawDestination}
              name="destination"
              placeholder={t.withdrawDestinationPlaceholder}
              value={destination}
              onChange={setDestination}
              maxLength={64}
            />
            {formError && (
              <p className="form-error" role="alert" data-testid="withdraw-error">
                {formError}
              </p>
            )}
            <Button block type="submit" color="danger" loading={withdrawing} data-submit="withdraw">
              {t.withdrawSubmit}
            </Button>
          </form>

          <h3 className="section-title">{t.movements}</h3>
          {error && <ErrorBlock status="disconnected" title={error} description="" />}
          {!error && !loading && items.length === 0 && <ErrorBlock status="empty" title={t.movementsEmpty} description="" />}
          {items.length > 0 && (
            <List className="movements" data-testid="movements">
              {items.map((item, index) => {
                const out = OUT_KINDS.has(item.kind);
                const signed = out ? -item.amount_cents : item.amount_cents;
                return (
                  <List.Item
                    key={`${item.at}-${item.kind}-${index}`}
                    data-testid="movement"
                    data-kind={item.kind}
                    data-cents={signed}
                    data-packet={item.packet_id ?? ''}
                    description={formatTime(item.at, locale, true)}
                    extra={
                      <span className={`movement-amount ${out ? 'out' : 'in'}`}>{formatMoney(signed, currency, true)}</span>
                    }
                    onClick={item.packet_id ? () => navigate(`/p/${item.packet_id}`) : undefined}
                    arrowIcon={item.packet_id ? undefined : false}
                  >
                    <span>{t.kinds[item.kind] ?? item.kind}</span>
                    {item.kind === 'withdrawal' && item.status && (
                      <Tag className="movement-status" color={item.status === 'failed' ? 'danger' : item.status === 'paid' ? 'success' : 'warning'} fill="outline">
                        {t.withdrawalStatus[item.status] ?? item.status}
                      </Tag>
                    )}
                  </List.Item>
                );
              })}
            </List>
          )}
          <LoadMore loading={loading && items.length > 0} hasMore={Boolean(cursor)} onMore={more} />
        </div>
      </PullToRefresh>
    </Shell>
  );
}
