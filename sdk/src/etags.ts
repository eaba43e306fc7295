import type { Middleware } from 'openapi-fetch';

interface Kept {
  etag: string;
  body: string;
  /** The answer's Cache-Control, when it had one. */
  cacheControl: string | null;
  /** That Cache-Control said `immutable`: the answer never changes, so it is not asked for again. */
  immutable: boolean;
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

/** The key of a request's kept answer: per user and URL (`own`), or per URL alone (`shared`). */
export function cacheKey(kind: 'own' | 'shared', request: Request): string {
  return kind === 'shared' ? `shared ${request.url}` : `${tokenUser(request.headers.get('authorization'))} ${request.url}`;
}

const isImmutable = (cacheControl: string | null) => /(^|[\s,])immutable($|[\s,])/i.test(cacheControl ?? '');

/**
 * Conditional GETs: keeps the last answer's ETag and body (at most `capacity` of them, the least
 * recently used dropped first); sends `If-None-Match` with it, and turns a 304 into a 200 carrying
 * the kept body. `middleware` keeps answers per user (the token's `sub`) and URL, for the caller's
 * own answers; `shared` keeps them per URL alone, for answers that are the same for everyone
 * (`GET /packets/{id}/shared`, sent with no token). An answer kept with `Cache-Control: immutable`
 * (a finalised packet's shared view) is given again without asking. `replayed` tells the kept
 * bodies apart.
 */
export function etagCache(capacity = 256): {
  middleware: Middleware;
  shared: Middleware;
  replayed: WeakSet<Response>;
  clear(): void;
} {
  const kept = new Map<string, Kept>();
  const sent = new Map<string, { key: string; entry: Kept | undefined }>();
  const replayed = new WeakSet<Response>();

  function replay(entry: Kept): Response {
    const answer = new Response(entry.body, {
      status: 200,
      headers: {
        'content-type': 'application/json',
        etag: entry.etag,
        ...(entry.cacheControl ? { 'cache-control': entry.cacheControl } : {}),
      },
    });
    replayed.add(answer);
    return answer;
  }

  const conditional = (kind: 'own' | 'shared'): Middleware => ({
    onRequest({ request, id }) {
      if (request.method !== 'GET') return undefined;
      const key = cacheKey(kind, request);
      const entry = kept.get(key);
      if (entry?.immutable) {
        remember(key, entry);
        return replay(entry);
      }
      sent.set(id, { key, entry });
      if (entry) request.headers.set('If-None-Match', entry.etag);
      return undefined;
    },
    async onResponse({ response, id }) {
      const asked = sent.get(id);
      if (!asked) return undefined;
      sent.delete(id);
      const cacheControl = response.headers.get('cache-control');
      if (response.status === 304 && asked.entry) {
        const entry: Kept = {
          etag: response.headers.get('etag') ?? asked.entry.etag,
          body: asked.entry.body,
          cacheControl: cacheControl ?? asked.entry.cacheControl,
          immutable: isImmutable(cacheControl) || asked.entry.immutable,
        };
        remember(asked.key, entry);
        return replay(entry);
      }
      const etag = response.headers.get('etag');
      if (response.status === 200 && etag) {
        remember(asked.key, { etag, body: await response.clone().text(), cacheControl, immutable: isImmutable(cacheControl) });
      }
      return undefined;
    },
    onError({ id }) {
      sent.delete(id);
      return undefined;
    },
  });

  function remember(key: string, entry: Kept): void {
    kept.delete(key);
    kept.set(key, entry);
    while (kept.size > capacity) kept.delete(kept.keys().next().value as string);
  }

  return { middleware: conditional('own'), shared: conditional('shared'), replayed, clear: () => kept.clear() };
}
