import {
  Datagrid,
  List,
  Pagination,
  SelectField,
  SelectInput,
  TextField,
  SearchInput,
  useRecordContext,
} from 'react-admin';
import { TimeField } from '../components/TimeField';
import { LiftHoldButton } from '../components/HoldButtons';
import { HOLD_SCOPES } from '../components/choices';

const LiftFromList = () => {
  const record = useRecordContext();
  return record ? <LiftHoldButton user={String(record.user)} /> : null;
};

const filters = [
  <SelectInput key="scope" source="scope" choices={HOLD_SCOPES} alwaysOn />,
  <SearchInput key="q" source="q" alwaysOn />,
];

/** `GET /ops/v1/holds`: the holds placed and not lifted; a row opens its user; lift from the row. */
export const HoldList = () => (
  <List
    filters={filters}
    sort={{ field: 'placed_at', order: 'DESC' }}
    perPage={25}
    pagination={<Pagination rowsPerPageOptions={[25, 50, 100]} />}
    exporter={false}
    actions={false}
    title="console.dashboard.holds"
  >
    <Datagrid
      bulkActionButtons={false}
      rowClick={(id) => `/users/${encodeURIComponent(String(id))}/show`}
    >
      <TextField source="user" />
      <SelectField source="scope" choices={HOLD_SCOPES} />
      <TextField source="operator" />
      <TextField source="reason" />
      <TimeField source="placed_at" />
      <TimeField source="expires_at" emptyText="—" />
      <LiftFromList />
    </Datagrid>
  </List>
);
