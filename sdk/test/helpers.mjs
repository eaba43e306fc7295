// What the tests against the local API share: tokens, top-ups, fresh users, a proxy on 127.0.0.1.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const sdk = dirname(dirname(fileURLToPath(import.meta.url)));

/** The local API's base URL (env API_URL), without a trailing slash; undefined when unset. */
export const API_URL = process.env.API_URL?.replace(/\/+$/, '') || undefined;

/**
 * Where packets' shared views are read (env SHARED_URL, the stack's SharedViewsUrl in AWS), without
 * a trailing slash; API_URL when unset (`make run` serves them on the API's own base URL).
 */
export const SHARED_URL = process.env.SHARED_URL?.replace(/\/+$/, '') || API_URL;

/** Why the tests against the API are skipped, or false. */
export const NO_API = API_URL ? false : 'API_URL is not set: start the local API and export API_URL (see sdk/README.md)';

/** The local binary (env LOCAL_BIN, else the repository's target/debug/local). */
export const LOCAL_BIN = process.env.LOCAL_BIN || join(sdk, '../target/debug/local');

/** A user of this run only, so that histories and daily limits start empty. */
export function freshUser(name) {
  return `sdk-${name}-${randomBytes(4).toString('hex')}`;
}

/** An app token for `user`: `POST /local/app-token`, else `$LOCAL_BIN token <user>`. */
export async function appToken(user) {
  try {
    const answer = await fetch(`${API_URL}/local/app-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user }),
    });
    if (answer.ok) {
      const { token } = await answer.json();
      if (typeof token === 'string' && token) return token;
    }
  } catch {
    // no such route yet: the binary below
  }
  if (!existsSync(LOCAL_BIN)) throw new Error(`no /local/app-token route and no LOCAL_BIN at ${LOCAL_BIN}`);
  return execFileSync(LOCAL_BIN, ['token', user], { encoding: 'utf8' }).trim();
}

/** Credits `user`'s wallet as the payments system would (`$LOCAL_BIN topup`; needs the stack's env). */
export function topup(user, cents = 50_000) {
  execFileSync(LOCAL_BIN, ['topup', user, String(cents)], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Tops `user` up unless the deployment keeps no wallets (FUNDS=none: the wallet is 404). */
export async function fund(client, user) {
  try {
    const { data } = await client.wallet({ limit: 1 });
    if (data.balance_cents < 10_000) topup(user);
  } catch (error) {
    if (error?.code !== 'not_found') throw error;
  }
}

/** A ticket from `POST /local/membership-ticket`, or undefined when the route is not there (404). */
export async function membershipTicket(chatId, user) {
  const answer = await fetch(`${API_URL}/local/membership-ticket`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: chatId, user }),
  });
  if (answer.status === 404) return undefined;
  if (!answer.ok) throw new Error(`POST /local/membership-ticket: ${answer.status} ${await answer.text()}`);
  return (await answer.json()).ticket;
}

/**
 * A tiny HTTP proxy on 127.0.0.1: `answer(request, n)` (n counts from 1) either returns
 * `{status, headers, body}` to answer itself, or undefined to forward to API_URL. Every request
 * is recorded in `seen` ({method, url, headers, at}). With `etags`, it adds to the API's GET 200s
 * the ETag openapi.yaml describes ("<32 hex digits>" of the bytes) and answers a matching
 * If-None-Match with 304, for an API that does not (yet).
 */
export async function startProxy(answer = () => undefined, { etags = false } = {}) {
  const seen = [];
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    seen.push({ method: req.method, url: req.url, headers: req.headers, at: performance.now() });
    try {
      const own = await answer(req, seen.length);
      if (own) {
        res.writeHead(own.status, { 'content-type': 'application/json', ...own.headers });
        res.end(typeof own.body === 'string' ? own.body : JSON.stringify(own.body));
        return;
      }
      const headers = { ...req.headers };
      for (const name of ['host', 'connection', 'content-length']) delete headers[name];
      const upstream = await fetch(`${API_URL}${req.url}`, {
        method: req.method,
        headers,
        body: body.length ? body : undefined,
      });
      const bytes = Buffer.from(await upstream.arrayBuffer());
      const out = {};
      upstream.headers.forEach((value, name) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
      });
      if (etags && req.method === 'GET' && upstream.status === 200) {
        out.etag = `"${createHash('md5').update(bytes).digest('hex')}"`;
        out['cache-control'] = 'private, no-cache';
        if (req.headers['if-none-match'] === out.etag) {
          res.writeHead(304, { etag: out.etag, 'cache-control': out['cache-control'] });
          res.end();
          return;
        }
      }
      res.writeHead(upstream.status, out);
      res.end(bytes);
    } catch (error) {
      res.writeHead(599);
      res.end(String(error));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** UUID v4, as the client makes its keys. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
