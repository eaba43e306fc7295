import { UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import type { AuthProvider } from 'react-admin';
import type { ConsoleAuth } from './consoleAuth';
import type { OidcConfig } from './config';
import { claimsOf, unexpired } from './jwt';
import { signOutUrl } from './signOut';

/**
 * `signIn: "oidc"`: the operators' identity provider (an OIDC issuer: the company's SSO, or the
 * stack's Cognito pool, whose discovery document names its hosted UI's authorization and token
 * endpoints), through oidc-client-ts: the authorization code flow with PKCE, no client secret.
 *
 * - login(): to the provider (signinRedirect); it answers at the redirect URI, the console's base
 *   `/console/` (the URL its client allows), which `routeSignInAnswer` hands to react-admin's
 *   `/auth-callback` page; there handleCallback() exchanges the code (signinRedirectCallback) and
 *   react-admin goes on to the page the operator was headed for, the answer's query gone.
 * - The user (its tokens) is kept in sessionStorage (this tab). The bearer of every call of the API
 *   is the ID token: API Gateway's JWT authorizer checks its `aud` (this client) and reads the
 *   roles from its `rolesClaim` (cognito:groups by default). Expired, it is renewed with the
 *   refresh token if the provider gave one; else the operator signs in again.
 * - logout(): the user forgotten, then on to the provider to end its session too, back to
 *   `/console/` (signOut.ts: Cognito's `/logout`, or another provider's `end_session_endpoint`).
 *   A 401 forgets the user without leaving for the provider.
 */
export function makeOidcAuth(config: OidcConfig): ConsoleAuth {
  const base = consoleBase();
  const manager = new UserManager({
    authority: config.authority,
    client_id: config.clientId,
    redirect_uri: base,
    response_type: 'code',
    scope: 'openid email profile',
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    // Renewed on demand (currentUser), by a refresh token only: never through a hidden iframe.
    automaticSilentRenew: false,
    loadUserInfo: false,
  });

  let renewing: Promise<User | null> | undefined;
  /** The signed-in user with an unexpired ID token, renewed if need be and possible; else null. */
  async function currentUser(): Promise<User | null> {
    const user = await manager.getUser();
    if (!user?.id_token) return null;
    if (unexpired(user.id_token)) return user;
    renewing ??= (async () => {
      try {
        if (user.refresh_token) {
          const renewed = await manager.signinSilent();
          if (renewed?.id_token && unexpired(renewed.id_token)) return renewed;
        }
      } catch {
        // the provider refused: signed out
      }
      await manager.removeUser();
      return null;
    })().finally(() => {
      renewing = undefined;
    });
    return renewing;
  }

  async function signedIn(): Promise<{ user: User; claims: Record<string, unknown> }> {
    const user = await currentUser();
    if (!user) throw new Error('ra.auth.auth_check_error');
    return { user, claims: claimsOf(user.id_token ?? '') ?? user.profile };
  }

  // One exchange per answer of the provider (its code is good once).
  let answer: { url: string; user: Promise<User> } | undefined;

  const authProvider: AuthProvider = {
    async login(params?: { next?: string }) {
      // Leaves the page; resolves only if the browser comes back to it from its cache.
      await manager.signinRedirect({ state: { next: internalPath(params?.next) } });
    },
    async handleCallback() {
      const url = window.location.href;
      if (answer?.url !== url) answer = { url, user: manager.signinRedirectCallback(url) };
      const user = await answer.user;
      return { redirectTo: internalPath((user.state as { next?: unknown } | undefined)?.next) ?? '/' };
    },
    async logout() {
      const user = await manager.getUser();
      if (!user) return; // signed out already (a 401, an expiry): the sign-in page
      let signOutAt: string | undefined;
      try {
        const metadata = await manager.metadataService.getMetadata();
        signOutAt = signOutUrl(metadata, { clientId: config.clientId, returnTo: base, idToken: user.id_token });
      } catch {
        // the provider's metadata unreachable: signed out here only
      }
      await manager.removeUser();
      if (!signOutAt) return;
      window.location.assign(signOutAt);
      return false; // leaving the page: react-admin goes nowhere
    },
    async checkAuth() {
      if (!(await currentUser())) throw new Error('ra.auth.auth_check_error');
    },
    async checkError(error: { status?: number }) {
      if (error?.status === 401) {
        await manager.removeUser();
        throw new Error('ra.notification.logged_out');
      }
      // 403 and the rest: the operator stays signed in; the error's own message is shown.
    },
    async getIdentity() {
      const { claims } = await signedIn();
      const sub = typeof claims.sub === 'string' ? claims.sub : '';
      const name = typeof claims.email === 'string' && claims.email ? claims.email : sub;
      const roles = rolesOf(claims[config.rolesClaim]);
      return { id: sub, fullName: roles.length ? `${name} (${roles.join(', ')})` : name };
    },
    async getPermissions() {
      const user = await currentUser();
      return user ? rolesOf(claimsOf(user.id_token ?? '')?.[config.rolesClaim]) : [];
    },
  };
  return { authProvider, token: async () => (await currentUser())?.id_token ?? null };
}

/** The console's own URL (its router's base): the redirect URI and the one after sign-out. */
export function consoleBase(): string {
  return `${window.location.origin}${import.meta.env.BASE_URL}`;
}

/**
 * The provider answers a sign-in at the console's base (`/console/?code=…&state=…`, or
 * `?error=…&state=…`); react-admin handles such answers on its `/auth-callback` page. Run before
 * the router starts: moves the answer there (the history entry replaced).
 */
export function routeSignInAnswer(): void {
  const { pathname, search, hash } = window.location;
  const base = import.meta.env.BASE_URL;
  const params = new URLSearchParams(search);
  const atBase = pathname === base || `${pathname}/` === base;
  if (atBase && params.has('state') && (params.has('code') || params.has('error'))) {
    window.history.replaceState(window.history.state, '', `${base}auth-callback${search}${hash}`);
  }
}

/** The roles of a claim: an array of strings, or a string of them separated by spaces or commas. */
export function rolesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((role): role is string => typeof role === 'string' && role !== '');
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean);
  return [];
}

/** A path of the console to go on to after sign-in (its router's, e.g. `/holds?x=1`): nothing else. */
function internalPath(value: unknown): string | undefined {
  return typeof value === 'string' && /^\/(?![/\\])/.test(value) ? value : undefined;
}
