import LockOpenIcon from '@mui/icons-material/LockOpen';
import { Alert, Box, Card, CardContent, Chip, CircularProgress, Divider, Typography } from '@mui/material';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import {
  ArrayField,
  BooleanField,
  Datagrid,
  ListContextProvider,
  NumberField,
  RecordContextProvider,
  ResourceContextProvider,
  SelectField,
  Show,
  SimpleShowLayout,
  TextField,
  useList,
  useRecordContext,
  useTranslate,
  type RaRecord,
} from 'react-admin';
import { ReasonDialog } from '../components/ReasonDialog';
import { TimeField, useTimeText } from '../components/TimeField';
import { MoneyField } from '../components/MoneyField';
import { PACKET_KINDS, PACKET_STATUSES } from '../components/choices';
import { useConsoleDataProvider, type PacketReleased, type PacketSides } from '../dataProvider';

const PacketTitle = () => {
  const record = useRecordContext();
  const translate = useTranslate();
  return <span>{record ? translate('console.packet.title', { id: record.packet_id }) : ''}</span>;
};

/** The grabs in grab order; their amounts in the packet's currency. */
const Grabs = (_props: { source: string }) => {
  const packet = useRecordContext();
  return (
    <ArrayField source="grabs">
      <Datagrid bulkActionButtons={false} rowClick={false}>
        <NumberField source="share" />
        <TextField source="user" />
        <MoneyField source="amount_cents" currency={packet?.currency} />
        <TimeField source="grabbed_at" />
      </Datagrid>
    </ArrayField>
  );
};

const BestLuck = (_props: { source: string }) => {
  const record = useRecordContext();
  const best = record?.best_luck as { user: string; amount_cents: number } | null | undefined;
  if (!best) return <span>—</span>;
  return (
    <span>
      {best.user} · <MoneyField source="amount_cents" record={{ ...best, currency: record?.currency }} />
    </span>
  );
};

/**
 * `GET /ops/v1/packets/{packet_id}/sides` for the packet shown (any role): one query, shared by
 * the quarantine banner and the section (react-admin's refresh fetches it again).
 */
const usePacketSides = () => {
  const record = useRecordContext();
  const dataProvider = useConsoleDataProvider();
  const id = record?.packet_id === undefined ? undefined : String(record.packet_id);
  const sides = useQuery({
    queryKey: ['console', 'packet-sides', id],
    queryFn: () => dataProvider.packetSides(id!),
    enabled: id !== undefined,
    retry: false,
  });
  return { id, sides };
};

/** `POST /ops/v1/packets/{packet_id}/release` (finance or admin; the server decides), with a reason. */
const ReleasePacketButton = ({ id }: { id: string }) => {
  const dataProvider = useConsoleDataProvider();
  const translate = useTranslate();
  return (
    <ReasonDialog<PacketReleased>
      name="release-packet"
      label="console.packet.sides.release"
      title={translate('console.packet.sides.release_title', { id })}
      icon={<LockOpenIcon />}
      color="warning"
      help="console.packet.sides.release_help"
      action={(reason) => dataProvider.releasePacket(id, reason)}
      changed={(result) => result?.released}
      notices={{ changed: 'console.packet.sides.released', unchanged: 'console.packet.sides.not_quarantined' }}
      messageArgs={{ id }}
    />
  );
};

/** When settle set the packet aside: since when, and the release (the top of the page). */
const QuarantineBanner = () => {
  const { id, sides } = usePacketSides();
  const translate = useTranslate();
  const timeText = useTimeText();
  const since = sides.data?.quarantined_at;
  if (!id || !since) return null;
  return (
    <Alert
      severity="warning"
      sx={{ m: 2, mb: 0 }}
      data-testid="packet-quarantine"
      data-quarantined-at={since}
      action={<ReleasePacketButton id={id} />}
    >
      {translate('console.packet.sides.quarantined', { at: timeText(since) })}
    </Alert>
  );
};

/** One side's figures in a card of its own, or the sentence saying that store holds none. */
const Side = ({
  title,
  resource,
  record,
  none,
  testId,
  children,
}: {
  title: string;
  resource: string;
  record: RaRecord | null;
  none: string;
  testId: string;
  children: ReactNode;
}) => {
  const translate = useTranslate();
  return (
    <Card variant="outlined" data-testid={testId} data-present={String(record !== null)}>
      <CardContent>
        <Typography variant="subtitle1" gutterBottom>
          {translate(title)}
        </Typography>
        {record ? (
          <RecordContextProvider value={record}>
            <ResourceContextProvider value={resource}>
              <SimpleShowLayout sx={{ p: 0 }}>{children}</SimpleShowLayout>
            </ResourceContextProvider>
          </RecordContextProvider>
        ) : (
          <Typography variant="body2" color="text.secondary">
            {translate(none)}
          </Typography>
        )}
      </CardContent>
    </Card>
  );
};

/** A grab acknowledged by Redis that settle has not written to the ledger yet. */
const Pending = (_props: { label?: string }) => {
  const record = useRecordContext();
  const translate = useTranslate();
  if (!record?.pending) return null;
  return <Chip size="small" color="warning" label={translate('console.packet.sides.pending')} data-testid="grab-pending" />;
};

/** The two stores' amounts of a grab differ (both known): tinted. */
const mismatchedRow = (record: RaRecord) =>
  typeof record.ledger_cents === 'number' && typeof record.live_cents === 'number' && record.ledger_cents !== record.live_cents
    ? { backgroundColor: 'rgba(211, 47, 47, 0.08)' }
    : {};

const SidesView = ({ sides }: { sides: PacketSides }) => {
  const translate = useTranslate();
  const { currency } = sides;
  const grabs = useList({
    data: sides.grabs.map((grab) => ({ ...grab, id: grab.seq, currency })),
    perPage: 10_000,
  });
  const count = sides.differences.length;
  return (
    <Box
      data-testid="packet-sides"
      data-differences={count}
      data-grabs={sides.grabs.length}
      data-quarantined={String(Boolean(sides.quarantined_at))}
    >
      <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: '1fr 1fr' }, gap: 2 }}>
        <Side
          title="console.packet.sides.ledger"
          resource="packet_ledger"
          record={sides.ledger ? { ...sides.ledger, id: 'ledger', currency } : null}
          none="console.packet.sides.no_ledger"
          testId="packet-sides-ledger"
        >
          <SelectField source="status" choices={PACKET_STATUSES} />
          <NumberField source="grabs" />
          <MoneyField source="grabbed_cents" className="sides-ledger-grabbed" />
          <MoneyField source="refund_cents" emptyText="—" />
        </Side>
        <Side
          title="console.packet.sides.live"
          resource="packet_live"
          record={sides.live ? { ...sides.live, id: 'live', currency } : null}
          none="console.packet.sides.no_live"
          testId="packet-sides-live"
        >
          <BooleanField source="open" />
          <BooleanField source="frozen" />
          <BooleanField source="cancelled" />
          <NumberField source="remaining_count" />
          <NumberField source="grabs" />
          <MoneyField source="grabbed_cents" className="sides-live-grabbed" />
          <NumberField source="persisted" />
        </Side>
      </Box>

      <Typography variant="subtitle1" sx={{ mt: 2 }}>
        {translate('console.packet.sides.grabs')}
      </Typography>
      <Box data-testid="packet-sides-grabs">
        <ResourceContextProvider value="packet_grabs">
          <ListContextProvider value={grabs}>
            <Datagrid
              bulkActionButtons={false}
              rowClick={false}
              rowSx={mismatchedRow}
              empty={
                <Typography variant="body2" color="text.secondary" sx={{ p: 2 }}>
                  {translate('console.packet.sides.no_grabs')}
                </Typography>
              }
            >
              <NumberField source="seq" sortable={false} />
              <TextField source="user" sortable={false} />
              <MoneyField source="ledger_cents" className="sides-ledger-cents" emptyText="—" sortable={false} />
              <MoneyField source="live_cents" className="sides-live-cents" emptyText="—" sortable={false} />
              <Pending label="resources.packet_grabs.fields.pending" />
            </Datagrid>
          </ListContextProvider>
        </ResourceContextProvider>
      </Box>

      <Typography variant="subtitle1" sx={{ mt: 2, mb: 1 }}>
        {translate('console.packet.sides.differences')}
      </Typography>
      {count === 0 ? (
        <Alert severity="success" data-testid="packet-sides-result">
          {translate('console.packet.sides.no_differences')}
        </Alert>
      ) : (
        <Alert severity="error" data-testid="packet-sides-result">
          {translate('console.reports.differences_count', { count })}
          <Box component="ul" sx={{ m: 0, mt: 1, pl: 2.5 }} data-testid="packet-sides-differences">
            {sides.differences.map((difference, index) => (
              <li key={index}>{difference}</li>
            ))}
          </Box>
        </Alert>
      )}
    </Box>
  );
};

/**
 * "Redis vs ledger": the packet as each store holds it, grab by grab, with what differs
 * (`GET /ops/v1/packets/{packet_id}/sides`).
 */
const PacketSidesSection = () => {
  const { id, sides } = usePacketSides();
  const translate = useTranslate();
  if (!id) return null;
  return (
    <Box sx={{ p: 2 }} data-testid="packet-sides-section">
      <Typography variant="h6" gutterBottom>
        {translate('console.packet.sides.title')}
      </Typography>
      {sides.isPending ? <CircularProgress size={24} /> : null}
      {sides.error ? (
        <Alert severity="error" data-testid="packet-sides-error">
          {sides.error.message}
        </Alert>
      ) : null}
      {sides.data ? <SidesView sides={sides.data} /> : null}
    </Box>
  );
};

/**
 * `GET /ops/v1/packets/{packet_id}`: a packet as the ledger holds it; below it, Redis beside the
 * ledger; above it, when settle set it aside, the quarantine and its release.
 */
export const PacketShow = () => (
  <Show title={<PacketTitle />}>
    <QuarantineBanner />
    <SimpleShowLayout>
      <TextField source="packet_id" />
      <TextField source="sender" />
      <SelectField source="kind" choices={PACKET_KINDS} />
      <TextField source="greeting" emptyText="—" data-testid="packet-greeting" />
      <TextField source="chat_id" emptyText="—" />
      <MoneyField source="total_cents" />
      <NumberField source="count" />
      <MoneyField source="remaining_cents" />
      <NumberField source="remaining_count" />
      <SelectField source="status" choices={PACKET_STATUSES} />
      <TimeField source="created_at" />
      <TimeField source="opens_at" emptyText="—" />
      <TimeField source="expires_at" />
      <BooleanField source="has_passphrase" />
      <BooleanField source="settled" />
      <MoneyField source="refund_cents" />
      <BestLuck source="best_luck" />
      <NumberField source="grab_count" />
      <Grabs source="grabs" />
    </SimpleShowLayout>
    <Divider />
    <PacketSidesSection />
  </Show>
);
