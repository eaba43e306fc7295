import AssignmentIndIcon from '@mui/icons-material/AssignmentInd';
import GavelIcon from '@mui/icons-material/Gavel';
import { Box, Typography } from '@mui/material';
import {
  Datagrid,
  List,
  Pagination,
  RadioButtonGroupInput,
  SelectField,
  SelectInput,
  TextArrayField,
  TextField,
  TextInput,
  maxLength,
  regex,
  required,
  useNotify,
  useRecordContext,
  useTranslate,
} from 'react-admin';
import { TimeField } from '../components/TimeField';
import { ActionDialog } from '../components/ActionDialog';
import { MoneyField } from '../components/MoneyField';
import { FLAG_OUTCOMES, FLAG_RULES, FLAG_STATUSES, HOLD_SCOPES } from '../components/choices';
import { useConsoleDataProvider, type FlagResolution, type FlagResolved } from '../dataProvider';

/**
 * The flag of the row, while it is open (null otherwise: its steps are not offered): its id, and
 * what its steps call and say. `told` notifies a step's answer: `changed` (a translation key, with
 * `messageArgs` beside the id) when the step changed the flag, else a warning that it did not.
 */
const useOpenFlag = () => {
  const record = useRecordContext();
  const dataProvider = useConsoleDataProvider();
  const notify = useNotify();
  const translate = useTranslate();
  if (!record || record.status !== 'open') return null;
  const id = String(record.flag_id);
  const told = (result: FlagResolved | undefined, changed: string, messageArgs: Record<string, unknown>) =>
    result?.changed
      ? notify(changed, { type: 'info', messageArgs: { id, ...messageArgs } })
      : notify('console.flag.unchanged', { type: 'warning', messageArgs: { id } });
  return { id, dataProvider, translate, told };
};

/** `POST /ops/v1/flags/{flag_id}/resolve` (risk or admin), on an open flag. */
const ResolveButton = () => {
  const flag = useOpenFlag();
  if (!flag) return null;
  const { id, dataProvider, translate, told } = flag;
  return (
    <ActionDialog<FlagResolved>
      name="resolve-flag"
      label="console.flag.resolve"
      title={translate('console.flag.resolve_title', { id })}
      icon={<GavelIcon />}
      defaultValues={{ outcome: 'dismissed' }}
      action={(values) =>
        dataProvider.resolveFlag(id, {
          outcome: values.outcome as FlagResolution['outcome'],
          note: String(values.note),
        })
      }
      done={(result) =>
        told(result, 'console.flag.resolved', {
          outcome: translate(`console.flag.outcomes.${result?.flag?.status ?? 'dismissed'}`),
        })
      }
    >
      <RadioButtonGroupInput
        source="outcome"
        label="console.flag.outcome"
        choices={FLAG_OUTCOMES}
        validate={required()}
      />
      <TextInput source="note" resource="flags" validate={[required(), maxLength(500)]} multiline fullWidth />
    </ActionDialog>
  );
};

/**
 * `POST /ops/v1/flags/{flag_id}/assign` (risk or admin), on an open flag: to the operator named,
 * or, left empty, to the signed-in operator (the server knows who that is).
 */
const AssignButton = () => {
  const flag = useOpenFlag();
  if (!flag) return null;
  const { id, dataProvider, translate, told } = flag;
  return (
    <ActionDialog<FlagResolved>
      name="assign-flag"
      label="console.flag.assign"
      title={translate('console.flag.assign_title', { id })}
      icon={<AssignmentIndIcon />}
      defaultValues={{ assignee: '' }}
      action={(values) => {
        const assignee = String(values.assignee ?? '').trim();
        return dataProvider.assignFlag(id, assignee || undefined);
      }}
      done={(result) => told(result, 'console.flag.assigned', { assignee: result?.flag?.assignee ?? '' })}
    >
      <TextInput
        source="assignee"
        resource="flags"
        helperText="console.flag.assignee_help"
        validate={[maxLength(256), regex(/^[A-Za-z0-9_.:@/+=,-]*$/, 'console.login.operator_invalid')]}
        fullWidth
      />
    </ActionDialog>
  );
};

/** An open flag's steps: assign it, resolve it (risk or admin; the server decides). */
const FlagActions = (_props: { label?: string }) => (
  <Box sx={{ display: 'flex', gap: 0.5, flexWrap: 'nowrap' }}>
    <AssignButton />
    <ResolveButton />
  </Box>
);

const filters = [<SelectInput key="status" source="status" choices={FLAG_STATUSES} alwaysOn />];

/**
 * What a flag found, in the console's language, from its rule and what it names (the users, the
 * chat, the packets): the server's `detail` is a sentence for engineers, in English.
 */
const FlagSummary = (_props: { label?: string }) => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (!record) return null;
  const users = (record.users as string[] | undefined) ?? [];
  const separator = translate('console.errors.roles_separator', { _: ', ' });
  return (
    <Typography variant="body2" sx={{ minWidth: 220 }} data-testid="flag-summary">
      {translate(`console.flag.summaries.${record.rule}`, {
        _: String(record.rule),
        chat: record.chat_id ?? '—',
        packets: (record.packets as string[] | undefined)?.length ?? 0,
        senders: users.length,
        user: users[0] ?? '',
        users: users.join(separator),
      })}
    </Typography>
  );
};

/**
 * `GET /ops/v1/flags?status=`: the risk rules' flags of one status (open by default), oldest
 * first (the server's order), a page at a time by cursor.
 */
export const FlagList = () => (
  <List
    filters={filters}
    filterDefaultValues={{ status: 'open' }}
    perPage={25}
    pagination={<Pagination rowsPerPageOptions={[25, 50, 100]} />}
    exporter={false}
    actions={false}
    empty={false}
  >
    <Datagrid bulkActionButtons={false} rowClick={false}>
      <TimeField source="raised_at" sortable={false} />
      <SelectField source="rule" choices={FLAG_RULES} sortable={false} />
      <TextArrayField source="users" sortable={false} />
      <TextField source="chat_id" emptyText="—" sortable={false} />
      <MoneyField source="amount_cents" sortable={false} />
      <FlagSummary label="resources.flags.fields.detail" />
      <SelectField source="hold" choices={HOLD_SCOPES} emptyText="—" sortable={false} />
      <SelectField source="status" choices={FLAG_STATUSES} sortable={false} />
      <TextField source="assignee" emptyText="—" sortable={false} data-testid="flag-assignee" />
      <TextField source="resolved_by" emptyText="—" sortable={false} />
      <TextField source="note" emptyText="—" sortable={false} />
      <FlagActions label="console.flag.steps" />
    </Datagrid>
  </List>
);
