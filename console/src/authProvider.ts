import type { AuthProvider } from 'react-admin';
import type { ConsoleConfig } from './config';

/** The operators' roles (openapi.yaml's `operators` security scheme). */
export const ROLES = ['support', 'finance', 'risk', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const TOKEN = 'ops.token';
const OPERATOR = 'ops.operator';
const ROLES_KEY = 'ops.roles';

/** The signed-in operator's token, kept for this tab only (sessionStorage). */
export function currentToken(): string | null {
  return sessionStorage.getItem(TOKEN);
}

function forget() {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(OPERATOR);
  sessionStorage.removeItem(ROLES_KEY);
}

/** The `exp` claim of a JWT (seconds), if it can be read; the server verifies the rest. */
function expiry(token: string): number | undefined {
  try {
    const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(payload)) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp : undefined;
  } catch {
    return undefined;
  }
}

function signedIn(): boolean {
  const token = currentToken();
  if (!token) return false;
  const exp = expiry(token);
  return exp === undefined || exp * 1000 > Date.now();
}

export type LocalSignIn = { operator: string; roles: Role[] };

/**
 * Sign-in and its checks. `local`: the operator's name and roles go to `POST {apiBase}/local/ops-token`
 * (the local API's stand-in for the operators' identity provider), the token it answers is kept in
 * sessionStorage and sent on every call. `oidc` is the switch for AWS, not implemented yet.
 * A 401 from any call signs out; a 403 does not (the server's message is shown instead).
 */
export function makeAuthProvider(config: ConsoleConfig): AuthProvider {
  return {
    async login(params: LocalSignIn) {
      if (config.signIn !== 'local') {
        throw new Error('console.login.oidc_not_implemented');
      }
      const response = await fetch(`${config.apiBase}/local/ops-token`, {
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
