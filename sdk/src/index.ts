/**
 * The red packets API for apps (docs/CLIENTS.md built in): typed calls over the generated
 * client, an Idempotency-Key per send and withdrawal, retries of what may be retried, per-try
 * timeouts, ETag polling (a packet's shared view polled with no token, kept per URL), and one
 * error type with a sentence for users per code.
 * @packageDocumentation
 */
import createClient from 'openapi-fetch';
import type { Locale } from './codes.js';
import { decodeError } from './errors.js';
import { etagCache } from './etags.js';
import type { components, paths } from './schema.js';
import { DEFAULTS, retryingFetch, type RetryOptions, type TimeoutOptions } from './transport.js';

export type { AppErrorCode, ClientErrorCode, ErrorCode, GatewayErrorCode, Locale } from './codes.js';
export { RedPacketsError, decodeError, parseRetryAfter } from './errors.js';
export { FALLBACK_MESSAGE, MESSAGES, messageFor } from './messages.js';
export { draftProblem, limitMessage, type DraftProblem } from './limits.js';
export { formatDigits } from './money.js';
export { DEFAULTS, backoffDelayMs, isRetryable, type RetryOptions, type TimeoutOptions } from './transport.js';
export type { components, paths } from './schema.js';
export { isBehind, watchSharedPacket, type SharedPacketWatch, type WatchOptions } from './watch.js';

type Schemas = components['schemas'];
/** A packet to send (`POST /packets`). */
export type SendRequest = Schemas['SendRequest'];
/** A packet as its caller sees it (`GET /packets/{id}`): the shared view and the caller's own fields. */
export type PacketView = Schemas['PacketView'];
/** What every viewer of a packet sees (`GET /packets/{id}/shared`): no `eligible`, no `recipients`. */
export type SharedPacketView = Schemas['SharedPacketView'];
/** One grab of a packet's view. */
export type GrabRecord = Schemas['GrabRecord'];
/** The caller's share of a packet. */
export type GrabResponse = Schemas['GrabResponse'];
/** A page of the caller's sent or received packets, newest first. */
export type HistoryPage = Schemas['HistoryPage'];
/** One packet of a history page. */
export type HistoryItem = Schemas['HistoryItem'];
/** The caller's balance and a page of its movements, newest first. */
export type WalletPage = Schemas['WalletPage'];
/** One movement of a wallet page. */
export type Movement = Schemas['Movement'];
/** A withdrawal to ask for (`POST /me/withdrawals`). */
export type WithdrawalRequest = Schemas['WithdrawalRequest'];
/** A withdrawal as it is now (the answer's `WithdrawalReceipt`). */
export type Withdrawal = Schemas['WithdrawalReceipt'];
/** The currency every amount of an answer is in (integer minor units). */
export type Currency = Schemas['Currency'];
/** What a send may be on this stack (`GET /me/limits`). */
export type SendLimits = Schemas['SendLimits'];

/** How to reach the API and how patiently. */
export interface ClientOptions {
  /** The stack's `ApiUrl` (no stage in the path); locally `http://127.0.0.1:3000`. */
  baseUrl: string;
  /**
   * Where packets' shared views are read (`GET /packets/{id}/shared`): the stack's
   * `SharedViewsUrl` (CloudFront) in AWS. Default `baseUrl` (as `make run` serves them).
   */
  sharedBaseUrl?: string;
  /** The app user's bearer token (JWT), asked for on every request: return a fresh one before `exp`. */
  token: () => string | Promise<string>;
  /** The language of {@link RedPacketsError.userMessage} by default: `zh-CN` (the default) or `en`. */
  locale?: Locale;
  /** The fetch to send with (default `globalThis.fetch`); it is called with one `Request`. */
  fetch?: typeof fetch;
  /** Retry count, budget and backoff (defaults: docs/CLIENTS.md). */
  retry?: RetryOptions;
  /** Per-try timeouts (defaults: 5 s reads and grabs, 12 s send, cancel and withdraw). */
  timeouts?: TimeoutOptions;
  /** How to wait between tries (default `setTimeout`); for tests. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A polled GET's answer: `notModified` when `data` is the kept body, because the server answered
 * 304, or because the kept answer was `immutable` (a finalised packet's shared view) and was not
 * asked for again.
 */
export interface Polled<T> {
  data: T;
  /** The answer's ETag, when the server sent one (the client sends it back by itself). */
  etag?: string;
  notModified: boolean;
}

/** The calls. Each one throws a {@link RedPacketsError} on failure. */
export interface RedPacketsClient {
  /**
   * Sends a packet. The Idempotency-Key is `options.idempotencyKey` or one made for this call,
   * the same on every retry of it. To survive an app restart, make the key when the user
   * confirms, store it with the draft, and pass it again.
   */
  send(draft: SendRequest, options?: { idempotencyKey?: string }): Promise<PacketView>;
  /**
   * Grabs the caller's share; a repeat answers the same share with `already_grabbed` true, so
   * it is retried like a read. `membershipTicket` (from the host app's chat server) goes in the
   * `Membership-Ticket` header, for packets sent `members_only`.
   */
  grab(packetId: string, options?: { passphrase?: string; membershipTicket?: string }): Promise<GrabResponse>;
  /** Takes back what is left of the caller's own packet (a repeat answers 200 again). */
  cancel(packetId: string): Promise<PacketView>;
  /**
   * A packet as the caller sees it, with its own fields (`eligible`, `recipients`); polled with
   * its ETag; `grabsFrom` pages its grabs (`next_grabs_from`). Read it once per page, then poll
   * {@link RedPacketsClient.sharedPacket}.
   */
  packet(packetId: string, options?: { grabsFrom?: number }): Promise<Polled<PacketView>>;
  /**
   * What every viewer of a packet sees, from `sharedBaseUrl`, sent with no token; polled with its
   * ETag, the answer kept per URL alone (it is the same for every user). Once the packet is
   * settled its answer never changes (`Cache-Control: immutable`): later calls give the kept body
   * without a request. {@link watchSharedPacket} polls it until settled.
   */
  sharedPacket(packetId: string, options?: { grabsFrom?: number }): Promise<Polled<SharedPacketView>>;
  /** The caller's sent or received packets, newest first, polled with their ETag. */
  history(role: 'sent' | 'received', options?: { limit?: number; cursor?: string }): Promise<Polled<HistoryPage>>;
  /** The caller's balance and movements, newest first, polled with their ETag. */
  wallet(options?: { limit?: number; cursor?: string }): Promise<Polled<WalletPage>>;
  /** Asks for a withdrawal; the Idempotency-Key works as for {@link RedPacketsClient.send}. */
  withdraw(request: WithdrawalRequest, options?: { idempotencyKey?: string }): Promise<Withdrawal>;
  /**
   * What a send may be on this stack ({@link SendLimits}), polled with its ETag: read it once a
   * session, state it on the send form, and check a draft with {@link draftProblem} before sending.
   */
  limits(): Promise<Polled<SendLimits>>;
  /** Forgets every kept ETag and body, shared views' too (call it on sign-out). */
  clearCache(): void;
}

/** A new Idempotency-Key: a UUID (crypto.randomUUID where there is one, e.g. not on plain-http pages). */
export function newIdempotencyKey(): string {
  if (typeof globalThis.crypto?.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Makes a client. See {@link ClientOptions} for the defaults. */
export function createRedPacketsClient(options: ClientOptions): RedPacketsClient {
  const locale = options.locale ?? 'zh-CN';
  const fetchOne = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const transport = (timeoutMs: number, budgetMs: number) =>
    retryingFetch({
      fetch: (request) => fetchOne(request),
      timeoutMs,
      budgetMs: options.retry?.budgetMs ?? budgetMs,
      retries: options.retry?.retries ?? DEFAULTS.retries,
      baseDelayMs: options.retry?.baseDelayMs ?? DEFAULTS.baseDelayMs,
      maxDelayMs: options.retry?.maxDelayMs ?? DEFAULTS.maxDelayMs,
      sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      locale,
    });
  const reads = transport(options.timeouts?.readMs ?? DEFAULTS.readMs, DEFAULTS.readBudgetMs);
  const writes = transport(options.timeouts?.writeMs ?? DEFAULTS.writeMs, DEFAULTS.writeBudgetMs);

  const api = createClient<paths>({ baseUrl: options.baseUrl, fetch: reads });
  const cache = etagCache();
  api.use(
    {
      async onRequest({ request }) {
        request.headers.set('Authorization', `Bearer ${await options.token()}`);
        return undefined;
      },
    },
    cache.middleware,
  );
  // The shared views: sent with no token (the route takes none; its answer is the same for every
  // caller), kept per URL alone.
  const sharedApi = createClient<paths>({ baseUrl: options.sharedBaseUrl ?? options.baseUrl, fetch: reads });
  sharedApi.use(cache.shared);

  /** Runs a call; throws its error decoded. On API Gateway's 401: token() once more, resent once. */
  async function call<R extends { data?: unknown; error?: unknown; response: Response }>(
    run: () => Promise<R>,
  ): Promise<{ data: NonNullable<R['data']>; response: Response }> {
    for (let resent = false; ; resent = true) {
      const { data, error, response } = await run();
      if (response.ok && error === undefined) return { data: data as NonNullable<R['data']>, response };
      const failure = decodeError(response.status, error, response.headers, locale);
      if (failure.code !== 'gateway_unauthorized' || resent) throw failure;
    }
  }

  const polled = <T>({ data, response }: { data: T; response: Response }): Polled<T> => {
    const etag = response.headers.get('etag');
    return { data, ...(etag ? { etag } : {}), notModified: cache.replayed.has(response) };
  };

  return {
    async send(draft, { idempotencyKey = newIdempotencyKey() } = {}) {
      const { data } = await call(() =>
        api.POST('/packets', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body: draft, fetch: writes }),
      );
      return data;
    },
    async grab(packetId, { passphrase, membershipTicket } = {}) {
      const { data } = await call(() =>
        api.POST('/packets/{packet_id}/grab', {
          params: {
            path: { packet_id: packetId },
            ...(membershipTicket === undefined ? {} : { header: { 'Membership-Ticket': membershipTicket } }),
          },
          ...(passphrase === undefined ? {} : { body: { passphrase } }),
        }),
      );
      return data;
    },
    async cancel(packetId) {
      const { data } = await call(() =>
        api.POST('/packets/{packet_id}/cancel', { params: { path: { packet_id: packetId } }, fetch: writes }),
      );
      return data;
    },
    async packet(packetId, { grabsFrom } = {}) {
      return polled(
        await call(() =>
          api.GET('/packets/{packet_id}', {
            params: { path: { packet_id: packetId }, ...(grabsFrom === undefined ? {} : { query: { grabs_from: grabsFrom } }) },
          }),
        ),
      );
    },
    async sharedPacket(packetId, { grabsFrom } = {}) {
      return polled(
        await call(() =>
          sharedApi.GET('/packets/{packet_id}/shared', {
            params: { path: { packet_id: packetId }, ...(grabsFrom === undefined ? {} : { query: { grabs_from: grabsFrom } }) },
          }),
        ),
      );
    },
    async history(role, { limit, cursor } = {}) {
      return polled(await call(() => api.GET('/me/packets', { params: { query: { role, limit, cursor } } })));
    },
    async wallet({ limit, cursor } = {}) {
      return polled(await call(() => api.GET('/me/wallet', { params: { query: { limit, cursor } } })));
    },
    async withdraw(request, { idempotencyKey = newIdempotencyKey() } = {}) {
      const { data } = await call(() =>
        api.POST('/me/withdrawals', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body: request, fetch: writes }),
      );
      return data;
    },
    async limits() {
      return polled(await call(() => api.GET('/me/limits')));
    },
    clearCache: () => cache.clear(),
  };
}
