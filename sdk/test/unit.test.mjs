// Unit tests, no server: error decoding, the retry decision table and the retry loop over a fake
// fetch, user messages, ETag keeping, the shared packet view (no token, kept per URL) and its
// polling.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  MESSAGES,
  RedPacketsError,
  backoffDelayMs,
  createRedPacketsClient,
  decodeError,
  draftProblem,
  formatDigits,
  isBehind,
  limitMessage,
  isRetryable,
  messageFor,
  parseRetryAfter,
  watchSharedPacket,
} from '../dist/index.js';
import { UUID } from './helpers.mjs';

const json = (status, body, headers = {}) =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

const PACKET_ID = 'a'.repeat(32);

/** A JWT-shaped token for `sub` (not signed: the fake servers do not look). */
const jwt = (sub, exp = 1) => `h.${Buffer.from(JSON.stringify({ sub, exp })).toString('base64url')}.s`;

/** A client over a fake fetch answering from `answers` in turn; records requests and sleeps. */
function fake(answers, options = {}) {
  const requests = [];
  const sleeps = [];
  let tokens = 0;
  const client = createRedPacketsClient({
    baseUrl: 'http://api.test',
    token: () => jwt('alice', ++tokens),
    fetch: async (request) => {
      requests.push(request);
      const next = answers[Math.min(requests.length, answers.length) - 1];
      return typeof next === 'function' ? next(request) : next.clone();
    },
    sleep: async (ms) => void sleeps.push(ms),
    ...options,
  });
  return { client, requests, sleeps, tokens: () => tokens };
}

describe('error decoding', () => {
  test("the app's shape: code, field, opens_at, Retry-After", () => {
    const error = decodeError(
      429,
      { error: { code: 'limit_exceeded', message: 'over the daily limit', field: 'max_sends_per_day' } },
      new Headers({ 'retry-after': '7' }),
    );
    assert.ok(error instanceof RedPacketsError && error instanceof Error);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'limit_exceeded');
    assert.equal(error.field, 'max_sends_per_day');
    assert.equal(error.message, 'over the daily limit');
    assert.equal(error.retryAfterSeconds, 7);
    assert.equal(error.fromGateway, false);

    const early = decodeError(409, { error: { code: 'not_open_yet', message: 'm', opens_at: '2027-02-16T12:00:00.000Z' } });
    assert.equal(early.opensAt, '2027-02-16T12:00:00.000Z');
    assert.equal(early.field, undefined);
  });

  test("API Gateway's shape: a gateway_* code by status", () => {
    const table = [
      [401, 'Unauthorized', 'gateway_unauthorized'],
      [403, 'Forbidden', 'gateway_forbidden'],
      [404, 'Not Found', 'gateway_not_found'],
      [429, 'Too Many Requests', 'gateway_throttled'],
      [503, 'Service Unavailable', 'gateway_unavailable'],
      [500, 'Internal Server Error', 'gateway_error'],
      [504, 'Endpoint request timed out', 'gateway_error'],
    ];
    for (const [status, message, code] of table) {
      const error = decodeError(status, { message });
      assert.deepEqual([error.status, error.code, error.fromGateway, error.message], [status, code, true, message]);
    }
  });

  test('by the shape, not the status: a 404 of each', () => {
    assert.equal(decodeError(404, { error: { code: 'not_found', message: 'no such packet' } }).code, 'not_found');
    assert.equal(decodeError(404, { message: 'Not Found' }).code, 'gateway_not_found');
  });

  test('neither shape: unexpected_response', () => {
    for (const body of ['<html>bad gateway</html>', undefined, { what: 1 }, [1]]) {
      const error = decodeError(502, body);
      assert.equal(error.code, 'unexpected_response');
      assert.equal(error.fromGateway, false);
    }
  });

  test('Retry-After: seconds or a date', () => {
    assert.equal(parseRetryAfter('3'), 3);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter('soon'), undefined);
    assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 0), 10);
  });
});

describe('retry decision table', () => {
  const table = [
    [503, { error: { code: 'unavailable', message: 'm' } }, true],
    [503, { message: 'Service Unavailable' }, true],
    [429, { message: 'Too Many Requests' }, true],
    [429, { error: { code: 'limit_exceeded', message: 'm', field: 'max_sends_per_day' } }, false],
    [429, { error: { code: 'too_many_attempts', message: 'm' } }, false],
    [429, { error: { code: 'grab_rate_limited', message: 'm' } }, false],
    [401, { message: 'Unauthorized' }, false],
    [403, { error: { code: 'not_eligible', message: 'm' } }, false],
    [409, { error: { code: 'sold_out', message: 'm' } }, false],
    [400, { error: { code: 'invalid_request', message: 'm' } }, false],
    [500, { message: 'Internal Server Error' }, false],
    [503, '<html>', false],
    [200, { packet_id: 'x' }, false],
  ];
  for (const [status, body, want] of table) {
    test(`${status} ${JSON.stringify(body)} → ${want ? 'retry' : 'no retry'}`, () => {
      assert.equal(isRetryable(status, body), want);
    });
  }

  test('backoff: full jitter under the doubling cap, never below Retry-After', () => {
    assert.equal(backoffDelayMs(0, undefined, {}, () => 1), 500);
    assert.equal(backoffDelayMs(2, undefined, {}, () => 1), 2000);
    assert.equal(backoffDelayMs(10, undefined, {}, () => 1), 8000);
    assert.equal(backoffDelayMs(3, undefined, {}, () => 0), 0);
    assert.equal(backoffDelayMs(0, 3, {}, () => 1), 3000);
    assert.equal(backoffDelayMs(5, 1, { baseDelayMs: 100, maxDelayMs: 400 }, () => 0.5), 1000);
  });
});

describe('the retry loop (fake fetch)', () => {
  const unavailable = json(503, { error: { code: 'unavailable', message: 'redis down' } }, { 'retry-after': '2' });

  test("the app's 503 is retried after Retry-After, then gives the answer", async () => {
    const { client, requests, sleeps } = fake([unavailable, json(200, { balance_cents: 5, items: [], next_cursor: null })]);
    const { data } = await client.wallet();
    assert.equal(data.balance_cents, 5);
    assert.equal(requests.length, 2);
    assert.deepEqual(sleeps, [2000]);
  });

  test('3 retries at most, then the last answer as the error', async () => {
    const { client, requests, sleeps } = fake([unavailable]);
    await assert.rejects(client.grab(PACKET_ID), (error) => {
      assert.equal(error.code, 'unavailable');
      assert.equal(error.retryAfterSeconds, 2);
      assert.equal(error.userMessage('en'), 'Network busy, please try again');
      return true;
    });
    assert.equal(requests.length, 4);
    assert.equal(sleeps.length, 3);
  });

  test('no retry when Retry-After does not fit in the budget', async () => {
    const { client, requests } = fake([unavailable], { retry: { budgetMs: 1500 } });
    await assert.rejects(client.wallet(), { code: 'unavailable' });
    assert.equal(requests.length, 1);
  });

  test("API Gateway's 429 is retried; the same Idempotency-Key and body on every try", async () => {
    const packet = { packet_id: PACKET_ID, status: 'open' };
    const { client, requests } = fake([
      json(429, { message: 'Too Many Requests' }),
      json(503, { message: 'Service Unavailable' }),
      json(201, packet),
    ]);
    const sent = await client.send({ total_cents: 100, count: 1 });
    assert.equal(sent.packet_id, PACKET_ID);
    assert.equal(requests.length, 3);
    const keys = requests.map((r) => r.headers.get('idempotency-key'));
    assert.match(keys[0], UUID);
    assert.deepEqual(new Set(keys), new Set([keys[0]]));
    const bodies = await Promise.all(requests.map((r) => r.text()));
    assert.deepEqual(new Set(bodies), new Set(['{"total_cents":100,"count":1}']));
  });

  test('a new key per send, the given one when given', async () => {
    const { client, requests } = fake([json(201, { packet_id: PACKET_ID })]);
    await client.send({ total_cents: 100, count: 1 });
    await client.send({ total_cents: 100, count: 1 });
    await client.withdraw({ amount_cents: 1, destination: 'card-1' }, { idempotencyKey: 'draft-7' });
    const keys = requests.map((r) => r.headers.get('idempotency-key'));
    assert.notEqual(keys[0], keys[1]);
    assert.equal(keys[2], 'draft-7');
  });

  test('never retried: limit_exceeded, too_many_attempts, 4xx, a 500', async () => {
    const answers = [
      json(429, { error: { code: 'limit_exceeded', message: 'm', field: 'max_sent_cents_per_day' } }),
      json(429, { error: { code: 'too_many_attempts', message: 'm' } }),
      json(409, { error: { code: 'sold_out', message: 'm' } }),
      json(500, { message: 'Internal Server Error' }),
    ];
    for (const answer of answers) {
      const { client, requests } = fake([answer]);
      await assert.rejects(client.grab(PACKET_ID), RedPacketsError);
      assert.equal(requests.length, 1, `${answer.status} was retried`);
    }
  });

  test('network errors are retried, then thrown as network_error', async () => {
    const { client, requests } = fake([
      () => {
        throw new TypeError('fetch failed');
      },
    ]);
    await assert.rejects(client.packet(PACKET_ID), (error) => {
      assert.equal(error.code, 'network_error');
      assert.equal(error.status, 0);
      assert.equal(error.userMessage(), '网络连接失败，请检查网络后重试');
      return true;
    });
    assert.equal(requests.length, 4);
  });

  test("the client's own timeout aborts the try and is retried", async () => {
    const hang = (request) =>
      new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))));
    const { client, requests } = fake([hang, json(200, { items: [], next_cursor: null })], {
      timeouts: { readMs: 50 },
    });
    const { data } = await client.history('received');
    assert.deepEqual(data.items, []);
    assert.equal(requests.length, 2);
    assert.ok(requests[0].signal.aborted);

    const slow = fake([hang], { timeouts: { readMs: 30 }, retry: { retries: 1 } });
    await assert.rejects(slow.client.wallet(), { code: 'timeout', status: 0 });
    assert.equal(slow.requests.length, 2);

    const deaf = fake([() => new Promise(() => {})], { timeouts: { writeMs: 30 }, retry: { retries: 0 } });
    await assert.rejects(deaf.client.cancel(PACKET_ID), { code: 'timeout' }, 'a fetch that ignores the signal');
  });

  test("API Gateway's 401: token() asked again and the call resent once, no more", async () => {
    const { client, requests, tokens } = fake([json(401, { message: 'Unauthorized' })]);
    await assert.rejects(client.wallet(), { code: 'gateway_unauthorized', fromGateway: true });
    assert.deepEqual(
      requests.map((r) => r.headers.get('authorization')),
      [`Bearer ${jwt('alice', 1)}`, `Bearer ${jwt('alice', 2)}`],
    );
    assert.equal(tokens(), 2);
  });

  test('a grab sends the passphrase and the Membership-Ticket header only when given', async () => {
    const { client, requests } = fake([json(200, { packet_id: PACKET_ID, amount_cents: 1 })]);
    await client.grab(PACKET_ID);
    await client.grab(PACKET_ID, { passphrase: '恭喜发财', membershipTicket: 'p.s' });
    assert.equal(requests[0].headers.get('membership-ticket'), null);
    assert.equal(await requests[0].text(), '');
    assert.equal(requests[1].headers.get('membership-ticket'), 'p.s');
    assert.deepEqual(JSON.parse(await requests[1].text()), { passphrase: '恭喜发财' });
    assert.equal(new URL(requests[1].url).pathname, `/packets/${PACKET_ID}/grab`);
  });
});

describe('ETags (fake server)', () => {
  /** Answers 304 when If-None-Match is the body's tag; the body is `state.body`. */
  function server(state) {
    return (request) => {
      const etag = `"${createHash('md5').update(JSON.stringify(state.body)).digest('hex')}"`;
      if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers: { etag } });
      return json(200, state.body, { etag });
    };
  }

  test('If-None-Match sent back; a 304 gives the kept body; a change gives a fresh 200', async () => {
    const state = { body: { balance_cents: 1, items: [], next_cursor: null } };
    const { client, requests } = fake([server(state)]);
    const first = await client.wallet();
    assert.equal(first.notModified, false);
    assert.ok(first.etag);
    const second = await client.wallet();
    assert.equal(requests[1].headers.get('if-none-match'), first.etag);
    assert.deepEqual([second.notModified, second.etag, second.data], [true, first.etag, first.data]);
    state.body = { balance_cents: 2, items: [], next_cursor: null };
    const third = await client.wallet();
    assert.equal(third.notModified, false);
    assert.notEqual(third.etag, first.etag);
    assert.equal(third.data.balance_cents, 2);
  });

  test('kept per URL and per user', async () => {
    const state = { body: { items: [], next_cursor: null } };
    let user = 'alice';
    const requests = [];
    const client = createRedPacketsClient({
      baseUrl: 'http://api.test',
      token: () => jwt(user),
      fetch: async (request) => (requests.push(request), server(state)(request)),
    });
    await client.history('sent');
    await client.history('received');
    assert.equal(requests[1].headers.get('if-none-match'), null, 'another URL');
    user = 'bob';
    await client.history('sent');
    assert.equal(requests[2].headers.get('if-none-match'), null, 'another user');
    user = 'alice';
    assert.equal((await client.history('sent')).notModified, true);
    client.clearCache();
    assert.equal((await client.history('sent')).notModified, false);
  });
});

describe('the shared packet view (fake server)', () => {
  const OPEN = 'public, max-age=2';
  const FINAL = 'public, max-age=31536000, immutable';
  const shared = (over = {}) => ({ packet_id: PACKET_ID, status: 'open', settled: false, grab_count: 0, grabs: [], ...over });
  /** Answers `state.body` with its tag and `state.cacheControl`; 304 when If-None-Match is the tag. */
  function server(state) {
    return (request) => {
      const etag = `"${createHash('md5').update(JSON.stringify(state.body)).digest('hex')}"`;
      const headers = { etag, 'cache-control': state.cacheControl ?? OPEN };
      if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
      return json(200, state.body, headers);
    };
  }
  /** A client whose token is `user.name`'s, over `server(state)`; records requests. */
  function clientOver(state, options = {}) {
    const requests = [];
    const user = { name: 'alice' };
    let tokens = 0;
    const client = createRedPacketsClient({
      baseUrl: 'http://api.test',
      token: () => (tokens++, jwt(user.name)),
      fetch: async (request) => (requests.push(request), server(state)(request)),
      ...options,
    });
    return { client, requests, user, tokens: () => tokens };
  }

  test('sent with no Authorization header (and no token asked for), to sharedBaseUrl', async () => {
    const { client, requests, tokens } = clientOver({ body: shared() }, { sharedBaseUrl: 'https://edge.test/' });
    const { data } = await client.sharedPacket(PACKET_ID, { grabsFrom: 3 });
    assert.equal(data.packet_id, PACKET_ID);
    assert.equal(requests.length, 1);
    assert.equal(requests[0].headers.get('authorization'), null);
    assert.equal(tokens(), 0, 'token() not called');
    assert.equal(requests[0].method, 'GET');
    assert.equal(requests[0].url, `https://edge.test/packets/${PACKET_ID}/shared?grabs_from=3`);

    await client.packet(PACKET_ID);
    assert.equal(requests[1].url, `http://api.test/packets/${PACKET_ID}`, "the caller's view: baseUrl");
    assert.equal(requests[1].headers.get('authorization'), `Bearer ${jwt('alice')}`);

    const local = clientOver({ body: shared() });
    await local.client.sharedPacket(PACKET_ID);
    assert.equal(local.requests[0].url, `http://api.test/packets/${PACKET_ID}/shared`, 'sharedBaseUrl defaults to baseUrl');
  });

  test('If-None-Match sent on the second call; the 304 gives the kept body; a change a fresh 200', async () => {
    const state = { body: shared() };
    const { client, requests } = clientOver(state);
    const first = await client.sharedPacket(PACKET_ID);
    assert.equal(first.notModified, false);
    assert.match(first.etag, /^"[0-9a-f]{32}"$/);
    assert.equal(requests[0].headers.get('if-none-match'), null);

    const second = await client.sharedPacket(PACKET_ID);
    assert.equal(requests.length, 2);
    assert.equal(requests[1].headers.get('if-none-match'), first.etag);
    assert.deepEqual([second.notModified, second.etag, second.data], [true, first.etag, first.data]);

    state.body = shared({ grab_count: 1, grabs: [{ user: 'bob', amount_cents: 5 }] });
    const third = await client.sharedPacket(PACKET_ID);
    assert.equal(third.notModified, false);
    assert.notEqual(third.etag, first.etag);
    assert.equal(third.data.grab_count, 1);
  });

  test('kept per URL alone: another user sends the same If-None-Match; own views stay per user', async () => {
    const state = { body: shared() };
    const { client, requests, user } = clientOver(state);
    const alices = await client.sharedPacket(PACKET_ID);
    await client.packet(PACKET_ID);
    user.name = 'bob';
    const bobs = await client.sharedPacket(PACKET_ID);
    assert.equal(requests[2].headers.get('if-none-match'), alices.etag, "bob polls with alice's tag");
    assert.equal(bobs.notModified, true);
    assert.deepEqual(bobs.data, alices.data);
    await client.packet(PACKET_ID);
    assert.equal(requests[3].headers.get('if-none-match'), null, "bob's own view is not alice's");
    await client.sharedPacket(PACKET_ID, { grabsFrom: 2 });
    assert.equal(requests[4].headers.get('if-none-match'), null, 'another URL');

    // the shared key is not the anonymous own one: a view read with no token is not a shared one
    const { cacheKey } = await import('../dist/etags.js');
    const request = new Request(`http://api.test/packets/${PACKET_ID}/shared`);
    assert.equal(cacheKey('shared', request), `shared ${request.url}`);
    assert.equal(cacheKey('shared', new Request(request.url, { headers: { authorization: `Bearer ${jwt('bob')}` } })), `shared ${request.url}`);
    assert.notEqual(cacheKey('own', request), cacheKey('shared', request));
    assert.equal(cacheKey('own', new Request(request.url, { headers: { authorization: `Bearer ${jwt('bob')}` } })), `sub:bob ${request.url}`);

    client.clearCache();
    assert.equal((await client.sharedPacket(PACKET_ID)).notModified, false, 'clearCache forgets shared views too');
  });

  test("a settled view (immutable) is kept and not asked for again", async () => {
    const state = { body: shared({ status: 'finished', settled: true }), cacheControl: FINAL };
    const { client, requests } = clientOver(state);
    const first = await client.sharedPacket(PACKET_ID);
    assert.equal(first.notModified, false);
    const second = await client.sharedPacket(PACKET_ID);
    assert.equal(requests.length, 1, 'no second request');
    assert.deepEqual([second.notModified, second.etag, second.data], [true, first.etag, first.data]);

    // an open view (max-age=2) is asked for every time
    const open = clientOver({ body: shared() });
    await open.client.sharedPacket(PACKET_ID);
    await open.client.sharedPacket(PACKET_ID);
    assert.equal(open.requests.length, 2);
  });

  test('watchSharedPacket: polls one at a time, gives changes only, skips while paused, stops once settled', async () => {
    const state = { body: shared() };
    const { client, requests } = clientOver(state);
    const views = [];
    let paused = false;
    let settledWith;
    const settled = new Promise((resolve) => {
      const watch = watchSharedPacket(client, PACKET_ID, {
        intervalMs: 5,
        paused: () => paused,
        onView: (view) => {
          views.push(view);
          const polls = requests.length;
          if (polls === 1) {
            // a change on the next poll, but only after a pause
            paused = true;
            setTimeout(() => {
              assert.equal(requests.length, polls, 'no poll while paused');
              state.body = shared({ grab_count: 1 });
              paused = false;
            }, 40);
          } else if (views.length === 2) {
            state.body = shared({ grab_count: 1, status: 'finished', settled: true });
            state.cacheControl = FINAL;
          }
        },
        onSettled: (view) => resolve([watch, view]),
      });
    });
    const [watch, last] = await settled;
    settledWith = last;
    assert.equal(watch.stopped, true);
    assert.deepEqual(
      views.map((v) => [v.grab_count, v.settled]),
      [[0, false], [1, false], [1, true]],
      'each view once, 304s not given',
    );
    assert.equal(settledWith.settled, true);
    const polls = requests.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(requests.length, polls, 'no poll after settled');
    assert.ok(requests.slice(1).every((r) => r.headers.get('if-none-match')), 'every poll after the first conditional');
  });

  test('watchSharedPacket: refresh polls at once, even paused; stop stops; a failed poll is reported and retried', async () => {
    const state = { body: shared() };
    let fail = 1;
    const requests = [];
    const client = createRedPacketsClient({
      baseUrl: 'http://api.test',
      token: () => jwt('alice'),
      retry: { retries: 0 },
      fetch: async (request) => {
        requests.push(request);
        if (fail-- > 0) return json(404, { error: { code: 'not_found', message: 'm' } });
        return server(state)(request);
      },
    });
    const errors = [];
    const views = [];
    const watch = watchSharedPacket(client, PACKET_ID, {
      intervalMs: 60_000,
      paused: () => true,
      onView: (view) => views.push(view),
      onError: (error) => errors.push(error.code),
    });
    await watch.refresh();
    assert.deepEqual(errors, ['not_found']);
    await watch.refresh();
    assert.equal(views.length, 1);
    assert.equal(requests.length, 2, 'the timer (60 s, paused) asked for nothing');
    watch.stop();
    await watch.refresh();
    assert.equal(requests.length, 2, 'nothing after stop');
    assert.equal(watch.stopped, true);
  });

  test('isBehind: an open or unsettled view never replaces a closed or settled one', () => {
    const view = (status, settled) => ({ packet_id: PACKET_ID, status, settled });
    assert.equal(isBehind(view('open', false), view('cancelled', false)), true);
    assert.equal(isBehind(view('cancelled', false), view('cancelled', true)), true);
    assert.equal(isBehind(view('open', false), view('open', false)), false);
    assert.equal(isBehind(view('finished', false), view('open', false)), false);
    assert.equal(isBehind(view('finished', true), view('finished', false)), false);
    assert.equal(isBehind({ ...view('open', false), packet_id: 'b'.repeat(32) }, view('cancelled', true)), false);
  });
});

describe('messages', () => {
  test('a sentence in both languages for every code openapi.yaml lists', () => {
    const appCodes = [
      'invalid_request', 'unauthorized', 'insufficient_funds', 'forbidden', 'not_eligible', 'wrong_passphrase',
      'not_found', 'sold_out', 'not_open', 'not_open_yet', 'expired', 'cancelled', 'payload_too_large',
      'idempotency_key_reused', 'too_many_attempts', 'grab_rate_limited', 'account_held', 'limit_exceeded',
      'unavailable', 'internal',
    ];
    for (const code of appCodes) {
      assert.ok(MESSAGES[code], code);
      assert.match(messageFor(code, 'zh-CN'), /[\u4e00-\u9fff]/, code);
      assert.match(messageFor(code, 'en'), /^[\x20-\x7e’]+$/, code);
    }
  });

  test('examples, Chinese by default', () => {
    assert.equal(messageFor('sold_out'), '手慢了，红包派完了');
    assert.equal(messageFor('sold_out', 'en'), 'Too slow: this packet is all gone');
    assert.match(messageFor('not_eligible', 'en'), /not for you.*member of its chat/);
  });

  test('a generic fallback for an unknown code', () => {
    assert.equal(messageFor('some_new_code'), '出了点问题，请稍后再试');
    assert.equal(messageFor('some_new_code', 'en'), 'Something went wrong, please try again later');
    assert.equal(messageFor('toString'), '出了点问题，请稍后再试');
  });

  test("an error's userMessage follows the client's locale", async () => {
    const { client } = fake([json(409, { error: { code: 'sold_out', message: 'm' } })], { locale: 'en' });
    await assert.rejects(client.grab(PACKET_ID), (error) => {
      assert.equal(error.userMessage(), 'Too slow: this packet is all gone');
      assert.equal(error.userMessage('zh-CN'), '手慢了，红包派完了');
      return true;
    });
  });
});

describe('the send limits', () => {
  const limits = {
    max_total_cents: 20000,
    max_count: 100,
    min_share_cents: 1,
    max_greeting_chars: 64,
    max_passphrase_chars: 32,
    max_recipients: 500,
    min_expires_in_seconds: 60,
    max_expires_in_seconds: 86400,
    default_expires_in_seconds: 86400,
    max_opens_ahead_seconds: 604800,
    max_sends_per_day: 200,
    max_sent_cents_per_day: 2000000,
    currency: { code: 'CNY', exponent: 2 },
  };

  test('a draft is checked against each limit, the first crossed named with its field', () => {
    assert.equal(draftProblem({ total_cents: 20000, count: 100, greeting: '福'.repeat(64) }, limits), undefined);
    assert.deepEqual(draftProblem({ total_cents: 20000, count: 101 }, limits), { limit: 'max_count', field: 'count' });
    assert.deepEqual(draftProblem({ total_cents: 999900, count: 10 }, limits), { limit: 'max_total_cents', field: 'total_cents' });
    assert.deepEqual(draftProblem({ total_cents: 5, count: 10 }, limits), { limit: 'min_share_cents', field: 'count' });
    assert.deepEqual(draftProblem({ total_cents: 100, count: 1, greeting: '福'.repeat(65) }, limits), {
      limit: 'max_greeting_chars',
      field: 'greeting',
    });
    const crowd = Array.from({ length: 501 }, (_, n) => `u${n}`);
    assert.deepEqual(draftProblem({ total_cents: 1000, count: 1, recipients: crowd }, limits), { limit: 'max_recipients', field: 'recipients' });
  });

  test('each limit has its sentence in both languages, with its value', () => {
    assert.equal(limitMessage('max_total_cents', limits), '单个红包金额不可超过200.00元');
    assert.equal(limitMessage('max_total_cents', limits, 'en'), 'A packet may hold at most 200.00 CNY');
    assert.equal(limitMessage('max_count', limits), '红包个数不可超过100个');
    assert.match(limitMessage('min_share_cents', limits), /^每人至少0\.01元/);
    assert.equal(limitMessage('max_greeting_chars', limits, 'en'), 'The greeting may be at most 64 characters');
    for (const limit of ['max_total_cents', 'max_count', 'min_share_cents', 'max_greeting_chars', 'max_recipients']) {
      for (const locale of ['zh-CN', 'en']) assert.ok(limitMessage(limit, limits, locale).length > 5, `${limit} ${locale}`);
    }
    const yen = { ...limits, max_total_cents: 30000, currency: { code: 'JPY', exponent: 0 } };
    assert.equal(limitMessage('max_total_cents', yen), '单个红包金额不可超过30000 JPY');
    assert.equal(formatDigits(5, { exponent: 2 }), '0.05');
    assert.equal(formatDigits(-123456, { exponent: 3 }), '-123.456');
  });
});
