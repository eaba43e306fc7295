import GavelIcon from '@mui/icons-material/Gavel';
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

/** `POST /ops/v1/flags/{flag_id}/resolve` (risk or admin), on an open flag. */
const ResolveButton = () => {
  const record = useRecordContext();
  const dataProvider = useConsoleDataProvider();
  const notify = useNotify();
  const translate = useTranslate();
  if (!record || record.status !== 'open') return null;
  const id = String(record.flag_id);
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
      done={() => notify('console.flag.resolved', { type: 'info', messageArgs: { id } })}
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

const filters = [
  <SelectInput key="status" source="status" choices={FLAG_STATUSES} alwaysOn />,
  <SelectInput key="rule" source="rule" choices={FLAG_RULES} alwaysOn />,
];

/** `GET /ops/v1/flags?status=`: the risk rules' flags, open ones first by default. */
export const FlagList = () => (
  <List
    filters={filters}
    filterDefaultValues={{ status: 'open' }}
    sort={{ field: 'raised_at', order: 'DESC' }}
    perPage={25}
    pagination={<Pagination rowsPerPageOptions={[25, 50, 100]} />}
    exporter={false}
    actions={false}
  >
    <Datagrid bulkActionButtons={false} rowClick={false}>
      <TimeField source="raised_at" />
      <SelectField source="rule" choices={FLAG_RULES} />
      <TextArrayField source="users" sortable={false} />
      <TextField source="chat_id" emptyText="—" />
      <MoneyField source="amount_cents" />
      <TextField source="detail" sortable={false} sx={{ display: 'block', minWidth: 260 }} />
      <SelectField source="hold" choices={HOLD_SCOPES} emptyText="—" />
      <SelectField source="status" choices={FLAG_STATUSES} />
      <TextField source="resolved_by" emptyText="—" />
      <TextField source="note" emptyText="—" sortable={false} />
      <ResolveButton />
    </Datagrid>
  </List>
);
