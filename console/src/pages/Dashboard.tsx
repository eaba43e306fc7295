import { Box, Card, CardContent, CardHeader, Link as MuiLink, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router-dom';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { Title, useGetIdentity, useGetList, useTranslate } from 'react-admin';
import { FLAG_RULES, HOLD_SCOPES } from '../components/choices';
import { MoneyField } from '../components/MoneyField';
import { useBusinessToday } from '../businessDay';
import { useConsoleDataProvider, type BusinessHours, type Walked } from '../dataProvider';
import { formatMoney, type Currency } from '../money';
import { UserSearch } from './users';

type Counted = { id: string; name: string; count: number };

function countBy(records: Record<string, unknown>[] | undefined, field: string, keys: { id: string; name: string }[], translate: (key: string) => string): Counted[] {
  return keys.map(({ id, name }) => ({
    id,
    name: translate(name),
    count: (records ?? []).filter((record) => record[field] === id).length,
  }));
}

/** A card of the dashboard: its body, or the call's failure (the server's message, as text). */
const Panel = ({ title, testId, error, children }: { title: string; testId: string; error?: Error | null; children: ReactNode }) => (
  <Card sx={{ flex: '1 1 380px' }} data-testid={testId}>
    <CardHeader title={title} titleTypographyProps={{ variant: 'subtitle1' }} />
    <CardContent>
      {error ? (
        <Typography color="text.secondary" data-testid={`${testId}-error`}>
          {error.message}
        </Typography>
      ) : (
        children
      )}
    </CardContent>
  </Card>
);

/** Said when a list was longer than the dashboard reads. */
const Partial = ({ walked }: { walked?: Walked }) => {
  const translate = useTranslate();
  return walked && !walked.complete ? (
    <Typography variant="caption" color="text.secondary" component="p">
      {translate('console.dashboard.partial', { count: walked.records.length })}
    </Typography>
  ) : null;
};

/** Counts as bars, and the same counts as text beneath (what a screen reader or no chart says). */
const CountChart = ({ data }: { data: Counted[] }) => {
  const translate = useTranslate();
  if (data.every((row) => row.count === 0)) {
    return <Typography color="text.secondary">{translate('console.dashboard.empty')}</Typography>;
  }
  return (
    <>
      <Box sx={{ height: 220 }}>
        <ResponsiveContainer width="100%" height="100%">
          <BarChart data={data}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="name" />
            <YAxis allowDecimals={false} />
            <Tooltip />
            <Bar dataKey="count" name={translate('console.dashboard.count')} fill="#c62828" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </Box>
      <Typography variant="body2" color="text.secondary" component="p" data-testid="chart-text">
        {data.map((row) => `${row.name}: ${row.count}`).join(' · ')}
      </Typography>
    </>
  );
};

type PendingOut = { id: 'on_time' | 'overdue'; name: string; cents: number; count: number };

/** Money pending out: the pending withdrawals' sums, on time and overdue. */
const PendingOutChart = ({ rows, currency }: { rows: PendingOut[]; currency?: Currency }) => {
  const translate = useTranslate();
  if (rows.every((row) => row.count === 0)) {
    return <Typography color="text.secondary">{translate('console.dashboard.empty')}</Typography>;
  }
  const money = (value: unknown) => formatMoney(Number(value), currency);
  return (
    <>
      <Box sx={{ height: 220 }}>
        <ResponsiveContainer width="100%" height="100%">
          <BarChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="name" />
            <YAxis tickFormatter={money} width={110} />
            <Tooltip formatter={money} />
            <Bar dataKey="cents" name={translate('console.dashboard.amount')} fill="#c62828" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </Box>
      <Box data-testid="chart-text">
        {rows.map((row) => (
          <Typography key={row.id} variant="body2" color="text.secondary" data-kind={row.id}>
            {row.name}: <MoneyField source="cents" record={{ id: row.id, cents: row.cents, currency }} />{' '}
            {translate('console.dashboard.withdrawals_count', { count: row.count })}
          </Typography>
        ))}
      </Box>
    </>
  );
};

/** The hourly view's measures, in the server's order. */
const MEASURES = [
  'sent',
  'grabbed',
  'refunded',
  'revoked',
  'withdrawal_requested',
  'withdrawal_paid',
  'withdrawal_failed',
] as const;
type MeasureName = (typeof MEASURES)[number];
/** What the charts draw: counts of sends and grabs, amounts of the money's four ways. */
const COUNTED: MeasureName[] = ['sent', 'grabbed'];
const AMOUNTS: MeasureName[] = ['sent', 'grabbed', 'refunded', 'withdrawal_paid'];
const COLOURS: Record<MeasureName, string> = {
  sent: '#c62828',
  grabbed: '#b45309',
  refunded: '#1565c0',
  revoked: '#6a1b9a',
  withdrawal_requested: '#2e7d32',
  withdrawal_paid: '#2e7d32',
  withdrawal_failed: '#455a64',
};

/**
 * Today's business day by hour, from the server's hourly view (`GET /ops/v1/reports/hours/{day}`):
 * sends and grabs counted, the money's ways in amounts, and every measure's day total as text
 * beneath (what a screen reader or no chart says).
 */
const HoursCharts = ({ view }: { view: BusinessHours }) => {
  const translate = useTranslate();
  const name = (measure: MeasureName) => translate(`console.dashboard.m_${measure}`);
  const exponent = view.currency.exponent;
  const rows = view.hours.map((hour) => {
    const row: Record<string, number | string> = { hour: String(hour.hour ?? 0).padStart(2, '0') };
    for (const measure of MEASURES) {
      row[`${measure}_count`] = hour[measure].count;
      row[`${measure}_amount`] = hour[measure].amount_cents / 10 ** exponent;
    }
    return row;
  });
  return (
    <>
      <Typography variant="body2" component="p">
        {translate('console.dashboard.hours_counts')}
      </Typography>
      <Box sx={{ height: 200 }} data-testid="hours-counts">
        <ResponsiveContainer width="100%" height="100%">
          <BarChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="hour" />
            <YAxis allowDecimals={false} />
            <Tooltip />
            <Legend />
            {COUNTED.map((measure) => (
              <Bar key={measure} dataKey={`${measure}_count`} name={name(measure)} fill={COLOURS[measure]} isAnimationActive={false} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </Box>
      <Typography variant="body2" component="p">
        {translate('console.dashboard.hours_amounts')} ({view.currency.code})
      </Typography>
      <Box sx={{ height: 200 }} data-testid="hours-amounts">
        <ResponsiveContainer width="100%" height="100%">
          <LineChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="hour" />
            <YAxis />
            <Tooltip />
            <Legend />
            {AMOUNTS.map((measure) => (
              <Line key={measure} dataKey={`${measure}_amount`} name={name(measure)} stroke={COLOURS[measure]} isAnimationActive={false} />
            ))}
          </LineChart>
        </ResponsiveContainer>
      </Box>
      <Typography variant="body2" color="text.secondary" component="p" data-testid="hours-text">
        {MEASURES.map((measure) =>
          translate('console.dashboard.hours_total', {
            name: name(measure),
            count: view.totals[measure].count,
            amount: formatMoney(view.totals[measure].amount_cents, view.currency),
          }),
        ).join(' · ')}
      </Typography>
    </>
  );
};

/**
 * The home page: find a user; open risk flags by rule (every page of them), money pending out
 * (pending withdrawals, on time and overdue), the adjustments waiting for a second operator, and
 * the holds in force by scope, and today's business day by hour. A list the signed-in roles may
 * not read shows the server's word.
 */
const Dashboard = () => {
  const translate = useTranslate();
  const { identity } = useGetIdentity();
  const dataProvider = useConsoleDataProvider();
  const flags = useQuery({
    queryKey: ['console', 'dashboard', 'flags'],
    queryFn: () => dataProvider.everyPage('flags', { status: 'open' }),
    retry: false,
  });
  const withdrawals = useQuery({
    queryKey: ['console', 'dashboard', 'withdrawals'],
    queryFn: () => dataProvider.everyPage('withdrawals'),
    retry: false,
  });
  const adjustments = useQuery({
    queryKey: ['console', 'dashboard', 'adjustments'],
    queryFn: () => dataProvider.everyPage('adjustments'),
    retry: false,
  });
  const holds = useGetList('holds', { pagination: { page: 1, perPage: 10000 } });
  const today = useBusinessToday();
  const hours = useQuery({
    queryKey: ['console', 'dashboard', 'hours', today],
    queryFn: () => dataProvider.businessHours(today),
    retry: false,
  });

  const pendingOut: PendingOut[] = (['on_time', 'overdue'] as const).map((id) => {
    const rows = (withdrawals.data?.records ?? []).filter((record) => Boolean(record.overdue) === (id === 'overdue'));
    return {
      id,
      name: translate(`console.dashboard.${id}`),
      cents: rows.reduce((sum, record) => sum + Number(record.amount_cents ?? 0), 0),
      count: rows.length,
    };
  });
  const pendingAdjustments = adjustments.data?.records.length;

  return (
    <Box sx={{ mt: 1 }}>
      <Title title="console.dashboard.title" />
      {identity ? (
        <Typography variant="h6" sx={{ mb: 1 }}>
          {translate('console.dashboard.welcome', { name: identity.fullName ?? String(identity.id) })}
        </Typography>
      ) : null}
      <UserSearch titled={false} />
      <Box sx={{ display: 'flex', gap: 2, flexWrap: 'wrap', mt: 2 }}>
        <Panel testId="chart-flags" title={translate('console.dashboard.flags_by_rule')} error={flags.error}>
          <CountChart data={countBy(flags.data?.records, 'rule', FLAG_RULES, translate)} />
          <Partial walked={flags.data} />
        </Panel>
        <Panel testId="chart-pending-out" title={translate('console.dashboard.pending_out')} error={withdrawals.error}>
          <PendingOutChart rows={pendingOut} currency={withdrawals.data?.currency} />
          <Partial walked={withdrawals.data} />
        </Panel>
        <Panel
          testId="pending-adjustments"
          title={translate('console.dashboard.pending_adjustments')}
          error={adjustments.error}
        >
          <Typography variant="h3" component="p" data-testid="pending-adjustments-count">
            {pendingAdjustments ?? '…'}
            {adjustments.data && !adjustments.data.complete ? '+' : ''}
          </Typography>
          <MuiLink component={Link} to="/adjustments">
            {translate('console.dashboard.open_adjustments')}
          </MuiLink>
        </Panel>
        <Panel testId="chart-holds" title={translate('console.dashboard.holds_by_scope')}>
          <CountChart data={countBy(holds.data, 'scope', HOLD_SCOPES, translate)} />
        </Panel>
        <Panel
          testId="chart-hours"
          title={translate('console.dashboard.hours', { day: today, zone: hours.data?.time_zone ?? '' })}
          error={hours.error}
        >
          {hours.data ? <HoursCharts view={hours.data} /> : null}
        </Panel>
      </Box>
    </Box>
  );
};

export default Dashboard;
