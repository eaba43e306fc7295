import type { AuthProvider } from 'react-admin';
import type { ConsoleConfig } from './config';
import type { ConsoleAuth } from './consoleAuth';
import { unexpired } from './jwt';
import { makeOidcAuth } from './oidcAuth';
import type { Role } from './roles';

const TOKEN = 'ops.token';
const OPERATOR = 'ops.operator';
const ROLES_KEY = 'ops.roles';

/** The signed-in operator's token (`local`), kept for this tab only (sessionStorage). */
export function currentToken(): string | null {
  return sessionStorage.getItem(TOKEN);
}

function forget() {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(OPERATOR);
  sessionStorage.removeItem(ROLES_KEY);
}

function signedIn(): boolean {
  const token = currentToken();
  return token !== null && unexpired(token);
}

export type LocalSignIn = { operator: string; roles: Role[] };

/**
 * Sign-in and its checks, by config.json's `signIn`. `local`: the operator's name and roles go to
 * `POST {apiBase}/local/ops-token` (the local API's stand-in for the operators' identity
 * provider), the token it answers is kept in sessionStorage and sent on every call. `oidc`: the
 * operators' identity provider (./oidcAuth.ts), its ID token sent on every call.
 * A 401 from any call signs out; a 403 does not (the server's message is shown instead).
 */
export function makeAuth(config: ConsoleConfig): ConsoleAuth {
  if (config.signIn === 'oidc') return makeOidcAuth(config);
  return { authProvider: makeLocalAuthProvider(config.apiBase), token: currentToken };
}

function makeLocalAuthProvider(apiBase: string): AuthProvider {
  return {
    async login(params: LocalSignIn) {
      const response = await fetch(`${apiBase}/local/ops-token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ operator: params.operator, roles: params.roles }),
      });
      let body: unknown = undefined;
      try {
        body = await response.json();
      } catch {
        // not JSON: reported below by status
      }
      const token = (body as { token?: unknown } | undefined)?.token;
      if (!response.ok || typeof token !== 'string') {
        const error = (body as { error?: { message?: string }; message?: string } | undefined);
        throw new Error(error?.error?.message ?? error?.message ?? `HTTP ${response.status}`);
      }
      sessionStorage.setItem(TOKEN, token);
      sessionStorage.setItem(OPERATOR, params.operator);
      sessionStorage.setItem(ROLES_KEY, JSON.stringify(params.roles));
    },
    async logout() {
      forget();
    },
    async checkAuth() {
      if (!signedIn()) {
        forget();
        throw new Error('ra.auth.auth_check_error');
      }
    },
    async checkError(error: { status?: number }) {
      if (error?.status === 401) {
        forget();
        throw new Error('ra.notification.logged_out');
      }
      // 403 and the rest: the operator stays signed in; the error's own message is shown.
    },
    async getIdentity() {
      const operator = sessionStorage.getItem(OPERATOR) ?? '';
      const roles = JSON.parse(sessionStorage.getItem(ROLES_KEY) ?? '[]') as string[];
      return { id: operator, fullName: roles.length ? `${operator} (${roles.join(', ')})` : operator };
    },
    async getPermissions() {
      return JSON.parse(sessionStorage.getItem(ROLES_KEY) ?? '[]') as Role[];
    },
  };
}
