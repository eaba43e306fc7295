import type { ErrorCode, GatewayErrorCode, Locale } from './codes.js';
import { messageFor } from './messages.js';

/**
 * Every failure of a call: an answer of the app (`{"error": {…}}`), an answer of API Gateway
 * itself (`{"message": …}`, `fromGateway` true), or no answer at all (`status` 0: `network_error`
 * or `timeout`). Show users {@link RedPacketsError.userMessage}; `message` is for developers.
 */
export class RedPacketsError extends Error {
  /** The HTTP status; 0 when there was no answer. */
  readonly status: number;
  /** The app's code, a `gateway_*` code, or `network_error` / `timeout` / `unexpected_response`. */
  readonly code: ErrorCode | (string & {});
  /** The input at fault (`invalid_request`), or the daily limit passed (`limit_exceeded`). */
  readonly field?: string;
  /** The answer's `Retry-After`, in seconds, when it had one. */
  readonly retryAfterSeconds?: number;
  /** True for API Gateway's own answers (`{"message": …}`). */
  readonly fromGateway: boolean;
  /** `not_open_yet` only: when the packet opens (RFC 3339). */
  readonly opensAt?: string;
  /** The locale {@link RedPacketsError.userMessage} uses by default (the client's). */
  readonly locale: Locale;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    field?: string;
    retryAfterSeconds?: number;
    fromGateway?: boolean;
    opensAt?: string;
    locale?: Locale;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'RedPacketsError';
    this.status = init.status;
    this.code = init.code;
    if (init.field !== undefined) this.field = init.field;
    if (init.retryAfterSeconds !== undefined) this.retryAfterSeconds = init.retryAfterSeconds;
    this.fromGateway = init.fromGateway ?? false;
    if (init.opensAt !== undefined) this.opensAt = init.opensAt;
    this.locale = init.locale ?? 'zh-CN';
  }

  /** The sentence to show the user for this error's code (see {@link messageFor}). */
  userMessage(locale: Locale = this.locale): string {
    return messageFor(this.code, locale);
  }
}

const GATEWAY_CODES: Readonly<Record<number, GatewayErrorCode>> = {
  401: 'gateway_unauthorized',
  403: 'gateway_forbidden',
  404: 'gateway_not_found',
  429: 'gateway_throttled',
  503: 'gateway_unavailable',
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The app's error shape: `{"error": {"code": "…", "message": "…", …}}`. */
export function isAppError(body: unknown): body is { error: { code: string; message?: string; field?: string; opens_at?: string } } {
  return isObject(body) && isObject(body.error) && typeof body.error.code === 'string';
}

/** API Gateway's shape: `{"message": "…"}`, and no `error`. */
export function isGatewayMessage(body: unknown): body is { message: string } {
  return isObject(body) && typeof body.message === 'string' && !('error' in body);
}

/** `Retry-After` in seconds: whole seconds, or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value == null || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** A body's text as JSON, or the text itself when it is not JSON (undefined when empty). */
export function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * One {@link RedPacketsError} from a failed answer, whichever part of the system gave it: decoded
 * by the body's shape first, never by the status alone (401, 404, 429 and 503 come in both).
 */
export function decodeError(
  status: number,
  body: unknown,
  headers?: Headers | { get(name: string): string | null },
  locale?: Locale,
): RedPacketsError {
  const retryAfterSeconds = parseRetryAfter(headers?.get('retry-after'));
  const common = { status, locale, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) };
  if (isAppError(body)) {
    const { code, message, field, opens_at } = body.error;
    return new RedPacketsError({
      ...common,
      code,
      message: typeof message === 'string' ? message : code,
      ...(typeof field === 'string' ? { field } : {}),
      ...(typeof opens_at === 'string' ? { opensAt: opens_at } : {}),
    });
  }
  if (isGatewayMessage(body)) {
    return new RedPacketsError({
      ...common,
      code: GATEWAY_CODES[status] ?? 'gateway_error',
      message: body.message,
      fromGateway: true,
    });
  }
  const text = typeof body === 'string' ? body.slice(0, 200) : JSON.stringify(body ?? null);
  return new RedPacketsError({ ...common, code: 'unexpected_response', message: `HTTP ${status}: ${text}` });
}
