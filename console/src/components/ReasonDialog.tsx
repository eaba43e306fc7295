import { Typography } from '@mui/material';
import type { ReactElement, ReactNode } from 'react';
import { TextInput, maxLength, required, useNotify, useTranslate } from 'react-admin';
import { ActionDialog } from './ActionDialog';

/** An operator's reason, as the operators' API takes it: required, at most 500 characters. */
export const reasonRules = [required(), maxLength(500)];

type ReasonDialogProps<Result> = {
  /** Where the tests and a person's assistive tools find it (its button, dialog and submit). */
  name: string;
  /** The button's label (a translation key). */
  label: string;
  /** The dialog's title, translated. */
  title: string;
  icon?: ReactElement;
  color?: 'primary' | 'secondary' | 'error' | 'warning' | 'inherit';
  /** What the action is on, shown first (e.g. the adjustment's summary). */
  children?: ReactNode;
  /** What the action does, said above the reason (a translation key). */
  help?: string;
  /** The call, with the reason typed (a custom method of the dataProvider). */
  action: (reason: string) => Promise<Result>;
  /** Whether the call changed anything; when not, the server found it done already. */
  changed: (result: Result) => boolean | undefined;
  /** The notices (translation keys) for a call that changed something and for one that did not. */
  notices: { changed: string; unchanged: string };
  /** The notices' arguments. */
  messageArgs?: Record<string, unknown>;
};

/**
 * An {@link ActionDialog} whose one input is the operator's reason (required, at most 500
 * characters), under an optional help line, that notifies whether the call changed anything (a
 * repeated call changes nothing, and says so).
 */
export function ReasonDialog<Result>(props: ReasonDialogProps<Result>) {
  const { name, label, title, icon, color, children, help, action, changed, notices, messageArgs } = props;
  const notify = useNotify();
  const translate = useTranslate();
  return (
    <ActionDialog<Result>
      name={name}
      label={label}
      title={title}
      icon={icon}
      color={color}
      action={(values) => action(String(values.reason))}
      done={(result) =>
        notify(changed(result) ? notices.changed : notices.unchanged, { type: 'info', messageArgs })
      }
    >
      {children}
      {help ? (
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          {translate(help)}
        </Typography>
      ) : null}
      <TextInput source="reason" label="console.common.reason" validate={reasonRules} multiline fullWidth />
    </ActionDialog>
  );
}
