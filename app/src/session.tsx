// Who is signed in, their token and their chats' membership tickets.
//
// config.json's signIn:
//   "local"  the stand-in sign-in page (pages/SignIn.tsx): a user name and the chats they are in;
//            the token from POST <apiUrl>/local/app-token {"user"} → {"token"}, a ticket per chat
//            from POST <apiUrl>/local/membership-ticket {"chat_id","user"} → {"ticket"} (the
//            local API stands in for the host app's sign-in and its chat server). Both are kept
//            in sessionStorage (this tab only) and asked for again when they are about to expire.
//   "host"   the app runs inside the host app's web view, which provides
//              window.RedPacketsHost = {
//                token(): Promise<string>,                               // the user's JWT, fresh
//                membershipTicket(chatId): Promise<string | undefined>,  // undefined: not a member
//              }
//            before the page loads, or within 3 s of it (README.md). The user is the token's `sub`.
//            The latest token is kept in sessionStorage too.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import type { AppConfig } from './config';

export interface RedPacketsHost {
  token(): Promise<string>;
  membershipTicket(chatId: string): Promise<string | undefined>;
}

declare global {
  interface Window {
    RedPacketsHost?: RedPacketsHost;
  }
}

interface Stored {
  user: string;
  chats: string[];
  tickets: Record<string, string>;
}

const TOKEN_KEY = 'app.token';
const SESSION_KEY = 'app.session';
/** A token or ticket with less than this left is asked for again. */
const MARGIN_S = 60;
/** How long the app waits for the host app's window.RedPacketsHost. */
const HOST_WAIT_MS = 3_000;

function base64urlJson(part: string | undefined): Record<string, unknown> | undefined {
  if (!part) return undefined;
  try {
    const text = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A JWT's claims (unverified: the API verifies it). */
export function claimsOf(token: string): Record<string, unknown> | undefined {
  return base64urlJson(token.split('.')[1]);
}

/** True when a JWT or a membership ticket (`<payload>.<signature>`) expires within MARGIN_S. */
function expiring(exp: unknown): boolean {
  return typeof exp === 'number' && exp - Date.now() / 1000 < MARGIN_S;
}

function readStored(): Stored | undefined {
  try {
    const value = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as Stored | null;
    return value && typeof value.user === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

function writeStored(stored: Stored | undefined, token?: string) {
  if (stored) sessionStorage.setItem(SESSION_KEY, JSON.stringify(stored));
  else sessionStorage.removeItem(SESSION_KEY);
  if (token !== undefined) sessionStorage.setItem(TOKEN_KEY, token);
  if (!stored) sessionStorage.removeItem(TOKEN_KEY);
}

async function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { message?: string } } | undefined)?.error;
    throw new Error(error?.message ?? `HTTP ${response.status}`);
  }
  return (parsed ?? {}) as Record<string, unknown>;
}

export type SessionState =
  | { status: 'starting' }
  | { status: 'signed-out' }
  | { status: 'host-missing' }
  | { status: 'signed-in'; user: string; chats: string[] };

interface SessionApi {
  state: SessionState;
  mode: AppConfig['signIn'];
  /** The local sign-in: a token for `user` and a ticket for each of `chats`. */
  signIn(user: string, chats: string[]): Promise<void>;
  signOut(): void;
  /** The bearer token of every call (the SDK's `token`). */
  token(): Promise<string>;
  /** The caller's membership ticket for `chatId`, or undefined when they have none. */
  ticketFor(chatId: string): Promise<string | undefined>;
}

const Context = createContext<SessionApi | null>(null);

export function SessionProvider({ config, children }: { config: AppConfig; children: ReactNode }) {
  const [state, setState] = useState<SessionState>(() => {
    if (config.signIn === 'host') return { status: 'starting' };
    const stored = readStored();
    return stored && sessionStorage.getItem(TOKEN_KEY)
      ? { status: 'signed-in', user: stored.user, chats: stored.chats }
      : { status: 'signed-out' };
  });

  // host: the user is the host's token's sub. The host defines window.RedPacketsHost before the
  // page's scripts run, or within HOST_WAIT_MS of it (a web view that injects on page load).
  useEffect(() => {
    if (config.signIn !== 'host') return;
    let live = true;
    const started = Date.now();
    const attempt = () => {
      if (!live) return;
      const host = window.RedPacketsHost;
      if (!host) {
        if (Date.now() - started < HOST_WAIT_MS) setTimeout(attempt, 100);
        else setState({ status: 'host-missing' });
        return;
      }
      host
        .token()
        .then((token) => {
          const sub = claimsOf(token)?.sub;
          if (typeof sub !== 'string' || !sub) throw new Error('the host token has no sub');
          writeStored({ user: sub, chats: [], tickets: {} }, token);
          if (live) setState({ status: 'signed-in', user: sub, chats: [] });
        })
        .catch(() => live && setState({ status: 'host-missing' }));
    };
    attempt();
    return () => {
      live = false;
    };
  }, [config.signIn]);

  const localToken = useCallback(
    async (user: string) => {
      const answer = await postJson(`${config.apiUrl}/local/app-token`, { user });
      if (typeof answer.token !== 'string') throw new Error('no token in the answer');
      return answer.token;
    },
    [config.apiUrl],
  );

  const localTicket = useCallback(
    async (user: string, chat: string) => {
      const answer = await postJson(`${config.apiUrl}/local/membership-ticket`, { chat_id: chat, user });
      if (typeof answer.ticket !== 'string') throw new Error('no ticket in the answer');
      return answer.ticket;
    },
    [config.apiUrl],
  );

  const signIn = useCallback(
    async (user: string, chats: string[]) => {
      const token = await localToken(user);
      const tickets: Record<string, string> = {};
      for (const chat of chats) tickets[chat] = await localTicket(user, chat);
      writeStored({ user, chats, tickets }, token);
      setState({ status: 'signed-in', user, chats });
    },
    [localToken, localTicket],
  );

  const signOut = useCallback(() => {
    writeStored(undefined);
    setState(config.signIn === 'host' ? { status: 'host-missing' } : { status: 'signed-out' });
  }, [config.signIn]);

  const token = useCallback(async () => {
    if (config.signIn === 'host') {
      const fresh = await window.RedPacketsHost!.token();
      sessionStorage.setItem(TOKEN_KEY, fresh);
      return fresh;
    }
    const held = sessionStorage.getItem(TOKEN_KEY) ?? '';
    const stored = readStored();
    if (stored && (!held || expiring(claimsOf(held)?.exp))) {
      const fresh = await localToken(stored.user);
      sessionStorage.setItem(TOKEN_KEY, fresh);
      return fresh;
    }
    return held;
  }, [config.signIn, localToken]);

  const ticketFor = useCallback(
    async (chatId: string) => {
      if (config.signIn === 'host') return (await window.RedPacketsHost!.membershipTicket(chatId)) || undefined;
      const stored = readStored();
      if (!stored || !stored.chats.includes(chatId)) return undefined;
      const held = stored.tickets[chatId];
      if (held && !expiring(base64urlJson(held.split('.')[0])?.exp)) return held;
      const fresh = await localTicket(stored.user, chatId);
      writeStored({ ...stored, tickets: { ...stored.tickets, [chatId]: fresh } });
      return fresh;
    },
    [config.signIn, localTicket],
  );

  const value = useMemo<SessionApi>(
    () => ({ state, mode: config.signIn, signIn, signOut, token, ticketFor }),
    [state, config.signIn, signIn, signOut, token, ticketFor],
  );
  return <Context.Provider value={value}>{children}</Context.Provider>;
}

export function useSession(): SessionApi {
  const value = useContext(Context);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}

/** The signed-in user's name (the pages under RequireSession only). */
export function useUser(): string {
  const { state } = useSession();
  return state.status === 'signed-in' ? state.user : '';
}
