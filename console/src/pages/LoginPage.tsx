import LoginIcon from '@mui/icons-material/Login';
import { Box, Button, CardContent, CircularProgress, Typography } from '@mui/material';
import { useState } from 'react';
import { useLocation } from 'react-router-dom';
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
import type { ConsoleConfig } from '../config';
import type { Role } from '../roles';

const atLeastOne = (value: unknown) =>
  Array.isArray(value) && value.length > 0 ? undefined : 'console.login.roles_required';

/**
 * `oidc`: one button, to the operators' identity provider; back from it, on to the page the
 * operator was headed for (react-admin's location state when it sent them here).
 */
const CompanySignIn = () => {
  const login = useLogin();
  const notify = useNotify();
  const translate = useTranslate();
  const location = useLocation();
  const [leaving, setLeaving] = useState(false);
  const state = location.state as { nextPathname?: unknown; nextSearch?: unknown } | null;
  const next =
    typeof state?.nextPathname === 'string'
      ? `${state.nextPathname}${typeof state.nextSearch === 'string' ? state.nextSearch : ''}`
      : undefined;
  return (
    <>
      <Button
        variant="contained"
        fullWidth
        startIcon={leaving ? <CircularProgress size={18} color="inherit" /> : <LoginIcon />}
        disabled={leaving}
        data-submit="sign-in-oidc"
        onClick={async () => {
          setLeaving(true);
          try {
            await login({ next });
          } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            notify(message, { type: 'error', messageArgs: { _: message } });
          } finally {
            setLeaving(false);
          }
        }}
      >
        {translate('console.login.oidc_sign_in')}
      </Button>
      <Typography variant="caption" color="text.secondary" component="p" sx={{ mt: 1 }}>
        {translate('console.login.oidc_hint')}
      </Typography>
    </>
  );
};

/**
 * The sign-in. `local`: an operator's name and roles, exchanged for a token by the local API's
 * `POST /local/ops-token`. `oidc` (AWS): the company's identity provider, one button.
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
          <CompanySignIn />
        )}
      </CardContent>
    </Login>
  );
};
