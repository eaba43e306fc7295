import AddCardIcon from '@mui/icons-material/AddCard';
import TaskAltIcon from '@mui/icons-material/TaskAlt';
import { Alert, Box, Card, CardContent, Typography } from '@mui/material';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import {
  CreateButton,
  Create,
  Form,
  RadioButtonGroupInput,
  RecordContextProvider,
  SaveButton,
  SelectField,
  SimpleForm,
  SimpleShowLayout,
  TextField,
  TextInput,
  Title,
  maxLength,
  regex,
  required,
  useNotify,
  useRedirect,
  useTranslate,
  type RaRecord,
} from 'react-admin';
import { TimeField } from '../components/TimeField';
import { MoneyField } from '../components/MoneyField';
import { ADJUSTMENT_STATUSES, DIRECTIONS } from '../components/choices';
import { useConsoleDataProvider, type AdjustmentResult } from '../dataProvider';
import { parseMoney, type Currency } from '../money';

/** The stack's currency, for amounts typed in major units. */
const useCurrency = () => {
  const dataProvider = useConsoleDataProvider();
  return useQuery({ queryKey: ['console', 'currency'], queryFn: () => dataProvider.currency(), staleTime: Infinity });
};

const amountPattern = (currency: Currency) =>
  new RegExp(currency.exponent > 0 ? `^\\d{1,12}(\\.\\d{0,${currency.exponent}})?$` : '^\\d{1,12}$');

/**
 * `POST /ops/v1/adjustments`: propose a credit or a debit (support, finance or admin). The amount
 * is typed in the currency's major units and sent in minor units; the signed-in operator is the
 * proposer; another operator approves it.
 */
export const AdjustmentCreate = () => {
  const translate = useTranslate();
  const notify = useNotify();
  const redirect = useRedirect();
  const { data: currency } = useCurrency();
  return (
    <Create
      resource="adjustments"
      title="console.adjustment.propose"
      transform={(values: Record<string, unknown>) => ({
        reference: String(values.reference).trim(),
        user: String(values.user).trim(),
        direction: values.direction,
        amount_cents: currency ? parseMoney(String(values.amount), currency) : undefined,
        reason: values.reason,
      })}
      mutationOptions={{
        onSuccess: (data: RaRecord) => {
          notify(data.applied ? 'console.adjustment.proposed' : 'console.adjustment.already', {
            type: 'info',
            messageArgs: { reference: data.reference },
          });
          redirect('show', 'users', data.user);
        },
      }}
    >
      <SimpleForm defaultValues={{ direction: 'credit' }}>
        <TextInput source="reference" validate={[required(), maxLength(128)]} fullWidth />
        <TextInput source="user" validate={[required(), maxLength(128)]} fullWidth />
        <RadioButtonGroupInput source="direction" choices={DIRECTIONS} validate={required()} />
        {currency ? (
          <TextInput
            source="amount"
            label={translate('console.adjustment.amount', { code: currency.code })}
            helperText={translate('console.adjustment.amount_help', { exponent: currency.exponent })}
            validate={[required(), regex(amountPattern(currency), 'console.adjustment.invalid_amount')]}
          />
        ) : null}
        <TextInput source="reason" validate={[required(), maxLength(500)]} multiline fullWidth />
      </SimpleForm>
    </Create>
  );
};

/**
 * `POST /ops/v1/adjustments/{reference}/approve` (finance or admin, never the proposer): a
 * reference, the Approve button, and the answer (applied now or before, the user's balance).
 */
export const ApproveAdjustment = () => {
  const translate = useTranslate();
  const notify = useNotify();
  const dataProvider = useConsoleDataProvider();
  const [params] = useSearchParams();
  const [result, setResult] = useState<AdjustmentResult | null>(null);
  const approve = useMutation({
    mutationFn: (reference: string) => dataProvider.approveAdjustment(reference),
    onSuccess: (answer) => setResult(answer?.adjustment ? answer : null),
    onError: (error: Error) => {
      setResult(null);
      notify(error.message, { type: 'error', messageArgs: { _: error.message } });
    },
  });
  return (
    <Box sx={{ maxWidth: 720, mt: 2 }}>
      <Title title="console.adjustment.approve_title" />
      <Card>
        <CardContent>
          <Box sx={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center' }}>
            <Typography variant="h6">{translate('console.adjustment.approve_title')}</Typography>
            <CreateButton resource="adjustments" label="console.adjustment.propose" icon={<AddCardIcon />} />
          </Box>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
            {translate('console.adjustment.approve_help')}
          </Typography>
          <Form
            defaultValues={{ reference: params.get('reference') ?? '' }}
            onSubmit={async (values: Record<string, unknown>) => {
              try {
                await approve.mutateAsync(String(values.reference).trim());
              } catch {
                // shown by onError
              }
            }}
          >
            <TextInput source="reference" resource="adjustments" validate={[required(), maxLength(128)]} fullWidth />
            <SaveButton label="console.adjustment.approve" icon={<TaskAltIcon />} alwaysEnable data-submit="approve" />
          </Form>
        </CardContent>
      </Card>
      {result ? <ApproveResult result={result} /> : null}
    </Box>
  );
};

const ApproveResult = ({ result }: { result: AdjustmentResult }) => {
  const translate = useTranslate();
  const record = {
    ...result.adjustment,
    id: result.adjustment.reference,
    balance_cents: result.balance_cents,
    currency: result.currency,
  };
  return (
    <Card sx={{ mt: 2 }} data-testid="approve-result" data-applied={String(result.applied)}>
      <CardContent>
        <Typography variant="h6">{translate('console.adjustment.result')}</Typography>
        <Alert severity={result.applied ? 'success' : 'info'} sx={{ my: 1 }} data-testid="approve-applied">
          {translate(result.applied ? 'console.adjustment.applied' : 'console.adjustment.not_applied')}
        </Alert>
        <RecordContextProvider value={record}>
          <SimpleShowLayout resource="adjustments" direction="row" useFlexGap flexWrap="wrap" spacing={3}>
            <TextField source="reference" />
            <TextField source="user" />
            <SelectField source="direction" choices={DIRECTIONS} />
            <MoneyField source="amount_cents" />
            <TextField source="reason" />
            <TextField source="proposer" />
            <TextField source="approver" emptyText="—" />
            <SelectField source="status" choices={ADJUSTMENT_STATUSES} />
            <TimeField source="approved_at" emptyText="—" />
            <MoneyField source="balance_cents" className="approve-balance" variant="h6" />
          </SimpleShowLayout>
        </RecordContextProvider>
      </CardContent>
    </Card>
  );
};
