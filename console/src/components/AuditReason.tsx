import { Typography } from '@mui/material';
import { useRecordContext, useTranslate } from 'react-admin';
import type { components } from '../api/schema';
import { formatMoney, type Currency } from '../money';
import { useTimeText } from './TimeField';

type Facts = NonNullable<components['schemas']['AuditEntry']['facts']>;

/**
 * An audit entry's reason in the console's language, worded from its `facts` by one sentence per
 * action (`console.audit.worded.<action>`): the money in the answer's currency, the direction,
 * scope or outcome by their names, the person's own words as they typed them. An entry written
 * before facts were kept shows the server's `reason` as it is.
 */
export const AuditReason = (_props: { label?: string }) => {
  const record = useRecordContext();
  const translate = useTranslate();
  const timeText = useTimeText();
  if (!record) return null;
  const facts = record.facts as Facts | undefined;
  if (!facts || Object.keys(facts).length === 0) {
    return <Typography variant="body2">{String(record.reason ?? '')}</Typography>;
  }
  const name = (prefix: string, id: string | undefined) => (id ? translate(`${prefix}.${id}`, { _: id }) : '');
  const words = translate(`console.audit.worded.${record.action}`, {
    _: String(record.reason ?? ''),
    money: facts.amount_cents === undefined ? '' : formatMoney(facts.amount_cents, record.currency as Currency | undefined),
    direction: name('console.adjustment.directions', facts.direction),
    scope: name('console.hold.scopes', facts.scope),
    until: facts.until ? translate('console.audit.worded.until', { time: timeText(facts.until) }) : '',
    outcome: name('console.flag.outcomes', facts.outcome),
    assignee: facts.assignee ?? '',
    reference: facts.reference ?? '',
    words: facts.words ?? '',
  });
  return (
    <Typography variant="body2" data-testid="audit-reason">
      {words}
    </Typography>
  );
};
