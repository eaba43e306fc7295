import AddCardIcon from '@mui/icons-material/AddCard';
import BlockIcon from '@mui/icons-material/Block';
import TaskAltIcon from '@mui/icons-material/TaskAlt';
import UndoIcon from '@mui/icons-material/Undo';
import { Alert, Box, Card, CardContent, Typography } from '@mui/material';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import {
  CreateButton,
  Create,
  Datagrid,
  Form,
  List,
  Pagination,
  RadioButtonGroupInput,
  RecordContextProvider,
  SaveButton,
  SelectField,
  Show,
  SimpleForm,
  SimpleShowLayout,
  TextField,
  TextInput,
  maxLength,
  regex,
  required,
  useNotify,
  useRecordContext,
  useRedirect,
  useRefresh,
  useTranslate,
  type RaRecord,
} from 'react-admin';
import { ActionDialog } from '../components/ActionDialog';
import { ReasonDialog, reasonRules } from '../components/ReasonDialog';
import { TimeField } from '../components/TimeField';
import { MoneyField } from '../components/MoneyField';
import { ADJUSTMENT_STATUSES, DIRECTIONS } from '../components/choices';
import { useConsoleDataProvider, type AdjustmentResult } from '../dataProvider';
import { parseMoney, type Currency } from '../money';

/** The stack's currency, for amounts typed in major units. */
const useCurrency = () => {
  const dataProvider = useConsoleDataProvider();
  return useQuery({ queryKey: ['console', 'currency'], queryFn: () => dataProvider.currency(), staleTime: Infinity });
};

const amountPattern = (currency: Currency) =>
  new RegExp(currency.exponent > 0 ? `^\\d{1,12}(\\.\\d{0,${currency.exponent}})?$` : '^\\d{1,12}$');

/**
 * `POST /ops/v1/adjustments`: propose a credit or a debit (support, finance or admin). The amount
 * is typed in the currency's major units and sent in minor units; the signed-in operator is the
 * proposer; another operator approves it.
 */
export const AdjustmentCreate = () => {
  const translate = useTranslate();
  const notify = useNotify();
  const redirect = useRedirect();
  const { data: currency } = useCurrency();
  return (
    <Create
      resource="adjustments"
      title="console.adjustment.propose"
      transform={(values: Record<string, unknown>) => ({
        reference: String(values.reference).trim(),
        user: String(values.user).trim(),
        direction: values.direction,
        amount_cents: currency ? parseMoney(String(values.amount), currency) : undefined,
        reason: values.reason,
      })}
      mutationOptions={{
        onSuccess: (data: RaRecord) => {
          notify(data.applied ? 'console.adjustment.proposed' : 'console.adjustment.already', {
            type: 'info',
            messageArgs: { reference: data.reference },
          });
          redirect('show', 'users', data.user);
        },
      }}
    >
      <SimpleForm defaultValues={{ direction: 'credit' }}>
        <TextInput source="reference" validate={[required(), maxLength(128)]} fullWidth />
        <TextInput source="user" validate={[required(), maxLength(128)]} fullWidth />
        <RadioButtonGroupInput source="direction" choices={DIRECTIONS} validate={required()} />
        {currency ? (
          <TextInput
            source="amount"
            label={translate('console.adjustment.amount', { code: currency.code })}
            helperText={translate('console.adjustment.amount_help', { exponent: currency.exponent })}
            validate={[required(), regex(amountPattern(currency), 'console.adjustment.invalid_amount')]}
          />
        ) : null}
        <TextInput source="reason" validate={reasonRules} multiline fullWidth />
      </SimpleForm>
    </Create>
  );
};

/**
 * `POST /ops/v1/adjustments/{reference}/approve` (finance or admin, never the proposer): a
 * reference, the Approve button, and the answer (applied now or before, the user's balance).
 */
const ApproveByReference = () => {
  const translate = useTranslate();
  const notify = useNotify();
  const dataProvider = useConsoleDataProvider();
  const [params] = useSearchParams();
  const [result, setResult] = useState<AdjustmentResult | null>(null);
  const refresh = useRefresh();
  const approve = useMutation({
    mutationFn: (reference: string) => dataProvider.approveAdjustment(reference),
    onSuccess: (answer) => {
      setResult(answer?.adjustment ? answer : null);
      refresh(); // the pending list below, without it
    },
    onError: (error: Error) => {
      setResult(null);
      notify(error.message, { type: 'error', messageArgs: { _: error.message } });
    },
  });
  return (
    <Box sx={{ maxWidth: 720, mt: 2 }}>
      <Card>
        <CardContent>
          <Box sx={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center' }}>
            <Typography variant="h6">{translate('console.adjustment.approve_title')}</Typography>
            <CreateButton resource="adjustments" label="console.adjustment.propose" icon={<AddCardIcon />} />
          </Box>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
            {translate('console.adjustment.approve_help')}
          </Typography>
          <Form
            defaultValues={{ reference: params.get('reference') ?? '' }}
            onSubmit={async (values: Record<string, unknown>) => {
              try {
                await approve.mutateAsync(String(values.reference).trim());
              } catch {
                // shown by onError
              }
            }}
          >
            <TextInput source="reference" resource="adjustments" validate={[required(), maxLength(128)]} fullWidth />
            <SaveButton label="console.adjustment.approve" icon={<TaskAltIcon />} alwaysEnable data-submit="approve" />
          </Form>
        </CardContent>
      </Card>
      {result ? <ApproveResult result={result} /> : null}
    </Box>
  );
};

/** The adjustment a row's dialog acts on, said in its dialog: whose, which way, how much. */
const Summary = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (!record) return null;
  return (
    <Box sx={{ mb: 1 }}>
      <Typography variant="body2">
        {translate('console.adjustment.summary', {
          user: record.user,
          direction: translate(`console.adjustment.directions.${record.direction}`),
          proposer: record.proposer,
        })}
      </Typography>
      <MoneyField source="amount_cents" variant="h6" />
      <Typography variant="body2" color="text.secondary">
        {String(record.reason ?? '')}
      </Typography>
    </Box>
  );
};

/** `POST /ops/v1/adjustments/{reference}/approve` from a pending row (finance or admin, not its proposer). */
const ApproveRowButton = ({ reference }: { reference: string }) => {
  const dataProvider = useConsoleDataProvider();
  const notify = useNotify();
  const translate = useTranslate();
  return (
    <ActionDialog<AdjustmentResult>
      name="approve-adjustment"
      label="console.adjustment.approve"
      title={translate('console.adjustment.approve_row_title', { reference })}
      icon={<TaskAltIcon />}
      action={() => dataProvider.approveAdjustment(reference)}
      done={(result) =>
        notify(result?.applied ? 'console.adjustment.approved' : 'console.adjustment.not_applied', {
          type: 'info',
          messageArgs: { reference },
        })
      }
    >
      <Summary />
      <Typography variant="body2">{translate('console.adjustment.approve_row_help')}</Typography>
    </ActionDialog>
  );
};

/** `POST /ops/v1/adjustments/{reference}/reject` with a reason (finance or admin, not its proposer). */
const RejectButton = ({ reference }: { reference: string }) => {
  const dataProvider = useConsoleDataProvider();
  const translate = useTranslate();
  return (
    <ReasonDialog<AdjustmentResult>
      name="reject-adjustment"
      label="console.adjustment.reject"
      title={translate('console.adjustment.reject_title', { reference })}
      icon={<BlockIcon />}
      color="error"
      action={(reason) => dataProvider.rejectAdjustment(reference, reason)}
      changed={(result) => result?.applied}
      notices={{ changed: 'console.adjustment.rejected', unchanged: 'console.adjustment.unchanged' }}
      messageArgs={{ reference }}
    >
      <Summary />
    </ReasonDialog>
  );
};

/** `POST /ops/v1/adjustments/{reference}/withdraw` with a reason (its proposer only; the server decides). */
const WithdrawButton = ({ reference }: { reference: string }) => {
  const dataProvider = useConsoleDataProvider();
  const translate = useTranslate();
  return (
    <ReasonDialog<AdjustmentResult>
      name="withdraw-adjustment"
      label="console.adjustment.withdraw"
      title={translate('console.adjustment.withdraw_title', { reference })}
      icon={<UndoIcon />}
      help="console.adjustment.withdraw_help"
      action={(reason) => dataProvider.withdrawAdjustment(reference, reason)}
      changed={(result) => result?.applied}
      notices={{ changed: 'console.adjustment.withdrawn', unchanged: 'console.adjustment.unchanged' }}
      messageArgs={{ reference }}
    >
      <Summary />
    </ReasonDialog>
  );
};

/**
 * A pending row's steps: approve, reject, withdraw. Every one is shown to every operator, as the
 * console's other actions are: the server decides (finance or admin approve and reject, never
 * the proposer; only the proposer withdraws) and its refusal is shown.
 */
const PendingActions = (_props: { label?: string }) => {
  const record = useRecordContext();
  if (!record || record.status !== 'proposed') return null;
  const reference = String(record.reference);
  return (
    <Box sx={{ display: 'flex', gap: 0.5, flexWrap: 'nowrap' }}>
      <ApproveRowButton reference={reference} />
      <RejectButton reference={reference} />
      <WithdrawButton reference={reference} />
    </Box>
  );
};

/**
 * `GET /ops/v1/adjustments/pending`: the proposals waiting for a second operator, oldest first
 * (the server's order), a page at a time by cursor; approve, reject or withdraw from a row.
 */
const PendingAdjustmentList = () => (
  <List
    resource="adjustments"
    title="console.adjustment.title"
    perPage={25}
    pagination={<Pagination rowsPerPageOptions={[25, 50, 100]} />}
    exporter={false}
    actions={false}
    empty={false}
    sx={{ mt: 2 }}
  >
    <Typography variant="h6" sx={{ px: 2, pt: 2 }}>
      <PendingTitle />
    </Typography>
    <Datagrid bulkActionButtons={false} rowClick={false} data-testid="pending-adjustments">
      <TextField source="reference" sortable={false} />
      <TextField source="user" sortable={false} />
      <SelectField source="direction" choices={DIRECTIONS} sortable={false} />
      <MoneyField source="amount_cents" sortable={false} />
      <TextField source="reason" sortable={false} />
      <TextField source="proposer" sortable={false} />
      <TimeField source="proposed_at" sortable={false} />
      <TextField source="chargeback_of" sortable={false} emptyText="—" />
      <PendingActions label="console.adjustment.steps" />
    </Datagrid>
  </List>
);

const PendingTitle = () => {
  const translate = useTranslate();
  return <>{translate('console.adjustment.pending')}</>;
};

/** The adjustments' page: approve one by reference, and the list of those pending. */
export const AdjustmentsPage = () => (
  <Box>
    <ApproveByReference />
    <PendingAdjustmentList />
  </Box>
);

const ApproveResult = ({ result }: { result: AdjustmentResult }) => {
  const translate = useTranslate();
  const record = {
    ...result.adjustment,
    id: result.adjustment.reference,
    balance_cents: result.balance_cents,
    currency: result.currency,
  };
  return (
    <Card sx={{ mt: 2 }} data-testid="approve-result" data-applied={String(result.applied)}>
      <CardContent>
        <Typography variant="h6">{translate('console.adjustment.result')}</Typography>
        <Alert severity={result.applied ? 'success' : 'info'} sx={{ my: 1 }} data-testid="approve-applied">
          {translate(result.applied ? 'console.adjustment.applied' : 'console.adjustment.not_applied')}
        </Alert>
        <RecordContextProvider value={record}>
          <SimpleShowLayout resource="adjustments" direction="row" useFlexGap flexWrap="wrap" spacing={3}>
            <TextField source="reference" />
            <TextField source="user" />
            <SelectField source="direction" choices={DIRECTIONS} />
            <MoneyField source="amount_cents" />
            <TextField source="reason" />
            <TextField source="proposer" />
            <TextField source="approver" emptyText="—" />
            <SelectField source="status" choices={ADJUSTMENT_STATUSES} />
            <TimeField source="approved_at" emptyText="—" />
            <MoneyField source="balance_cents" className="approve-balance" variant="h6" />
          </SimpleShowLayout>
        </RecordContextProvider>
      </CardContent>
    </Card>
  );
};

const AdjustmentTitle = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  return <span>{record ? translate('console.adjustment.one', { reference: record.reference }) : ''}</span>;
};

const AdjustmentUser = (_props: { label?: string }) => {
  const record = useRecordContext();
  if (!record) return null;
  const user = String(record.user);
  return (
    <Link to={`/users/${encodeURIComponent(user)}/show`} data-testid="adjustment-user">
      {user}
    </Link>
  );
};

/**
 * `GET /ops/v1/adjustments/{reference}`: one adjustment, whatever its state, found by the
 * reference a case or a statement line quotes (the search box opens it): its wallet, direction,
 * amount and reason, who proposed it, and who approved, rejected or withdrew it, when and why.
 */
export const AdjustmentShow = () => (
  <Show title={<AdjustmentTitle />}>
    <SimpleShowLayout>
      <TextField source="reference" data-testid="adjustment-reference" />
      <AdjustmentUser label="resources.adjustments.fields.user" />
      <SelectField source="direction" choices={DIRECTIONS} />
      <MoneyField source="amount_cents" />
      <SelectField source="status" choices={ADJUSTMENT_STATUSES} data-testid="adjustment-status" />
      <TextField source="reason" />
      <TextField source="chargeback_of" emptyText="—" />
      <TextField source="proposer" />
      <TimeField source="proposed_at" />
      <TextField source="approver" emptyText="—" />
      <TimeField source="approved_at" emptyText="—" />
      <TextField source="closed_by" emptyText="—" />
      <TimeField source="closed_at" emptyText="—" />
      <TextField source="close_reason" emptyText="—" />
    </SimpleShowLayout>
  </Show>
);
