// Against the local API (env API_URL; tokens from /local/app-token or $LOCAL_BIN token, money from
// $LOCAL_BIN topup), through the built dist. Each test's users are fresh: histories start empty.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createRedPacketsClient, draftProblem } from '../dist/index.js';
import { API_URL, NO_API, SHARED_URL, UUID, appToken, freshUser, fund, membershipTicket, startProxy } from './helpers.mjs';

/** A client for `user` on `baseUrl` (the API itself by default). */
async function clientFor(user, options = {}) {
  const token = await appToken(user);
  return createRedPacketsClient({ baseUrl: API_URL, token: () => token, ...options });
}

describe('against the local API', { skip: NO_API }, () => {
  let alice, aliceClient, bob, bobClient;
  before(async () => {
    alice = freshUser('alice');
    bob = freshUser('bob');
    aliceClient = await clientFor(alice);
    bobClient = await clientFor(bob);
    await fund(aliceClient, alice);
  });

  test('a send whose answer is dropped is retried under the same key and makes one packet', async () => {
    const keys = [];
    let dropped;
    const client = await clientFor(alice, {
      // The request reaches the server; its answer is read, then thrown away as a network error, once.
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key'));
        const response = await fetch(request);
        if (dropped === undefined) {
          dropped = { status: response.status, body: await response.json() };
          throw new TypeError('fetch failed (the test dropped the answer)');
        }
        return response;
      },
    });
    const packet = await client.send({ total_cents: 300, count: 3, greeting: '恭喜发财' });

    assert.equal(dropped.status, 201, 'the first try made the packet');
    assert.equal(keys.length, 2);
    assert.match(keys[0], UUID);
    assert.equal(keys[1], keys[0], 'the retry carried the same Idempotency-Key');
    assert.equal(packet.packet_id, dropped.body.packet_id, 'the retry answered the packet the first try made');

    const { data: sent } = await aliceClient.history('sent', { limit: 100 });
    assert.equal(sent.items.filter((item) => item.packet_id === packet.packet_id).length, 1);
    assert.equal(sent.items.length, 1, 'no second packet');
    const { data: wallet } = await aliceClient.wallet({ limit: 100 });
    const debits = wallet.items.filter((m) => m.kind === 'send' && m.packet_id === packet.packet_id);
    assert.equal(debits.length, 1, 'paid once');
  });

  test("the app's 503 with Retry-After: 1 is retried no sooner, and succeeds", async () => {
    const proxy = await startProxy((_request, n) =>
      n === 1
        ? { status: 503, headers: { 'retry-after': '1' }, body: { error: { code: 'unavailable', message: 'redis is unreachable' } } }
        : undefined,
    );
    try {
      const client = await clientFor(alice, { baseUrl: proxy.url });
      const packet = await client.send({ total_cents: 200, count: 2 });
      assert.match(packet.packet_id, /^[0-9a-f]{32}$/);
      assert.equal(proxy.seen.length, 2);
      const waited = proxy.seen[1].at - proxy.seen[0].at;
      assert.ok(waited >= 1000, `the retry came ${waited.toFixed(0)} ms after the 503`);
      assert.equal(proxy.seen[1].headers['idempotency-key'], proxy.seen[0].headers['idempotency-key']);
    } finally {
      await proxy.close();
    }
  });

  /**
   * Alice's client for polling `path`: on the API itself when it sends ETags, else through a proxy
   * adding them as openapi.yaml describes (so the client's side is tested either way), said so.
   */
  async function pollingClient(t, path) {
    const probe = await fetch(`${API_URL}${path}`, { headers: { authorization: `Bearer ${await appToken(alice)}` } });
    assert.equal(probe.status, 200);
    if (probe.headers.get('etag')) return { client: aliceClient, close: async () => {} };
    t.diagnostic(`the API sent no ETag on GET ${path} (openapi.yaml promises one): polled through a proxy that adds them`);
    const proxy = await startProxy(undefined, { etags: true });
    return { client: await clientFor(alice, { baseUrl: proxy.url }), close: proxy.close };
  }

  test('a packet view polled with its ETag: 304 while unchanged, a fresh 200 after a grab', async (t) => {
    const packet = await aliceClient.send({ total_cents: 500, count: 5 });
    const { client, close } = await pollingClient(t, `/packets/${packet.packet_id}`);
    try {
      const first = await client.packet(packet.packet_id);
      assert.equal(first.notModified, false);
      // An open packet's tag is its version's (docs/DESIGN.md, "Tags from versions").
      assert.match(first.etag, /^"v[0-9a-f]{32}"$/);
      const second = await client.packet(packet.packet_id);
      assert.equal(second.notModified, true);
      assert.equal(second.etag, first.etag);
      assert.deepEqual(second.data, first.data);

      const share = await bobClient.grab(packet.packet_id);
      assert.ok(share.amount_cents > 0);
      const third = await client.packet(packet.packet_id);
      assert.equal(third.notModified, false);
      assert.notEqual(third.etag, first.etag);
      assert.equal(third.data.remaining_count, first.data.remaining_count - 1);
      assert.ok(third.data.grabs.some((grab) => grab.user === bob));
    } finally {
      await close();
    }
  });

  /** A client reading shared views from SHARED_URL through a fetch that records each try's request and answer. */
  function recordingClient(user, token) {
    const seen = [];
    const client = createRedPacketsClient({
      baseUrl: API_URL,
      sharedBaseUrl: SHARED_URL,
      token: () => token,
      fetch: async (request) => {
        const response = await fetch(request);
        seen.push({
          url: request.url,
          authorization: request.headers.get('authorization'),
          ifNoneMatch: request.headers.get('if-none-match'),
          status: response.status,
          etag: response.headers.get('etag'),
          cacheControl: response.headers.get('cache-control') ?? '',
        });
        return response;
      },
    });
    return { client, seen, user };
  }

  /** Calls `probe` every 500 ms until it answers something truthy, for at most `ms`. */
  async function until(ms, what, probe) {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = await probe();
      if (found) return found;
      assert.ok(Date.now() < deadline, `${what}, within ${ms / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  const withoutOwnFields = ({ eligible: _eligible, recipients: _recipients, ...shared }) => shared;

  test("a packet's shared view: the caller's view once, then the shared one polled with no token, a 304, a grab seen", async () => {
    const carol = freshUser('carol');
    const recipients = [bob, carol].sort();
    const packet = await aliceClient.send({ total_cents: 600, count: 2, recipients });
    const path = `/packets/${packet.packet_id}`;

    // the caller's own view, read once: its own fields, private
    const own = await aliceClient.packet(packet.packet_id);
    assert.equal(typeof own.data.eligible, 'boolean');
    assert.deepEqual(own.data.recipients, recipients, "the sender's view names the recipients");
    const raw = await fetch(`${API_URL}${path}`, { headers: { authorization: `Bearer ${await appToken(alice)}` } });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('cache-control') ?? '', /private/);
    await raw.body?.cancel();

    // the shared view: no token, no own fields, an ETag, public
    const { client, seen } = recordingClient(alice, await appToken(alice));
    const first = await client.sharedPacket(packet.packet_id);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].url, `${SHARED_URL}${path}/shared`);
    assert.equal(seen[0].authorization, null, 'sent with no Authorization header');
    assert.equal(seen[0].status, 200);
    assert.equal(first.notModified, false);
    assert.ok(!('eligible' in first.data), 'no eligible');
    assert.ok(!('recipients' in first.data), 'no recipients');
    assert.match(first.etag ?? '', /^(W\/)?"[^"]+"$/);
    assert.equal(seen[0].etag, first.etag);
    assert.match(seen[0].cacheControl, /\bpublic\b/);
    assert.match(seen[0].cacheControl, /\bmax-age=2\b/, 'an open packet: kept 2 s');
    assert.equal(first.data.settled, false);
    assert.deepEqual(first.data, withoutOwnFields(own.data), "the caller's view less its own fields");

    // the same bytes for everyone: anonymous, and as bob
    for (const authorization of [undefined, `Bearer ${await appToken(bob)}`]) {
      const other = await fetch(`${SHARED_URL}${path}/shared`, { headers: authorization ? { authorization } : {} });
      assert.equal(other.status, 200);
      assert.equal(other.headers.get('etag'), first.etag);
      assert.deepEqual(await other.json(), first.data);
    }

    // polled again: If-None-Match, a 304 from the server, the kept body
    const second = await client.sharedPacket(packet.packet_id);
    assert.equal(seen.length, 2);
    assert.equal(seen[1].ifNoneMatch, first.etag);
    assert.equal(seen[1].status, 304, 'the server answered 304');
    assert.equal(seen[1].authorization, null);
    assert.equal(second.notModified, true);
    assert.equal(second.etag, first.etag);
    assert.deepEqual(second.data, first.data);

    // bob grabs: the shared view changes (an open packet's may be 2 s old at the edge)
    const share = await bobClient.grab(packet.packet_id);
    assert.ok(share.amount_cents > 0);
    const third = await until(10_000, 'the grab in the shared view', async () => {
      const answer = await client.sharedPacket(packet.packet_id);
      return answer.notModified ? undefined : answer;
    });
    assert.notEqual(third.etag, first.etag);
    assert.equal(third.data.grab_count, first.data.grab_count + 1);
    assert.equal(third.data.remaining_count, first.data.remaining_count - 1);
    assert.deepEqual(
      third.data.grabs.filter((grab) => grab.user === bob).map((grab) => grab.amount_cents),
      [share.amount_cents],
    );
    assert.ok(!('eligible' in third.data) && !('recipients' in third.data));
    assert.ok(seen.every((try_) => try_.authorization === null), 'no try carried a token');
  });

  test("a settled packet's shared view: immutable, a year at the edge, kept by the client without asking", async () => {
    const packet = await aliceClient.send({ total_cents: 100, count: 1 });
    await bobClient.grab(packet.packet_id);
    const { client, seen } = recordingClient(alice, await appToken(alice));
    // settle finalises it (locally every SETTLE_EVERY_SECONDS)
    const settled = await until(60_000, 'the packet settled', async () => {
      const answer = await client.sharedPacket(packet.packet_id);
      return answer.data.settled ? answer : undefined;
    });
    assert.equal(settled.data.status, 'finished');
    const last = seen.at(-1);
    assert.equal(last.authorization, null);
    assert.match(last.cacheControl, /\bpublic\b/);
    assert.match(last.cacheControl, /\bmax-age=31536000\b/);
    assert.match(last.cacheControl, /\bimmutable\b/);
    assert.equal(last.etag, settled.etag);

    const tries = seen.length;
    const again = await client.sharedPacket(packet.packet_id);
    assert.equal(seen.length, tries, 'not asked for again');
    assert.equal(again.notModified, true);
    assert.deepEqual(again.data, settled.data);

    // the server's 304 for the tag, with no token
    const conditional = await fetch(`${SHARED_URL}/packets/${packet.packet_id}/shared`, {
      headers: { 'if-none-match': settled.etag },
    });
    assert.equal(conditional.status, 304);
    assert.equal(await conditional.text(), '');
  });

  test("the stack's limits: stated, a 304 when asked again, and a draft over them refused by the server for the field the check names", async () => {
    const first = await aliceClient.limits();
    assert.equal(first.notModified, false);
    assert.ok(first.etag);
    const limits = first.data;
    assert.ok(limits.max_total_cents > 0 && limits.max_count > 0 && limits.min_share_cents === 1, JSON.stringify(limits));
    assert.deepEqual(Object.keys(limits.currency).sort(), ['code', 'exponent']);
    const again = await aliceClient.limits();
    assert.equal(again.notModified, true);
    assert.deepEqual(again.data, limits);
    const drafts = [
      { total_cents: limits.max_total_cents + 1, count: 1 },
      { total_cents: limits.max_total_cents, count: limits.max_count + 1 },
      { total_cents: 5, count: 10 },
    ];
    for (const draft of drafts) {
      const problem = draftProblem(draft, limits);
      assert.ok(problem, JSON.stringify(draft));
      const refused = await aliceClient.send(draft).then(
        () => assert.fail(`sent ${JSON.stringify(draft)}`),
        (error) => error,
      );
      assert.equal(refused.code, 'invalid_request');
      assert.equal(refused.field, problem.field, `${JSON.stringify(draft)}: ${refused.message}`);
    }
    assert.equal(draftProblem({ total_cents: limits.max_total_cents, count: 1 }, limits), undefined);
  });

  test('the sent history polled with its ETag: 304 while unchanged, a fresh 200 after a send', async (t) => {
    const { client, close } = await pollingClient(t, '/me/packets?role=sent');
    try {
      const first = await client.history('sent');
      assert.equal(first.notModified, false);
      assert.ok(first.etag);
      const second = await client.history('sent');
      assert.equal(second.notModified, true);
      assert.equal(second.etag, first.etag);
      assert.deepEqual(second.data, first.data);

      const packet = await aliceClient.send({ total_cents: 100, count: 1 });
      const third = await client.history('sent');
      assert.equal(third.notModified, false);
      assert.notEqual(third.etag, first.etag);
      assert.equal(third.data.items[0].packet_id, packet.packet_id);
      assert.equal(third.data.items.length, first.data.items.length + 1);
    } finally {
      await close();
    }
  });

  test('a members-only packet: the grab carries the Membership-Ticket header', async (t) => {
    const chat = `sdk-chat-${Date.now()}`;
    const ticket = await membershipTicket(chat, bob);
    if (ticket === undefined) {
      t.skip('POST /local/membership-ticket answered 404: this build cannot issue membership tickets');
      return;
    }
    const packet = await aliceClient.send({ total_cents: 200, count: 2, chat_id: chat, members_only: true });
    assert.equal(packet.members_only, true);

    await assert.rejects(bobClient.grab(packet.packet_id), (error) => {
      assert.equal(error.code, 'not_eligible');
      assert.equal(error.status, 403);
      return true;
    });

    const tickets = [];
    const client = await clientFor(bob, {
      fetch: (request) => (tickets.push(request.headers.get('membership-ticket')), fetch(request)),
    });
    const share = await client.grab(packet.packet_id, { membershipTicket: ticket });
    assert.deepEqual(tickets, [ticket]);
    assert.equal(share.user, bob);
    assert.ok(share.amount_cents > 0);
    assert.equal(share.already_grabbed, false);
  });
});

test("the app's 429 limit_exceeded is not retried", async () => {
  const proxy = await startProxy(() => ({
    status: 429,
    body: { error: { code: 'limit_exceeded', field: 'max_sends_per_day', message: 'this send would pass max_sends_per_day' } },
  }));
  try {
    const client = createRedPacketsClient({ baseUrl: proxy.url, token: () => 'any' });
    await assert.rejects(client.send({ total_cents: 100, count: 1 }), (error) => {
      assert.equal(error.status, 429);
      assert.equal(error.code, 'limit_exceeded');
      assert.equal(error.field, 'max_sends_per_day');
      assert.equal(error.fromGateway, false);
      assert.equal(error.userMessage(), '今天发红包已达上限');
      assert.equal(error.userMessage('zh-CN'), '今天发红包已达上限');
      assert.equal(error.userMessage('en'), 'You have reached today’s limit for sending packets');
      return true;
    });
    assert.equal(proxy.seen.length, 1, 'exactly one request reached the proxy');
  } finally {
    await proxy.close();
  }
});
