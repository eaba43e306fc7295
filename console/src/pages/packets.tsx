import {
  ArrayField,
  BooleanField,
  Datagrid,
  NumberField,
  SelectField,
  Show,
  SimpleShowLayout,
  TextField,
  useRecordContext,
  useTranslate,
} from 'react-admin';
import { TimeField } from '../components/TimeField';
import { MoneyField } from '../components/MoneyField';
import { PACKET_KINDS, PACKET_STATUSES } from '../components/choices';

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

/** `GET /ops/v1/packets/{packet_id}`: a packet as the ledger holds it. */
export const PacketShow = () => (
  <Show title={<PacketTitle />}>
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
  </Show>
);
