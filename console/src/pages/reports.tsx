import DownloadIcon from '@mui/icons-material/Download';
import SearchIcon from '@mui/icons-material/Search';
import SyncIcon from '@mui/icons-material/Sync';
import { Alert, Box, Card, CardContent, CircularProgress, Typography } from '@mui/material';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  Button,
  Datagrid,
  DateInput,
  Form,
  ListContextProvider,
  NumberField,
  RecordContextProvider,
  ResourceContextProvider,
  SaveButton,
  SelectField,
  SimpleShowLayout,
  TextArrayField,
  TextField,
  TextInput,
  Title,
  downloadCSV,
  maxLength,
  required,
  useList,
  useTranslate,
  type RaRecord,
} from 'react-admin';
import { useBusinessToday } from '../businessDay';
import { MOVEMENT_KINDS, TRIAL_ACCOUNTS } from '../components/choices';
import { MoneyField } from '../components/MoneyField';
import { TimeField } from '../components/TimeField';
import {
  useConsoleDataProvider,
  type Reconciliation,
  type Statement,
  type TrialBalance,
} from '../dataProvider';
import { useNotifyError } from '../components/notifyError';

/** A call's failure, as the server said it (text). */
const Failure = ({ error, testId }: { error: Error; testId: string }) => (
  <Alert severity="error" sx={{ mt: 2 }} data-testid={testId}>
    {error.message}
  </Alert>
);

/** A file name's part of a user id: what a file system takes everywhere. */
const fileSafe = (text: string) => text.replace(/[^A-Za-z0-9_.@-]/g, '_');

/**
 * `GET /ops/v1/reports/trial-balance/{day}` (finance or admin): the day's rows, balanced or not
 * and the differences reconciliation found; Download CSV asks the same route for `format=csv`
 * and saves the server's text as it came, as trial-balance-<day>.csv.
 */
const TrialBalanceCard = ({ today }: { today: string }) => {
  const translate = useTranslate();
  const dataProvider = useConsoleDataProvider();
  const failed = useNotifyError();
  const [day, setDay] = useState(today);
  const report = useQuery({
    queryKey: ['console', 'trial-balance', day],
    queryFn: () => dataProvider.trialBalance(day),
    retry: false,
  });
  const download = useMutation({
    mutationFn: () => dataProvider.trialBalanceCsv(day),
    onSuccess: (csv) => downloadCSV(csv, `trial-balance-${day}`),
    onError: failed,
  });
  return (
    <Card>
      <CardContent>
        <Typography variant="h6" gutterBottom>
          {translate('console.reports.trial_balance')}
        </Typography>
        <Form defaultValues={{ day: today }} onSubmit={(values: Record<string, unknown>) => setDay(String(values.day))}>
          <Box sx={{ display: 'flex', gap: 2, alignItems: 'center', flexWrap: 'wrap' }}>
            <DateInput source="day" resource="trial_balance" validate={required()} helperText={false} />
            <SaveButton label="console.reports.show" icon={<SearchIcon />} alwaysEnable data-submit="trial-balance" />
            <Button
              label="console.reports.download_csv"
              onClick={() => download.mutate()}
              disabled={download.isPending}
              data-action="download-trial-balance"
              variant="outlined"
            >
              <DownloadIcon />
            </Button>
          </Box>
        </Form>
        {report.isPending ? <CircularProgress size={24} sx={{ mt: 2 }} /> : null}
        {report.error ? <Failure error={report.error} testId="trial-balance-error" /> : null}
        {report.data ? <TrialBalanceView report={report.data} /> : null}
      </CardContent>
    </Card>
  );
};

const TrialBalanceView = ({ report }: { report: TrialBalance }) => {
  const translate = useTranslate();
  const rows = useList({
    data: report.rows.map((row) => ({ ...row, id: row.account, currency: report.currency })),
    perPage: 100,
  });
  const fine = report.balanced && report.differences === 0;
  return (
    <Box
      sx={{ mt: 2 }}
      data-testid="trial-balance"
      data-day={report.day}
      data-balanced={String(report.balanced)}
      data-differences={report.differences}
    >
      <Alert severity={fine ? 'success' : 'error'} data-testid="trial-balance-balanced">
        {translate(report.balanced ? 'console.reports.balanced' : 'console.reports.unbalanced')}
        {' · '}
        {translate('console.reports.differences_count', { count: report.differences })}
      </Alert>
      <RecordContextProvider value={{ ...report, id: report.day }}>
        <ResourceContextProvider value="trial_balance">
          <SimpleShowLayout direction="row" useFlexGap flexWrap="wrap" spacing={3}>
            <TextField source="day" />
            <TimeField source="opening_as_of" />
            <TimeField source="closing_as_of" />
            <NumberField source="differences" />
          </SimpleShowLayout>
        </ResourceContextProvider>
      </RecordContextProvider>
      <ResourceContextProvider value="trial_balance">
        <ListContextProvider value={rows}>
          <Datagrid bulkActionButtons={false} rowClick={false} sx={{ maxWidth: 640 }}>
            <SelectField source="account" choices={TRIAL_ACCOUNTS} sortable={false} />
            <MoneyField source="cents" sortable={false} />
          </Datagrid>
        </ListContextProvider>
      </ResourceContextProvider>
    </Box>
  );
};

/**
 * `GET /ops/v1/users/{user}/statements/{day}[?to=]` (support, finance or admin): a user's day or
 * period (to `to`, at most 31 days), line by line with the balance after each; its CSV saved as
 * statement-<user>-<day>[-to-<to>].csv.
 */
/** The statement asked for: whose, from which day, and to which (none: the day alone). */
type Asked = { user: string; day: string; to?: string };

const StatementCard = ({ today }: { today: string }) => {
  const translate = useTranslate();
  const dataProvider = useConsoleDataProvider();
  const failed = useNotifyError();
  const [asked, setAsked] = useState<Asked | null>(null);
  const statement = useQuery({
    queryKey: ['console', 'statement', asked?.user, asked?.day, asked?.to],
    queryFn: () => dataProvider.statement(asked!.user, asked!.day, asked!.to),
    enabled: asked !== null,
    retry: false,
  });
  const download = useMutation({
    mutationFn: (target: Asked) => dataProvider.statementCsv(target.user, target.day, target.to),
    onSuccess: (csv, target) =>
      downloadCSV(csv, `statement-${fileSafe(target.user)}-${target.day}${target.to ? `-to-${target.to}` : ''}`),
    onError: failed,
  });
  return (
    <Card data-testid="statement-card">
      <CardContent>
        <Typography variant="h6" gutterBottom>
          {translate('console.reports.statement')}
        </Typography>
        <Form
          defaultValues={{ user: '', day: today }}
          onSubmit={(values: Record<string, unknown>) =>
            setAsked({
              user: String(values.user).trim(),
              day: String(values.day),
              to: values.to && values.to !== values.day ? String(values.to) : undefined,
            })
          }
        >
          <Box sx={{ display: 'flex', gap: 2, alignItems: 'center', flexWrap: 'wrap' }}>
            <TextInput source="user" resource="statements" validate={[required(), maxLength(256)]} helperText={false} />
            <DateInput source="day" resource="statements" validate={required()} helperText={false} />
            <DateInput source="to" resource="statements" helperText={false} />
            <SaveButton label="console.reports.show" icon={<SearchIcon />} alwaysEnable data-submit="statement" />
            <Button
              label="console.reports.download_csv"
              onClick={() => asked && download.mutate(asked)}
              disabled={asked === null || download.isPending}
              data-action="download-statement"
              variant="outlined"
            >
              <DownloadIcon />
            </Button>
          </Box>
        </Form>
        {asked && statement.isPending ? <CircularProgress size={24} sx={{ mt: 2 }} /> : null}
        {statement.error ? <Failure error={statement.error} testId="statement-error" /> : null}
        {statement.data ? <StatementView statement={statement.data} /> : null}
      </CardContent>
    </Card>
  );
};

const StatementView = ({ statement }: { statement: Statement }) => {
  const translate = useTranslate();
  const lines = useList({
    data: statement.lines.map((line, index) => ({ ...line, id: index, currency: statement.currency })),
    perPage: 10_000,
  });
  const record: RaRecord = { ...statement, id: `${statement.user}#${statement.day}` };
  return (
    <Box
      sx={{ mt: 2 }}
      data-testid="statement"
      data-user={statement.user}
      data-day={statement.day}
      data-to={statement.to ?? statement.day}
    >
      <RecordContextProvider value={record}>
        <ResourceContextProvider value="statements">
          <SimpleShowLayout direction="row" useFlexGap flexWrap="wrap" spacing={3}>
            <TextField source="user" />
            <TextField source="day" />
            {statement.to ? <TextField source="to" /> : null}
            <MoneyField source="opening_cents" className="statement-opening" />
            <MoneyField source="closing_cents" className="statement-closing" />
          </SimpleShowLayout>
        </ResourceContextProvider>
      </RecordContextProvider>
      <ResourceContextProvider value="statement_lines">
        <ListContextProvider value={lines}>
          <Datagrid
            bulkActionButtons={false}
            rowClick={false}
            empty={
              <Typography variant="body2" color="text.secondary" sx={{ p: 2 }}>
                {translate('console.reports.no_lines')}
              </Typography>
            }
          >
            <TimeField source="booked_at" sortable={false} />
            <SelectField source="kind" choices={MOVEMENT_KINDS} sortable={false} />
            <TextField source="subject" sortable={false} />
            <MoneyField source="amount_cents" sortable={false} />
            <MoneyField source="balance_cents" sortable={false} />
          </Datagrid>
        </ListContextProvider>
      </ResourceContextProvider>
    </Box>
  );
};

/**
 * `POST /ops/v1/reconciliations` (finance or admin): the daily check, run now as of the latest
 * safe cut-off; its figures and every difference it names.
 */
const ReconcileCard = () => {
  const translate = useTranslate();
  const dataProvider = useConsoleDataProvider();
  const failed = useNotifyError();
  const reconcile = useMutation({ mutationFn: () => dataProvider.reconcile(), onError: failed });
  return (
    <Card>
      <CardContent>
        <Typography variant="h6" gutterBottom>
          {translate('console.reports.reconciliation')}
        </Typography>
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          {translate('console.reports.reconcile_help')}
        </Typography>
        <Button
          label="console.reports.reconcile"
          onClick={() => reconcile.mutate()}
          disabled={reconcile.isPending}
          data-action="reconcile"
          variant="contained"
        >
          <SyncIcon />
        </Button>
        {reconcile.isPending ? <CircularProgress size={24} sx={{ ml: 2 }} /> : null}
        {reconcile.data ? <ReconciliationView reconciliation={reconcile.data} /> : null}
      </CardContent>
    </Card>
  );
};

const ReconciliationView = ({ reconciliation }: { reconciliation: Reconciliation }) => {
  const translate = useTranslate();
  const differences = useList({
    data: reconciliation.differences.map((difference, index) => ({ ...difference, id: index })),
    perPage: 10_000,
  });
  const count = reconciliation.differences.length;
  const record: RaRecord = { ...reconciliation, id: reconciliation.as_of };
  return (
    <Box sx={{ mt: 2 }} data-testid="reconciliation" data-differences={count}>
      <Alert severity={count === 0 ? 'success' : 'error'} data-testid="reconciliation-result">
        {count === 0
          ? translate('console.reports.no_differences')
          : translate('console.reports.differences_count', { count })}
      </Alert>
      <RecordContextProvider value={record}>
        <ResourceContextProvider value="reconciliations">
          <SimpleShowLayout direction="row" useFlexGap flexWrap="wrap" spacing={3}>
            <TimeField source="as_of" />
            <MoneyField source="topups_cents" />
            <MoneyField source="withdrawn_cents" />
            <MoneyField source="pending_withdrawals_cents" />
            <MoneyField source="adjusted_in_cents" />
            <MoneyField source="adjusted_out_cents" />
            <MoneyField source="balances_cents" />
            <MoneyField source="in_open_packets_cents" />
            <MoneyField source="sent_cents" />
            <MoneyField source="grabbed_cents" />
            <MoneyField source="refunded_cents" />
            <NumberField source="wallets" />
            <NumberField source="packets" />
            <NumberField source="movements" />
            <NumberField source="items" />
            {reconciliation.overdue_withdrawals?.length ? <TextArrayField source="overdue_withdrawals" /> : null}
            {reconciliation.unchecked_wallets?.length ? <TextArrayField source="unchecked_wallets" /> : null}
          </SimpleShowLayout>
        </ResourceContextProvider>
      </RecordContextProvider>
      {count > 0 ? (
        <ResourceContextProvider value="differences">
          <ListContextProvider value={differences}>
            <Datagrid bulkActionButtons={false} rowClick={false} data-testid="reconciliation-differences">
              <TextField source="subject" sortable={false} />
              <TextField source="class" sortable={false} />
              <TextField source="what" sortable={false} />
            </Datagrid>
          </ListContextProvider>
        </ResourceContextProvider>
      ) : null}
    </Box>
  );
};

/** The reports page (finance or admin; the server decides): trial balance, statements, reconciliation. */
export const ReportsPage = () => {
  const today = useBusinessToday();
  return (
    <Box sx={{ mt: 2, display: 'flex', flexDirection: 'column', gap: 2, maxWidth: 1200 }}>
      <Title title="console.reports.title" />
      <TrialBalanceCard today={today} />
      <StatementCard today={today} />
      <ReconcileCard />
    </Box>
  );
};
