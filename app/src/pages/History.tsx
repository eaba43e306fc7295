// 红包记录: sent and received, newest first, paged back by cursor (docs/CLIENTS.md, Polling for
// history). A received grab shows here once settle has recorded it (seconds).
import { ErrorBlock, List, PullToRefresh, Tabs, Tag } from 'antd-mobile';
import { useCallback } from 'react';
import { useNavigate, useSearchParams } from 'react-router-dom';
import { useClient, type HistoryItem, type HistoryPage as Page } from '../api';
import { LoadMore } from '../components/LoadMore';
import { Shell } from '../components/Shell';
import { formatTime, useI18n } from '../i18n';
import { formatMoney } from '../money';
import { usePages } from '../paging';

type Role = 'sent' | 'received';

export function HistoryPage() {
  const { t } = useI18n();
  const [params, setParams] = useSearchParams();
  const role: Role = params.get('role') === 'received' ? 'received' : 'sent';
  return (
    <Shell title={t.tabHistory}>
      <Tabs activeKey={role} onChange={(key) => setParams({ role: key }, { replace: true })} className="history-tabs">
        <Tabs.Tab title={t.sent} key="sent" />
        <Tabs.Tab title={t.received} key="received" />
      </Tabs>
      <RoleList key={role} role={role} />
    </Shell>
  );
}

function RoleList({ role }: { role: Role }) {
  const client = useClient();
  const { t, locale } = useI18n();
  const navigate = useNavigate();
  const page = useCallback(
    async (cursor?: string) => (await client.history(role, { limit: 20, cursor })).data,
    [client, role],
  );
  const { first, items, cursor, loading, error, reload, more } = usePages(page);
  const currency = first?.currency;

  return (
    <PullToRefresh onRefresh={reload}>
      <div className="history" data-testid={`history-${role}`}>
        {error && <ErrorBlock status="disconnected" title={error} description="" />}
        {!error && !loading && items.length === 0 && (
          <ErrorBlock status="empty" title={role === 'sent' ? t.historyEmptySent : t.historyEmptyReceived} description="" />
        )}
        {items.length > 0 && (
          <List className="history-list">
            {items.map((item) => (
              <List.Item
                key={item.packet_id}
                data-testid="history-item"
                data-packet={item.packet_id}
                prefix={<span className="history-icon">福</span>}
                description={formatTime(item.created_at, locale)}
                extra={<Amount item={item} role={role} currency={currency} />}
                onClick={() => navigate(`/p/${item.packet_id}`)}
              >
                {role === 'sent' ? t.sentPacket(item.count) : t.from(item.sender)}
              </List.Item>
            ))}
          </List>
        )}
        <LoadMore
          loading={loading}
          hasMore={Boolean(cursor)}
          onMore={more}
          end={items.length > 0 ? t.noMore : undefined}
        />
      </div>
    </PullToRefresh>
  );
}

function Amount({ item, role, currency }: { item: HistoryItem; role: Role; currency?: Page['currency'] }) {
  const { t } = useI18n();
  const status: Record<string, string> = {
    open: t.statusOpen,
    finished: t.statusFinished,
    expired: t.statusExpired,
    cancelled: t.statusCancelled,
  };
  if (role === 'received') {
    if (item.revoked_cents != null) {
      return (
        <span className="history-amount revoked">
          <s>{formatMoney(item.revoked_cents, currency)}</s> <Tag color="default">{t.revoked}</Tag>
        </span>
      );
    }
    return <span className="history-amount">{formatMoney(item.amount_cents ?? 0, currency)}</span>;
  }
  return (
    <span className="history-amount">
      <span>{formatMoney(item.total_cents, currency)}</span>
      <span className="history-status muted small">{status[item.status] ?? item.status}</span>
    </span>
  );
}
