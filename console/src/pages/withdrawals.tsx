import SendIcon from '@mui/icons-material/Send';
import { Chip } from '@mui/material';
import {
  BooleanInput,
  Datagrid,
  DateInput,
  ExportButton,
  List,
  Pagination,
  SelectField,
  Show,
  SimpleShowLayout,
  TextField,
  TopToolbar,
  useRecordContext,
  useTranslate,
  type RaRecord,
} from 'react-admin';
import { Link } from 'react-router-dom';
import { ReasonDialog } from '../components/ReasonDialog';
import { useConsoleDataProvider, type ResendResult } from '../dataProvider';
import { MoneyField } from '../components/MoneyField';
import { TimeField } from '../components/TimeField';

/** Overdue (pending longer than a day, what the WithdrawalsOverdue alarm counts): marked red. */
const Overdue = (_props: { label?: string }) => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (!record) return null;
  if (record.status !== undefined && record.status !== 'pending') return <span>—</span>;
  return record.overdue ? (
    <Chip
      size="small"
      color="error"
      label={translate('console.withdrawal.overdue')}
      data-testid="withdrawal-overdue"
      data-overdue="true"
    />
  ) : (
    <Chip size="small" variant="outlined" label={translate('console.withdrawal.on_time')} data-overdue="false" />
  );
};

const filters = [
  <BooleanInput key="overdue" source="overdue" label="console.withdrawal.overdue_only" alwaysOn />,
  <DateInput key="from" source="from" alwaysOn />,
  <DateInput key="to" source="to" alwaysOn />,
];

const overdueRow = (record: RaRecord) =>
  record.overdue ? { backgroundColor: 'rgba(211, 47, 47, 0.08)' } : {};

/**
 * `GET /ops/v1/withdrawals/pending?overdue=&from=&to=`: the withdrawals the payments system has
 * not resolved yet, oldest first (the server's order), a page at a time by cursor; overdue ones
 * marked, or listed alone; those requested on the business days `from` to `to` alone. A row opens its user. Exported as CSV as filtered, every page of it
 * (the export asks the data provider to walk the server's cursors, `meta.everyPage`).
 */
export const WithdrawalList = () => (
  <List
    filters={filters}
    perPage={25}
    pagination={<Pagination rowsPerPageOptions={[25, 50, 100]} />}
    actions={
      <TopToolbar>
        <ExportButton maxResults={10_000} meta={{ everyPage: true }} />
      </TopToolbar>
    }
    empty={false}
    title="console.withdrawal.title"
  >
    <Datagrid
      bulkActionButtons={false}
      rowSx={overdueRow}
      rowClick={(_id, _resource, record) => `/users/${encodeURIComponent(String(record.user))}/show`}
    >
      <TimeField source="requested_at" sortable={false} />
      <TextField source="withdrawal_id" sortable={false} />
      <TextField source="user" sortable={false} />
      <MoneyField source="amount_cents" sortable={false} />
      <TextField source="destination" sortable={false} />
      <Overdue label="resources.withdrawals.fields.overdue" />
    </Datagrid>
  </List>
);

const WITHDRAWAL_STATUSES = ['pending', 'paid', 'failed'].map((id) => ({ id, name: `console.withdrawal.statuses.${id}` }));

const WithdrawalUser = (_props: { label?: string }) => {
  const record = useRecordContext();
  if (!record) return null;
  const user = String(record.user);
  return (
    <Link to={`/users/${encodeURIComponent(user)}/show`} data-testid="withdrawal-user">
      {user}
    </Link>
  );
};

const WithdrawalTitle = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  return <span>{record ? translate('console.withdrawal.one', { id: record.withdrawal_id }) : ''}</span>;
};

/**
 * `POST /ops/v1/withdrawals/{withdrawal_id}/resend` (finance or admin; the server decides): an
 * overdue withdrawal's order sent to the payments system again, with a reason, audited; no money
 * moves. Offered only while it is pending and overdue; the hour's second says nothing changed.
 */
const ResendButton = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  const dataProvider = useConsoleDataProvider();
  if (!record || record.status !== 'pending' || !record.overdue) return null;
  const id = String(record.withdrawal_id);
  return (
    <ReasonDialog<ResendResult>
      name="resend-withdrawal"
      label="console.withdrawal.resend"
      title={translate('console.withdrawal.resend_title', { id })}
      icon={<SendIcon />}
      color="warning"
      help="console.withdrawal.resend_help"
      action={(reason) => dataProvider.resendWithdrawal(id, reason)}
      changed={(result) => result?.changed}
      notices={{ changed: 'console.withdrawal.resent', unchanged: 'console.withdrawal.resent_already' }}
      messageArgs={{ id }}
    />
  );
};

const WithdrawalActions = () => (
  <TopToolbar>
    <ResendButton />
  </TopToolbar>
);

/**
 * `GET /ops/v1/withdrawals/{withdrawal_id}`: one withdrawal, whatever its state, found by the id a
 * user quotes (the search box opens it): its user, amount, destination, state, the payments
 * system's reference once it resolved it, and whether it is overdue.
 */
export const WithdrawalShow = () => (
  <Show title={<WithdrawalTitle />} actions={<WithdrawalActions />}>
    <SimpleShowLayout>
      <TextField source="withdrawal_id" data-testid="withdrawal-id" />
      <WithdrawalUser label="resources.withdrawals.fields.user" />
      <MoneyField source="amount_cents" />
      <TextField source="destination" />
      <SelectField source="status" choices={WITHDRAWAL_STATUSES} data-testid="withdrawal-status" />
      <TimeField source="requested_at" />
      <TimeField source="resolved_at" emptyText="—" />
      <TextField source="reference" emptyText="—" />
      <Overdue label="resources.withdrawals.fields.overdue" />
    </SimpleShowLayout>
  </Show>
);
