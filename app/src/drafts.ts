// One Idempotency-Key per request the user means (a send, a withdrawal), kept with the request's
// body in sessionStorage: tapping again after a failure sends the same key with the same body
// (docs/CLIENTS.md, Idempotency); a changed body gets a new key, a success forgets it.
import { newIdempotencyKey } from './api';

/**
 * The Idempotency-Key of `body` (the request as JSON), the draft kept under `slot`: the stored
 * draft's key when its body is the same, else a new one, stored with the body.
 */
export function idempotencyKeyFor(slot: string, body: string): string {
  try {
    const held = JSON.parse(sessionStorage.getItem(slot) ?? 'null') as { body: string; key: string } | null;
    if (held && held.body === body && typeof held.key === 'string') return held.key;
  } catch {
    // a draft of an older build: a new key
  }
  const key = newIdempotencyKey();
  sessionStorage.setItem(slot, JSON.stringify({ body, key }));
  return key;
}

/** Forgets the draft kept under `slot` once its request succeeded: the next one gets a new key. */
export function forgetDraft(slot: string): void {
  sessionStorage.removeItem(slot);
}
