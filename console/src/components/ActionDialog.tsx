import { Dialog, DialogActions, DialogContent, DialogTitle } from '@mui/material';
import { useMutation } from '@tanstack/react-query';
import { useState, type ReactElement, type ReactNode, type SyntheticEvent } from 'react';
import { Button, Form, SaveButton, useNotify, useRefresh } from 'react-admin';

type ActionDialogProps<Result> = {
  /** The button's label (a translation key). */
  label: string;
  /** The dialog's title, translated. */
  title: string;
  icon?: ReactElement;
  color?: 'primary' | 'secondary' | 'error' | 'warning' | 'inherit';
  /** The form's inputs (react-admin inputs). */
  children: ReactNode;
  defaultValues?: Record<string, unknown>;
  /** The call the form's values make (a custom method of the dataProvider). */
  action: (values: Record<string, unknown>) => Promise<Result>;
  /** What to tell the operator once it answered. */
  done?: (result: Result) => void;
  /** Where the tests and a person's assistive tools find it. */
  name: string;
};

/**
 * A button opening a dialog with a react-admin form; submitting it runs one call of the operators'
 * API, refreshes the page's data and notifies; the API's error (its own message) is shown as a
 * notification and the dialog stays open. Clicks inside never reach a clickable row around it.
 */
export function ActionDialog<Result>(props: ActionDialogProps<Result>) {
  const { label, title, icon, color, children, defaultValues, action, done, name } = props;
  const [open, setOpen] = useState(false);
  const notify = useNotify();
  const refresh = useRefresh();
  const mutation = useMutation({
    mutationFn: action,
    onSuccess(result) {
      setOpen(false);
      done?.(result);
      refresh();
    },
    onError(error: Error) {
      notify(error.message, { type: 'error', messageArgs: { _: error.message } });
    },
  });
  const stop = (event: SyntheticEvent) => event.stopPropagation();
  return (
    <span onClick={stop}>
      <Button label={label} color={color} onClick={() => setOpen(true)} data-action={name}>
        {icon}
      </Button>
      <Dialog open={open} onClose={() => setOpen(false)} fullWidth maxWidth="sm" data-dialog={name} onClick={stop}>
        <Form
          defaultValues={defaultValues}
          onSubmit={async (values: Record<string, unknown>) => {
            try {
              await mutation.mutateAsync(values);
            } catch {
              // shown by onError
            }
          }}
        >
          <DialogTitle>{title}</DialogTitle>
          <DialogContent>{children}</DialogContent>
          <DialogActions>
            <Button label="console.common.cancel" onClick={() => setOpen(false)} />
            <SaveButton label={label} icon={icon} alwaysEnable data-submit={name} />
          </DialogActions>
        </Form>
      </Dialog>
    </span>
  );
}
