import { Datagrid, DateInput, List, Pagination, SearchInput, SelectField, SelectInput, TextField, required } from 'react-admin';
import { TimeField } from '../components/TimeField';
import { AUDIT_ACTIONS } from '../components/choices';
import { useBusinessToday } from '../businessDay';

const filters = [
  <DateInput key="day" source="day" alwaysOn validate={required()} />,
  <SelectInput key="action" source="action" choices={AUDIT_ACTIONS} alwaysOn />,
  <SearchInput key="q" source="q" alwaysOn />,
];

/**
 * `GET /ops/v1/audit/{day}`: a business day's trail (who did what, when and why); a day picker,
 * today's business day (config.json's businessTimeZone) by default.
 */
export const AuditList = () => {
  const today = useBusinessToday();
  return (
    <List
      filters={filters}
      filterDefaultValues={{ day: today }}
      sort={{ field: 'at', order: 'ASC' }}
      perPage={50}
      pagination={<Pagination rowsPerPageOptions={[50, 100, 200]} />}
      exporter={false}
      actions={false}
    >
      <Datagrid bulkActionButtons={false} rowClick={false}>
        <TimeField source="at" />
        <SelectField source="action" choices={AUDIT_ACTIONS} />
        <TextField source="subject" />
        <TextField source="actor" />
        <TextField source="reason" sortable={false} />
      </Datagrid>
    </List>
  );
};
