import type { components } from './schema.js';

/** The app's own error codes (`{"error": {"code": …}}`), as openapi.yaml lists them. */
export type AppErrorCode = components['schemas']['Error']['error']['code'];

/**
 * Codes this SDK gives API Gateway's own answers (`{"message": …}`), by status: 401, 403, 404,
 * 429 (throttling), 503, and any other status (`gateway_error`: a 500 is a function that failed).
 */
export type GatewayErrorCode =
  | 'gateway_unauthorized'
  | 'gateway_forbidden'
  | 'gateway_not_found'
  | 'gateway_throttled'
  | 'gateway_unavailable'
  | 'gateway_error';

/**
 * Codes of failures with no answer to decode: `network_error` (no answer at all), `timeout` (no
 * answer within the client's own timeout), `unexpected_response` (an answer in neither shape).
 */
export type ClientErrorCode = 'network_error' | 'timeout' | 'unexpected_response';

/** Every code a {@link RedPacketsError} may carry (a newer server may add app codes). */
export type ErrorCode = AppErrorCode | GatewayErrorCode | ClientErrorCode;

/** The languages of the user messages. */
export type Locale = 'zh-CN' | 'en';
