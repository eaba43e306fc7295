import type { Middleware } from 'openapi-fetch';

interface Kept {
  etag: string;
  body: string;
}

/** The user a bearer token is for (its JWT `sub`), else the token itself: the cache's first key. */
export function tokenUser(authorization: string | null): string {
  const token = (authorization ?? '').replace(/^Bearer\s+/i, '');
  const payload = token.split('.')[1];
  if (payload) {
    try {
      const base64 = payload.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(payload.length / 4) * 4, '=');
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      const sub: unknown = JSON.parse(new TextDecoder().decode(bytes)).sub;
      if (typeof sub === 'string') return `sub:${sub}`;
    } catch {
      // not a JWT: keyed by the token itself
    }
  }
  return `token:${token}`;
}

/**
 * Conditional GETs: keeps, per user and URL, the last answer's ETag and body (at most
 * `capacity` of them, the least recently used dropped first); sends `If-None-Match` with it, and
 * turns a 304 into a 200 carrying the kept body. `replayed` tells such answers apart.
 */
export function etagCache(capacity = 256): { middleware: Middleware; replayed: WeakSet<Response>; clear(): void } {
  const kept = new Map<string, Kept>();
  const sent = new Map<string, { key: string; entry: Kept | undefined }>();
  const replayed = new WeakSet<Response>();

  const middleware: Middleware = {
    onRequest({ request, id }) {
      if (request.method !== 'GET') return undefined;
      const key = `${tokenUser(request.headers.get('authorization'))} ${request.url}`;
      const entry = kept.get(key);
      sent.set(id, { key, entry });
      if (entry) request.headers.set('If-None-Match', entry.etag);
      return undefined;
    },
    async onResponse({ response, id }) {
      const asked = sent.get(id);
      if (!asked) return undefined;
      sent.delete(id);
      if (response.status === 304 && asked.entry) {
        const etag = response.headers.get('etag') ?? asked.entry.etag;
        remember(asked.key, { etag, body: asked.entry.body });
        const answer = new Response(asked.entry.body, {
          status: 200,
          headers: { 'content-type': 'application/json', etag },
        });
        replayed.add(answer);
        return answer;
      }
      const etag = response.headers.get('etag');
      if (response.status === 200 && etag) remember(asked.key, { etag, body: await response.clone().text() });
      return undefined;
    },
    onError({ id }) {
      sent.delete(id);
      return undefined;
    },
  };

  function remember(key: string, entry: Kept): void {
    kept.delete(key);
    kept.set(key, entry);
    while (kept.size > capacity) kept.delete(kept.keys().next().value as string);
  }

  return { middleware, replayed, clear: () => kept.clear() };
}
