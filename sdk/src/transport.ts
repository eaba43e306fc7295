import type { Locale } from './codes.js';
import { RedPacketsError, isAppError, isGatewayMessage, parseBody, parseRetryAfter } from './errors.js';

/** Retry settings (docs/CLIENTS.md, "Timeouts" and "Retries and backoff"). */
export interface RetryOptions {
  /** Retries after the first try (default 3). */
  retries?: number;
  /** The whole call's budget, first try included (default 20 s for reads and grabs, 40 s for writes). */
  budgetMs?: number;
  /** The first backoff's ceiling (default 500 ms); it doubles on each retry. */
  baseDelayMs?: number;
  /** The ceiling of any backoff (default 8 s); `Retry-After` may ask for longer. */
  maxDelayMs?: number;
}

/** Per-try timeouts, connect and read together. */
export interface TimeoutOptions {
  /** Views, history, wallet and grabs (default 5 s). */
  readMs?: number;
  /** Send, cancel and withdraw (default 12 s: past the functions' 10 s, so API Gateway answers first). */
  writeMs?: number;
}

/** The defaults of docs/CLIENTS.md. */
export const DEFAULTS = {
  retries: 3,
  readBudgetMs: 20_000,
  writeBudgetMs: 40_000,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  readMs: 5_000,
  writeMs: 12_000,
} as const;

/**
 * Whether an answer may be retried as it is: the app's 503 `unavailable`, or API Gateway's own
 * 503 or 429 (`{"message": …}`, its throttling). Nothing else: not the app's 429s
 * (`limit_exceeded`, `too_many_attempts`, `grab_rate_limited`), no other 4xx, no 500.
 * (A network error or the client's own timeout is retried too: there is no answer to look at.)
 */
export function isRetryable(status: number, body: unknown): boolean {
  if (isAppError(body)) return status === 503 && body.error.code === 'unavailable';
  return (status === 503 || status === 429) && isGatewayMessage(body);
}

/**
 * How long to wait before retry number `attempt + 1`: full jitter under
 * `min(maxDelayMs, baseDelayMs * 2^attempt)`, and never less than `Retry-After`.
 */
export function backoffDelayMs(
  attempt: number,
  retryAfterSeconds: number | undefined,
  options: { baseDelayMs?: number; maxDelayMs?: number } = {},
  random: () => number = Math.random,
): number {
  const base = options.baseDelayMs ?? DEFAULTS.baseDelayMs;
  const cap = options.maxDelayMs ?? DEFAULTS.maxDelayMs;
  const jittered = random() * Math.min(cap, base * 2 ** attempt);
  return Math.max(jittered, (retryAfterSeconds ?? 0) * 1000);
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** What a retrying fetch needs. */
export interface TransportSettings {
  fetch: (request: Request) => Promise<Response>;
  timeoutMs: number;
  retries: number;
  budgetMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
  sleep: (ms: number) => Promise<void>;
  locale: Locale;
}

/**
 * A `fetch` for openapi-fetch that tries a request until it gets an answer it should not retry,
 * within the retry count and budget. Each try has its own timeout (an AbortController), which
 * covers reading the body too. Every try sends the same method, URL, headers (the
 * Idempotency-Key among them) and body. When the budget runs out it gives the last answer back,
 * or throws a {@link RedPacketsError} `network_error` / `timeout` when there was none.
 */
export function retryingFetch(settings: TransportSettings): (request: Request) => Promise<Response> {
  return async (request) => {
    // Read once, sent on every try. (By method, not `request.body`: some browsers lack that.)
    const bytes = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
    const body = bytes && bytes.byteLength > 0 ? bytes : undefined;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), settings.timeoutMs);
      let answer: Response | undefined;
      let failure: RedPacketsError | undefined;
      // Rejects at the timeout even when a custom fetch ignores the signal.
      const timedOut = new Promise<never>((_, reject) =>
        controller.signal.addEventListener('abort', () => reject(new DOMException('timed out', 'TimeoutError'))),
      );
      timedOut.catch(() => undefined);
      try {
        const response = await Promise.race([
          settings.fetch(
            new Request(request.url, { method: request.method, headers: request.headers, body, signal: controller.signal }),
          ),
          timedOut,
        ]);
        // Inside the timeout too: a stalled body is a timeout.
        const received = await Promise.race([response.arrayBuffer(), timedOut]);
        answer = new Response(NULL_BODY_STATUSES.has(response.status) ? null : received, {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      } catch (cause) {
        const ownTimeout = controller.signal.aborted;
        failure = new RedPacketsError({
          status: 0,
          code: ownTimeout ? 'timeout' : 'network_error',
          message: ownTimeout
            ? `no answer within ${settings.timeoutMs} ms: ${request.method} ${request.url}`
            : `no answer: ${request.method} ${request.url}: ${String(cause)}`,
          locale: settings.locale,
          cause,
        });
      } finally {
        clearTimeout(timer);
      }

      let retryAfterSeconds: number | undefined;
      if (answer) {
        const parsed = answer.status >= 400 ? parseBody(await answer.clone().text()) : undefined;
        if (!isRetryable(answer.status, parsed)) return answer;
        retryAfterSeconds = parseRetryAfter(answer.headers.get('retry-after'));
      }
      const delay = backoffDelayMs(attempt, retryAfterSeconds, settings);
      if (attempt >= settings.retries || Date.now() - started + delay > settings.budgetMs) {
        if (answer) return answer;
        throw failure;
      }
      await settings.sleep(delay);
    }
  };
}
