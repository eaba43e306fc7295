import { HttpError } from 'react-admin';
import { sentence, type Translate } from './sentence';

export { sentence, type Translate } from './sentence';

/**
 * An HTTP error of the API as react-admin's HttpError: its message is {@link sentence} in the
 * console's language now (shown as text by react-admin's notifications and by the action
 * dialogs); `status` drives the authProvider's checkError (401 signs out) and `body` keeps the
 * answer, the server's message with it.
 */
export function toHttpError(status: number, body: unknown, translate: Translate): HttpError {
  return new HttpError(sentence(status, body, translate), status, body);
}
