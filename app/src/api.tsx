// The API, through red-packets-sdk (../sdk): one client for the app, its token from the session,
// its locale the user's; packets' shared views read from config.json's sharedUrl. Types are the
// SDK's answers.
import { createRedPacketsClient, RedPacketsError, type RedPacketsClient } from 'red-packets-sdk';
import { createContext, useCallback, useContext, useMemo, type ReactNode } from 'react';
import type { AppConfig } from './config';
import { useI18n } from './i18n';
import { useSession } from './session';

export type Client = RedPacketsClient;
export type {
  GrabRecord,
  GrabResponse,
  HistoryItem,
  HistoryPage,
  Movement,
  PacketView,
  SendLimits,
  SendRequest,
  SharedPacketView,
  WalletPage,
  Withdrawal,
} from 'red-packets-sdk';
export {
  draftProblem,
  isBehind,
  limitMessage,
  messageFor,
  newIdempotencyKey,
  RedPacketsError,
  watchSharedPacket,
} from 'red-packets-sdk';

const Context = createContext<Client | null>(null);

export function ApiProvider({ config, children }: { config: AppConfig; children: ReactNode }) {
  const { token, state } = useSession();
  const { locale } = useI18n();
  const user = state.status === 'signed-in' ? state.user : '';
  // a client per user: another user (or none) starts with no kept ETags and bodies
  const client = useMemo(
    () => createRedPacketsClient({ baseUrl: config.apiUrl, sharedBaseUrl: config.sharedUrl, token, locale }),
    [config.apiUrl, config.sharedUrl, token, locale, user],
  );
  return <Context.Provider value={client}>{children}</Context.Provider>;
}

export function useClient(): Client {
  const value = useContext(Context);
  if (!value) throw new Error('useClient outside ApiProvider');
  return value;
}

/** True for an answer that says the token is not good (sign in again). */
export function isSignedOut(error: unknown): boolean {
  return error instanceof RedPacketsError && error.status === 401;
}

/**
 * The sentence to show the user for a failed call (the SDK's, by the error's code); a 401 signs
 * the user out first (the sign-in page comes back).
 */
export function useErrorText(): (error: unknown) => string {
  const { locale, t } = useI18n();
  const { signOut, mode } = useSession();
  return useCallback(
    (error: unknown) => {
      if (isSignedOut(error) && mode === 'local') signOut();
      if (error instanceof RedPacketsError) return error.userMessage(locale);
      return t.networkBusy;
    },
    [locale, t, signOut, mode],
  );
}
