import { Box, Card, CardContent, CardHeader, Typography } from '@mui/material';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { Title, useGetIdentity, useGetList, useTranslate } from 'react-admin';
import { FLAG_RULES, HOLD_SCOPES } from '../components/choices';
import { UserSearch } from './users';

type Counted = { name: string; count: number };

function countBy(records: Record<string, unknown>[] | undefined, field: string, keys: { id: string; name: string }[], translate: (key: string) => string): Counted[] {
  return keys.map(({ id, name }) => ({
    name: translate(name),
    count: (records ?? []).filter((record) => record[field] === id).length,
  }));
}

const Chart = ({ title, data, testId }: { title: string; data: Counted[]; testId: string }) => {
  const translate = useTranslate();
  return (
    <Card sx={{ flex: '1 1 380px' }} data-testid={testId}>
      <CardHeader title={title} titleTypographyProps={{ variant: 'subtitle1' }} />
      <CardContent sx={{ height: 260 }}>
        {data.every((row) => row.count === 0) ? (
          <Typography color="text.secondary">{translate('console.dashboard.empty')}</Typography>
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <BarChart data={data}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="name" />
              <YAxis allowDecimals={false} />
              <Tooltip />
              <Bar dataKey="count" name={translate('console.dashboard.count')} fill="#c62828" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        )}
      </CardContent>
    </Card>
  );
};

/**
 * The home page: find a user, and two charts from the lists the API has (money pending out is not
 * in it yet): the risk flags by rule, the holds in force by scope.
 */
const Dashboard = () => {
  const translate = useTranslate();
  const { identity } = useGetIdentity();
  const flags = useGetList('flags', { pagination: { page: 1, perPage: 10000 }, filter: {} });
  const holds = useGetList('holds', { pagination: { page: 1, perPage: 10000 } });
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
        <Chart
          testId="chart-flags"
          title={translate('console.dashboard.flags_by_rule')}
          data={countBy(flags.data, 'rule', FLAG_RULES, translate)}
        />
        <Chart
          testId="chart-holds"
          title={translate('console.dashboard.holds_by_scope')}
          data={countBy(holds.data, 'scope', HOLD_SCOPES, translate)}
        />
      </Box>
    </Box>
  );
};

export default Dashboard;
