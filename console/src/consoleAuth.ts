import type { AuthProvider } from 'react-admin';

/**
 * The sign-in of a stage, whichever kind config.json names (`local` in authProvider.ts, `oidc` in
 * oidcAuth.ts): react-admin's authProvider and the bearer token every call of the API carries
 * (null when signed out).
 */
export type ConsoleAuth = {
  authProvider: AuthProvider;
  token: () => string | null | Promise<string | null>;
};
