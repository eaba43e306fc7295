import LoginIcon from '@mui/icons-material/Login';
import { Alert, Box, CardContent, Typography } from '@mui/material';
import {
  CheckboxGroupInput,
  Form,
  LocalesMenuButton,
  Login,
  SaveButton,
  TextInput,
  regex,
  required,
  useLogin,
  useNotify,
  useTranslate,
} from 'react-admin';
import { ROLE_CHOICES } from '../components/choices';
import type { Role } from '../authProvider';
import type { ConsoleConfig } from '../config';

const atLeastOne = (value: unknown) =>
  Array.isArray(value) && value.length > 0 ? undefined : 'console.login.roles_required';

/**
 * The sign-in. `local`: an operator's name and roles, exchanged for a token by the local API's
 * `POST /local/ops-token`. `oidc` (AWS): not implemented yet, said so.
 */
export const LoginPage = ({ config }: { config: ConsoleConfig }) => {
  const login = useLogin();
  const notify = useNotify();
  const translate = useTranslate();
  return (
    <Login>
      <CardContent sx={{ width: 360 }}>
        <Box sx={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center', mb: 1 }}>
          <Typography variant="h6">{translate('console.login.title')}</Typography>
          <LocalesMenuButton />
        </Box>
        {config.signIn === 'local' ? (
          <Form
            defaultValues={{ operator: '', roles: [] }}
            onSubmit={async (values: Record<string, unknown>) => {
              try {
                await login({ operator: String(values.operator).trim(), roles: values.roles as Role[] });
              } catch (error) {
                const message = error instanceof Error ? error.message : String(error);
                notify(message, { type: 'error', messageArgs: { _: message } });
              }
            }}
          >
            <TextInput
              source="operator"
              label="console.login.operator"
              autoComplete="username"
              validate={[required(), regex(/^[A-Za-z0-9_.:@/+=,-]{1,256}$/, 'console.login.operator_invalid')]}
              fullWidth
            />
            <CheckboxGroupInput
              source="roles"
              label="console.login.roles"
              choices={ROLE_CHOICES}
              validate={atLeastOne}
              row={false}
            />
            <Typography variant="caption" color="text.secondary" component="p" sx={{ mb: 1 }}>
              {translate('console.login.local_hint')}
            </Typography>
            <SaveButton label="console.login.sign_in" icon={<LoginIcon />} alwaysEnable fullWidth data-submit="sign-in" />
          </Form>
        ) : (
          <Alert severity="warning">{translate('console.login.oidc_not_implemented')}</Alert>
        )}
      </CardContent>
    </Login>
  );
};
