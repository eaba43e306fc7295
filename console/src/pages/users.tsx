import AddCardIcon from '@mui/icons-material/AddCard';
import SearchIcon from '@mui/icons-material/Search';
import { Alert, Box, Card, CardContent, Divider, Link as MuiLink, Typography } from '@mui/material';
import type { ReactNode } from 'react';
import { Link } from 'react-router-dom';
import {
  CreateButton,
  Datagrid,
  Form,
  Labeled,
  Pagination,
  RecordContextProvider,
  ReferenceManyField,
  SaveButton,
  SelectField,
  Show,
  SimpleShowLayout,
  Tab,
  TabbedShowLayout,
  TextArrayField,
  TextField,
  TextInput,
  Title,
  TopToolbar,
  maxLength,
  required,
  useRecordContext,
  useRedirect,
  useTranslate,
} from 'react-admin';
import { AuditReason } from '../components/AuditReason';
import { TimeField } from '../components/TimeField';
import { useNotifyError } from '../components/notifyError';
import { useConsoleDataProvider } from '../dataProvider';
import { MoneyField } from '../components/MoneyField';
import { LiftHoldButton, PlaceHoldButton } from '../components/HoldButtons';
import {
  AUDIT_ACTIONS,
  FLAG_RULES,
  FLAG_STATUSES,
  HOLD_SCOPES,
  MOVEMENT_KINDS,
  MOVEMENT_STATUSES,
  PACKET_STATUSES,
} from '../components/choices';

/** The users' page: a user id, then that user's page. */
/**
 * Where a search goes: a packet id (32 hex digits, as every answer writes it) opens the packet, a
 * withdrawal id (`wd-` and 32 hex digits) the withdrawal, anything else the user of that id (whose
 * page says when nothing is on record for it), unless it is an adjustment's reference
 * ({@link useSearch} asks the server).
 */
export function searched(typed: string): ['show', 'packets' | 'withdrawals' | 'users', string] {
  const text = typed.trim();
  if (/^[0-9a-fA-F]{32}$/.test(text)) return ['show', 'packets', text.toLowerCase()];
  if (/^wd-[0-9a-fA-F]{32}$/i.test(text)) return ['show', 'withdrawals', text.toLowerCase()];
  return ['show', 'users', text];
}

/**
 * The search box's submit: {@link searched}'s target, except that text an adjustment was
 * proposed under opens that adjustment (`GET /ops/v1/adjustments/{reference}`; a 404 is a user).
 */
function useSearch() {
  const redirect = useRedirect();
  const dataProvider = useConsoleDataProvider();
  return async (typed: string) => {
    const [verb, resource, id] = searched(typed);
    if (resource === 'users' && /^[A-Za-z0-9_.:-]{1,64}$/.test(id) && id !== 'pending') {
      const found = await dataProvider.getOne('adjustments', { id }).then(
        () => true,
        (error: { status?: number }) => (error?.status === 404 ? false : Promise.reject(error)),
      );
      if (found) return redirect('show', 'adjustments', id);
    }
    return redirect(verb, resource, id);
  };
}

export const UserSearch = ({ titled = true }: { titled?: boolean }) => {
  const search = useSearch();
  const failed = useNotifyError();
  const translate = useTranslate();
  return (
    <Box sx={{ maxWidth: 560, mt: titled ? 2 : 0 }}>
      {titled ? <Title title="console.users.search_title" /> : null}
      <Card>
        <CardContent>
          <Typography variant="h6" gutterBottom>
            {translate('console.users.search_title')}
          </Typography>
          <Form onSubmit={(values: Record<string, unknown>) => search(String(values.user)).catch(failed)}>
            <TextInput
              source="user"
              resource="users"
              validate={[required(), maxLength(128)]}
              helperText="console.users.search_help"
              autoFocus
              fullWidth
            />
            <SaveButton label="console.users.open" icon={<SearchIcon />} alwaysEnable data-submit="find-user" />
          </Form>
        </CardContent>
      </Card>
    </Box>
  );
};

/** The users' resource page. */
export const UserSearchPage = () => <UserSearch />;

const UserTitle = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  return <span>{record ? translate('console.users.title', { user: record.user }) : ''}</span>;
};

const UserActions = () => {
  const record = useRecordContext();
  if (!record) return <TopToolbar />;
  const user = String(record.user);
  return (
    <TopToolbar>
      <CreateButton
        resource="adjustments"
        state={{ record: { user, direction: 'credit' } }}
        label="console.adjustment.propose"
        icon={<AddCardIcon />}
        data-action="propose-adjustment"
      />
      <PlaceHoldButton user={user} />
      {record.hold ? <LiftHoldButton user={user} /> : null}
    </TopToolbar>
  );
};

/** Said first when nothing is on record for the id (`known: false`): a typo reads as an empty
 * account otherwise. */
const UnknownUser = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (record?.known !== false) return null;
  return (
    <Alert severity="warning" data-testid="user-unknown" sx={{ mb: 1 }}>
      {translate('console.users.unknown', { user: String(record.user) })}
    </Alert>
  );
};

/** The hold in force: its scope, who placed it, why, since and until when; or "none". */
const HoldInForce = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  const hold = record?.hold as Record<string, unknown> | null | undefined;
  return (
    <Labeled label="console.users.hold_in_force">
      {hold ? (
        <RecordContextProvider value={{ id: String(hold.user), ...hold }}>
          <Box data-testid="user-hold" sx={{ display: 'flex', gap: 3, flexWrap: 'wrap' }}>
            <Labeled source="scope" resource="holds">
              <SelectField source="scope" choices={HOLD_SCOPES} />
            </Labeled>
            <Labeled source="operator" resource="holds">
              <TextField source="operator" />
            </Labeled>
            <Labeled source="reason" resource="holds">
              <TextField source="reason" data-testid="user-hold-reason" />
            </Labeled>
            <Labeled source="placed_at" resource="holds">
              <TimeField source="placed_at" />
            </Labeled>
            <Labeled source="expires_at" resource="holds">
              <TimeField source="expires_at" emptyText="—" />
            </Labeled>
          </Box>
        </RecordContextProvider>
      ) : (
        <Typography variant="body2" data-testid="user-hold">
          {translate('console.users.no_hold')}
        </Typography>
      )}
    </Labeled>
  );
};

const PacketList = ({ role }: { role: 'sent' | 'received' }) => (
  <ReferenceManyField
    reference="user_packets"
    target="user"
    filter={{ role }}
    perPage={10}
    pagination={<Pagination rowsPerPageOptions={[10, 20, 50, 100]} />}
  >
    <Datagrid
      bulkActionButtons={false}
      rowClick={(_id, _resource, record) => `/packets/${encodeURIComponent(String(record.packet_id))}/show`}
      empty={<EmptyText />}
    >
      <TextField source="packet_id" sortable={false} />
      <TextField source="sender" sortable={false} />
      <MoneyField source="total_cents" sortable={false} />
      <TextField source="count" sortable={false} />
      <SelectField source="status" choices={PACKET_STATUSES} sortable={false} />
      <TimeField source="created_at" sortable={false} />
      {role === 'received' ? <MoneyField source="amount_cents" sortable={false} /> : null}
      {role === 'received' ? <TimeField source="grabbed_at" sortable={false} /> : null}
    </Datagrid>
  </ReferenceManyField>
);

const EmptyText = ({ message = 'console.common.none' }: { message?: string }) => {
  const translate = useTranslate();
  return (
    <Typography variant="body2" sx={{ p: 2 }} color="text.secondary">
      {translate(message)}
    </Typography>
  );
};

/** What a section lists, said above it. */
const SectionHelp = ({ message }: { message: string }) => {
  const translate = useTranslate();
  return (
    <Typography variant="body2" color="text.secondary" component="p" sx={{ mb: 1 }}>
      {translate(message)}
    </Typography>
  );
};

/**
 * A tab of the user's page: what it lists said above it, then the list `reference` holds of the
 * user (`GET /ops/v1/users/{user}/…`), 20 rows a page, in the server's order; `children` are its
 * columns, `empty` what it says when it holds none.
 */
const UserSection = ({
  testId,
  help,
  reference,
  empty,
  children,
}: {
  testId: string;
  help: string;
  reference: string;
  empty?: string;
  children: ReactNode;
}) => (
  <Box data-testid={testId}>
    <SectionHelp message={help} />
    <ReferenceManyField
      reference={reference}
      target="user"
      perPage={20}
      pagination={<Pagination rowsPerPageOptions={[10, 20, 50, 100]} />}
    >
      <Datagrid bulkActionButtons={false} rowClick={false} empty={<EmptyText message={empty} />}>
        {children}
      </Datagrid>
    </ReferenceManyField>
  </Box>
);

/** `…/movements`: newest first; a withdrawal is a movement with its state. */
const UserMovements = () => (
  <UserSection testId="user-movements" help="console.users.movements_help" reference="movements">
    <TimeField source="at" sortable={false} />
    <SelectField source="kind" choices={MOVEMENT_KINDS} sortable={false} />
    <MoneyField source="amount_cents" signedByKind sortable={false} />
    <TextField source="reference" sortable={false} emptyText="—" />
    <TextField source="packet_id" sortable={false} emptyText="—" />
    <SelectField source="status" choices={MOVEMENT_STATUSES} sortable={false} emptyText="—" />
  </UserSection>
);

/** A flag's place on the flags page: its status's list (the flags page lists one status at a time). */
const FlagsPageLink = (_props: { label?: string }) => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (!record) return null;
  const filter = encodeURIComponent(JSON.stringify({ status: record.status }));
  return (
    <MuiLink component={Link} to={`/flags?filter=${filter}`} variant="body2" sx={{ whiteSpace: 'nowrap' }}>
      {translate('console.users.open_flags')}
    </MuiLink>
  );
};

/** `…/flags`: the risk flags naming the user, newest first, each as it stands now. */
const UserFlags = () => (
  <UserSection testId="user-flags" help="console.users.flags_help" reference="user_flags" empty="console.users.no_flags">
    <SelectField source="rule" choices={FLAG_RULES} sortable={false} />
    <TextArrayField source="others" sortable={false} emptyText="—" />
    <SelectField source="status" choices={FLAG_STATUSES} sortable={false} />
    <TextField source="assignee" sortable={false} emptyText="—" />
    <TimeField source="raised_at" sortable={false} />
    <FlagsPageLink label="console.users.flags_page" />
  </UserSection>
);

/** `…/audit`: the audit entries concerning the user, every day's, newest first. */
const UserAudit = () => (
  <UserSection testId="user-audit" help="console.users.audit_help" reference="user_audit" empty="console.users.no_audit">
    <TimeField source="at" sortable={false} />
    <SelectField source="action" choices={AUDIT_ACTIONS} sortable={false} />
    <TextField source="actor" sortable={false} />
    <TextField source="subject" sortable={false} />
    <AuditReason label="resources.user_audit.fields.reason" />
  </UserSection>
);

/** A user as an investigation reads them: `GET /ops/v1/users/{user}` and its pages. */
export const UserShow = () => (
  <Show title={<UserTitle />} actions={<UserActions />}>
    <SimpleShowLayout>
      <UnknownUser />
      <TextField source="user" data-testid="user-id" />
      <MoneyField source="balance_cents" className="user-balance" variant="h5" />
      <HoldInForce />
    </SimpleShowLayout>
    <Divider />
    <TabbedShowLayout syncWithLocation={false}>
      <Tab label="console.users.movements">
        <UserMovements />
      </Tab>
      <Tab label="console.users.sent">
        <PacketList role="sent" />
      </Tab>
      <Tab label="console.users.received">
        <PacketList role="received" />
      </Tab>
      <Tab label="console.users.flags">
        <UserFlags />
      </Tab>
      <Tab label="console.users.audit">
        <UserAudit />
      </Tab>
    </TabbedShowLayout>
  </Show>
);
