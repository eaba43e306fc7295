import {
  Datagrid,
  DateInput,
  ExportButton,
  List,
  Pagination,
  SearchInput,
  SelectField,
  SelectInput,
  TextField,
  TopToolbar,
  required,
} from 'react-admin';
import { AuditReason } from '../components/AuditReason';
import { TimeField } from '../components/TimeField';
import { AUDIT_ACTIONS } from '../components/choices';
import { useBusinessToday } from '../businessDay';

/** The most entries one export holds (a day's trail is read whole, then filtered here). */
const EXPORT_MAX = 100_000;

const filters = [
  <DateInput key="day" source="day" alwaysOn validate={required()} />,
  <DateInput key="to" source="to" alwaysOn />,
  <SelectInput key="action" source="action" choices={AUDIT_ACTIONS} alwaysOn />,
  <SearchInput key="q" source="q" alwaysOn />,
];

/**
 * `GET /ops/v1/audit/{day}[?to=]`: a business day's trail (who did what, when and why), or a
 * period's (to `to`, at most 31 days); a day picker, today's business day (config.json's
 * businessTimeZone) by default. Exported as CSV as filtered (react-admin's exporter: every entry
 * the filters keep, not only the page shown).
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
      actions={
        <TopToolbar>
          <ExportButton maxResults={EXPORT_MAX} />
        </TopToolbar>
      }
    >
      <Datagrid bulkActionButtons={false} rowClick={false}>
        <TimeField source="at" />
        <SelectField source="action" choices={AUDIT_ACTIONS} />
        <TextField source="subject" />
        <TextField source="user" emptyText="—" sortable={false} />
        <TextField source="actor" />
        <AuditReason label="resources.audit.fields.reason" />
      </Datagrid>
    </List>
  );
};
