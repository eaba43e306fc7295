import LockIcon from '@mui/icons-material/Lock';
import LockOpenIcon from '@mui/icons-material/LockOpen';
import { DateTimeInput, SelectInput, TextInput, required, useNotify, useTranslate } from 'react-admin';
import { useConsoleDataProvider, type HoldResult, type HoldScope } from '../dataProvider';
import { ActionDialog } from './ActionDialog';
import { HOLD_SCOPES } from './choices';
import { ReasonDialog, reasonRules } from './ReasonDialog';

/** `POST /ops/v1/users/{user}/hold` (risk or admin; the server decides). The scope is chosen,
 * never preselected: a hold on everything is as easy to place by mistake as the default. */
export const PlaceHoldButton = ({ user }: { user: string }) => {
  const dataProvider = useConsoleDataProvider();
  const notify = useNotify();
  const translate = useTranslate();
  return (
    <ActionDialog<HoldResult>
      name="place-hold"
      label="console.hold.place"
      title={translate('console.hold.place_title', { user })}
      icon={<LockIcon />}
      color="warning"
      action={(values) =>
        dataProvider.placeHold(user, {
          scope: values.scope as HoldScope,
          reason: String(values.reason),
          ...(values.expires_at ? { expires_at: new Date(String(values.expires_at)).toISOString() } : {}),
        })
      }
      done={(result) =>
        notify(result?.changed ? 'console.hold.placed' : 'console.hold.unchanged', {
          type: 'info',
          messageArgs: { user, scope: translate(`console.hold.scopes.${result?.hold?.scope ?? 'all'}`) },
        })
      }
    >
      <SelectInput source="scope" resource="holds" choices={HOLD_SCOPES} validate={required()} fullWidth />
      <TextInput source="reason" resource="holds" validate={reasonRules} multiline fullWidth />
      <DateTimeInput source="expires_at" resource="holds" helperText="console.hold.expires_help" fullWidth />
    </ActionDialog>
  );
};

/** `POST /ops/v1/users/{user}/hold/lift` (risk or admin; the server decides). */
export const LiftHoldButton = ({ user }: { user: string }) => {
  const dataProvider = useConsoleDataProvider();
  const translate = useTranslate();
  return (
    <ReasonDialog<HoldResult>
      name="lift-hold"
      label="console.hold.lift"
      title={translate('console.hold.lift_title', { user })}
      icon={<LockOpenIcon />}
      action={(reason) => dataProvider.liftHold(user, reason)}
      changed={(result) => result?.changed}
      notices={{ changed: 'console.hold.lifted', unchanged: 'console.hold.unchanged' }}
      messageArgs={{ user }}
    />
  );
};
