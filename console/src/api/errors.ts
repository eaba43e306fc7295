import { HttpError } from 'react-admin';

/** The app's error shape: `{"error": {"code", "message", "field"?}}`. */
type AppError = { error: { code: string; message: string; field?: string } };
/** API Gateway's own answers (401, 403, 404, 429, 5xx): `{"message": "..."}`. */
type GatewayMessage = { message: string };

function isAppError(body: unknown): body is AppError {
  const error = (body as AppError | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

function isGatewayMessage(body: unknown): body is GatewayMessage {
  return typeof (body as GatewayMessage | null)?.message === 'string';
}

/**
 * An HTTP error of the API as react-admin's HttpError: its message is the server's own
 * (`code: message (field)`), shown as text by react-admin's notifications; `status` drives the
 * authProvider's checkError (401 signs out) and `body` keeps the answer.
 */
export function toHttpError(status: number, body: unknown): HttpError {
  let message: string;
  if (isAppError(body)) {
    const { code, message: text, field } = body.error;
    message = `${code}: ${text}${field ? ` (${field})` : ''}`;
  } else if (isGatewayMessage(body)) {
    message = `${status} ${body.message}`;
  } else if (typeof body === 'string' && body.trim() !== '') {
    message = `${status} ${body.trim().slice(0, 200)}`;
  } else {
    message = `HTTP ${status}`;
  }
  return new HttpError(message, status, body);
}
