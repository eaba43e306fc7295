import { Typography } from '@mui/material';
import { useRecordContext, useTranslate, type FieldProps } from 'react-admin';
import { formatMoney, OUT_KINDS, type Currency } from '../money';

type MoneyFieldProps = FieldProps & {
  /** Show a movement's direction: "-" for the kinds that take money out, "+" for the rest. */
  signedByKind?: boolean;
  currency?: Currency;
  variant?: 'body2' | 'h6' | 'h5';
};

/**
 * An amount in minor units with the answer's currency (`record.currency`): "15.00 CNY"; no amount:
 * `emptyText` (translated) when given, else nothing.
 */
export const MoneyField = (props: MoneyFieldProps) => {
  const { source, signedByKind, currency, className, variant = 'body2', emptyText } = props;
  const record = useRecordContext(props);
  const translate = useTranslate();
  const value = source ? (record?.[source] as unknown) : undefined;
  if (typeof value !== 'number') {
    return emptyText ? (
      <Typography component="span" variant={variant} className={className}>
        {translate(emptyText, { _: emptyText })}
      </Typography>
    ) : null;
  }
  const cents = signedByKind && OUT_KINDS.has(String(record?.kind)) ? -value : value;
  return (
    <Typography component="span" variant={variant} className={className} data-cents={cents} sx={{ whiteSpace: 'nowrap' }}>
      {formatMoney(cents, currency ?? (record?.currency as Currency | undefined), signedByKind)}
    </Typography>
  );
};
