// The H5 red packet app, end to end: a real Chromium (Debian's, through npm's playwright-core; no
// browser download) on the built app, at a phone's viewport (390 × 844), against a running local
// API that serves it at /app/.
//
//   APP_URL    the app (default http://127.0.0.1:3000/app/, `make run`)
//   API_URL    the local API (default http://127.0.0.1:3000): the checks beside the browser call
//              the app's routes with the users' tokens
//   LOCAL_BIN  the local binary (default ../target/debug/local): `topup` and `token` for the setup
//              and the checks, run with this process's environment (AWS_ENDPOINT_URL_DYNAMODB,
//              TABLE_NAME etc. of the running stack, exported by the caller)
//   CHROMIUM   the browser (default /usr/bin/chromium)
//   SCREENSHOTS=1  also save the main pages as ../docs/app/*.png
//
// The browser, its sessions' checks, axe-core and the calls beside it are the harness the
// console's suite shares (scripts/browser/harness.mjs).
//
// node's own test runner: `node --test e2e/run.mjs` (npm run test:e2e) prints "# pass N" / "# fail N".
// Bounded: 120 s a test (--test-timeout), 240 s in all; each step waits 15 s at most.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { api as call, browserSuite, local, RUN, STEP_MS, until, XSS } from '../../scripts/browser/harness.mjs';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const APP_URL = (process.env.APP_URL ?? 'http://127.0.0.1:3000/app/').replace(/\/?$/, '/');

/** At a phone's viewport: each session one user, signed in on its own sessionStorage. */
const { csp: CSP, session, shot, accessibilityViolations } = browserSuite({
  chromium,
  site: here,
  shots: join(here, '../docs/app'),
  context: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true },
});

/** Credits `user` with `cents` (a top-up of this run's own); answers the balance after it. */
function topup(user, cents) {
  const out = local('topup', user, String(cents), `${RUN}-topup-${user}-${cents}`);
  const balances = [...out.matchAll(/"balance_cents":\s*(\d+)/g)];
  assert.ok(balances.length > 0, `a balance in ${out}`);
  return Number(balances.at(-1)[1]);
}

/** A call straight on the API with a user's token: `{status, body}`. */
const api = (method, path, { user, ...rest } = {}) => call(method, path, { ...rest, token: user && local('token', user) });

/**
 * Signs in on the stand-in sign-in page (where the app sent the page: `/signin?next=…`) as `user`,
 * a member of `chats`; waits until the app left it.
 */
async function signIn(page, user, chats = []) {
  await page.waitForURL((url) => url.pathname.endsWith('/signin'));
  await page.locator('input[name=user]').fill(user);
  for (const chat of chats) {
    await page.locator('input[name=chat]').fill(chat);
    await page.locator('[data-action=add-chat]').click();
    await page.locator('[data-testid=chats]').getByText(chat).waitFor();
  }
  await page.locator('[data-submit=sign-in]').click();
  const left = page.waitForURL((url) => !url.pathname.endsWith('/signin')).then(() => '');
  const failed = page.locator('.sign-in-card [role=alert]').waitFor().then(() => page.locator('.sign-in-card [role=alert]').innerText());
  const why = await Promise.race([left, failed]);
  assert.equal(why, '', `signing in as ${user}`);
  await page.locator('[data-testid=signed-in-user], [data-testid=envelope], [data-testid=packet-details]').first().waitFor();
}

/** Opens the share link as a user (signing in on the way) and taps 開. */
async function grabAs(t, link, user, chats, { screenshots = {} } = {}) {
  const s = await session(t);
  await s.page.goto(link);
  await signIn(s.page, user, chats);
  assert.equal(new URL(s.page.url()).pathname, new URL(link).pathname, 'back on the share link after signing in');
  const envelope = s.page.locator('[data-testid=envelope]');
  await envelope.waitFor();
  assert.equal(await envelope.getAttribute('data-phase'), 'envelope');
  assert.equal((await s.page.locator('[data-testid=envelope-sender]').innerText()).trim(), 'alice的红包');
  assert.equal((await s.page.locator('[data-testid=envelope-greeting]').innerText()).trim(), '恭喜发财，大吉大利');
  if (screenshots.before) await shot(s.page, screenshots.before);
  await s.page.locator('[data-action=open]').click();
  return s;
}

test('every page has no serious accessibility violation (axe-core, WCAG 2.1 A and AA)', async (t) => {
  topup('alice', 1_000);
  const sent = await api('POST', '/packets', {
    user: 'alice',
    idempotencyKey: randomUUID(),
    body: { total_cents: 200, count: 2, greeting: '恭喜发财' },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const { page } = await session(t, { bypassCSP: true });
  const found = {};
  await page.goto(`${APP_URL}p/${sent.body.packet_id}`);
  await page.locator('input[name=user]').waitFor();
  found.signin = await accessibilityViolations(page);
  await signIn(page, 'bob');
  await page.locator('[data-testid=envelope-greeting]').waitFor();
  found.envelope = await accessibilityViolations(page);
  for (const [path, ready] of [['', 'textarea[name=greeting]'], ['history', '[data-testid^=history-]'], ['wallet', '[data-testid=wallet-balance]']]) {
    await page.goto(`${APP_URL}${path}`);
    await page.locator(ready).first().waitFor();
    await page.waitForLoadState('networkidle', { timeout: STEP_MS }).catch(() => {});
    found[path || 'send'] = await accessibilityViolations(page);
  }
  const failing = Object.entries(found).filter(([, violations]) => violations.length > 0);
  assert.deepEqual(failing, [], JSON.stringify(failing, null, 1));
});

test('the app is served under its Content-Security-Policy, page paths included', async () => {
  for (const path of ['', 'p/0123456789abcdef0123456789abcdef', 'history', 'wallet', 'signin']) {
    const response = await fetch(`${APP_URL}${path}`, { signal: AbortSignal.timeout(STEP_MS) });
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get('content-security-policy'), CSP, path);
    const html = await response.text();
    assert.match(html, /<div id="root">/, path);
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, `${path}: no inline script`);
  }
  const config = await fetch(`${APP_URL}config.json`, { signal: AbortSignal.timeout(STEP_MS) });
  assert.equal(config.status, 200);
  assert.equal((await config.json()).signIn, 'local');
});

test('a members-only lucky packet in chat family: two members grab, a non-member is refused, alice takes back the rest; the refund, the wallet', async (t) => {
  const TOTAL = 10_000;
  const COUNT = 10;
  const start = topup('alice', 50_000);

  // alice, a member of `family`, sends ¥100.00 in 10 lucky shares into it, members only
  const alice = await session(t);
  await alice.page.goto(APP_URL);
  await signIn(alice.page, 'alice', ['family']);
  const { page } = alice;
  await page.locator('[data-testid=send-balance]').waitFor();
  assert.equal(Number(await page.locator('[data-testid=send-balance]').getAttribute('data-cents')), start);
  await page.locator('input[name=amount]').fill('100.00');
  await page.locator('input[name=count]').fill(String(COUNT));
  await page.locator('input[name=chat_id]').fill('family');
  await page.locator('[data-testid=members-only]').click();
  assert.equal(await page.locator('[data-testid=members-only]').getAttribute('aria-checked'), 'true');
  assert.equal(Number(await page.locator('[data-testid=send-total]').getAttribute('data-cents')), TOTAL);
  await shot(page, 'send');
  await page.locator('[data-submit=send]').click();
  const share = page.locator('[data-testid=share-link]');
  await share.waitFor();
  const packetId = await share.getAttribute('data-packet');
  assert.match(packetId, /^[0-9a-f]{32}$/);
  const link = (await share.innerText()).trim();
  assert.equal(link, `${APP_URL}p/${packetId}`);
  await shot(page, 'sent');

  // what the API recorded
  const sent = await api('GET', `/packets/${packetId}`, { user: 'alice' });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  assert.equal(sent.body.kind, 'lucky');
  assert.equal(sent.body.total_cents, TOTAL);
  assert.equal(sent.body.count, COUNT);
  assert.equal(sent.body.greeting, '恭喜发财，大吉大利');
  assert.equal(sent.body.chat_id, 'family');
  assert.equal(sent.body.members_only, true);

  // alice keeps her packet's page open: the grabs come in by polling
  await page.locator('[data-action=view-packet]').click();
  await page.locator('[data-testid=packet-details]').waitFor();
  assert.equal(await page.locator('[data-testid=grab-row]').count(), 0);
  assert.equal(await page.locator('[data-testid=packet-status]').getAttribute('data-status'), 'open');

  // bob and carol, members of family, each in a browser of their own: an amount each
  const amounts = {};
  for (const [user, screenshots] of [
    ['bob', { before: 'envelope' }],
    ['carol', {}],
  ]) {
    const s = await grabAs(t, link, user, ['family'], { screenshots });
    const amount = s.page.locator('[data-testid=grab-amount]');
    await amount.waitFor();
    const cents = Number(await amount.getAttribute('data-cents'));
    assert.ok(cents >= 1 && cents <= TOTAL, `${user}'s amount: ${cents}`);
    assert.match((await amount.innerText()).replace(/\s+/g, ''), /^\d+\.\d{2}元$/);
    amounts[user] = cents;
    // their own row, once the view has it
    await s.page.locator(`[data-testid=grab-row][data-user=${user}]`).waitFor();
    if (user === 'bob') await shot(s.page, 'opened');
    s.assertClean();
  }

  // dave, in no chat, opens it too: the grab goes without a ticket and is refused
  const dave = await grabAs(t, link, 'dave', []);
  const refused = dave.page.locator('[data-testid=grab-refused]');
  await refused.waitFor();
  assert.equal(await refused.getAttribute('data-code'), 'not_eligible');
  // said as a members-only packet's refusal: for the chat's members
  assert.equal((await refused.innerText()).trim(), '这个红包仅限群「family」的成员领取');
  assert.equal(await dave.page.locator('[data-testid=grab-amount]').count(), 0);
  await shot(dave.page, 'refused');
  dave.assertClean();

  // alice's page shows both grabs, polled in (no reload)
  const rows = page.locator('[data-testid=grab-row]');
  await until(STEP_MS, 'both grabs on alice\'s page', async () => (await rows.count()) === 2);
  for (const [user, cents] of Object.entries(amounts)) {
    const row = page.locator(`[data-testid=grab-row][data-user=${user}]`);
    assert.equal(Number(await row.getAttribute('data-cents')), cents, `${user}'s row`);
  }
  assert.equal(await page.locator('[data-testid=best-luck]').count(), 0, 'no best luck before settle');

  // alice takes back what is left
  await page.locator('[data-action=cancel]').click();
  await page.locator('.adm-dialog').getByRole('button', { name: '收回' }).click();
  await page.locator('[data-testid=packet-status][data-status=cancelled]').waitFor();
  assert.equal(await page.locator('[data-action=cancel]').count(), 0, 'nothing left to take back');

  // settled (the local API settles every second): the refund named. No best luck: a packet has
  // one only once every share is taken (docs/DESIGN.md, the packet view), and this one was
  // cancelled with 8 of its 10 left (the next test has one)
  await page.locator('[data-testid=packet-status][data-settled=true]').waitFor();
  const refund = TOTAL - amounts.bob - amounts.carol;
  assert.equal(Number(await page.locator('[data-testid=refund]').getAttribute('data-cents')), refund);
  const settled = await api('GET', `/packets/${packetId}`, { user: 'alice' });
  assert.equal(settled.body.status, 'cancelled');
  assert.equal(settled.body.settled, true);
  assert.equal(settled.body.refund_cents, refund);
  assert.equal(settled.body.best_luck, null);
  assert.equal(await page.locator('[data-testid=best-luck]').count(), 0, 'no best luck on a packet with shares left');
  await page.locator('.adm-toast-main').waitFor({ state: 'detached' }); // 已收回's toast gone
  await shot(page, 'cancelled');

  // alice's wallet: the refund, and the balance
  await page.goto(`${APP_URL}wallet`);
  const movement = page.locator(`[data-testid=movement][data-kind=refund][data-packet="${packetId}"]`);
  await until(STEP_MS, 'the refund in the wallet', async () => {
    if ((await movement.count()) > 0) return true;
    await page.reload();
    await page.locator('[data-testid=wallet-balance]').waitFor();
    return (await movement.count()) > 0;
  }, 1000);
  assert.equal(Number(await movement.getAttribute('data-cents')), refund);
  const send = page.locator(`[data-testid=movement][data-kind=send][data-packet="${packetId}"]`);
  assert.equal(Number(await send.getAttribute('data-cents')), -TOTAL);
  const balance = Number(await page.locator('[data-testid=wallet-balance]').getAttribute('data-cents'));
  assert.equal(balance, start - TOTAL + refund, `${start} − ${TOTAL} + ${refund}`);
  const wallet = await api('GET', '/me/wallet?limit=1', { user: 'alice' });
  assert.equal(wallet.body.balance_cents, balance);
  await shot(page, 'wallet');

  // a withdrawal is confirmed first, naming the amount and where it goes; kept back, nothing moves
  await page.locator('input[name=withdraw_amount]').fill('1.00');
  await page.locator('input[name=destination]').fill('card-e2e');
  await page.locator('[data-submit=withdraw]').click();
  const confirm = page.locator('.adm-dialog');
  await confirm.getByText(/将 .*1\.00.* 提现到 card-e2e/).waitFor();
  await confirm.getByRole('button', { name: '再想想' }).click();
  await confirm.waitFor({ state: 'detached' });
  assert.equal((await api('GET', '/me/wallet?limit=1', { user: 'alice' })).body.balance_cents, balance, 'kept back');
  await page.locator('[data-submit=withdraw]').click();
  await page.locator('.adm-dialog').getByRole('button', { name: '确认提现' }).click();
  await until(STEP_MS, 'the withdrawal debited', async () => {
    const after = await api('GET', '/me/wallet?limit=1', { user: 'alice' });
    return after.body.balance_cents === balance - 100;
  });
  alice.assertClean();
});

test('best luck: a packet every share of which is taken shows 手气最佳 on the largest, once settled', async (t) => {
  topup('alice', 1_000);
  const sent = await api('POST', '/packets', {
    user: 'alice',
    idempotencyKey: randomUUID(),
    body: { total_cents: 600, count: 3, kind: 'lucky', greeting: '恭喜发财，大吉大利' },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const packetId = sent.body.packet_id;

  const alice = await session(t);
  const { page } = alice;
  await page.goto(`${APP_URL}p/${packetId}`);
  await signIn(page, 'alice', ['family']);
  await page.locator('[data-testid=packet-details]').waitFor();

  // three grabs beside the browser; alice's page polls them in
  const amounts = {};
  for (const user of ['bob', 'carol', 'dave']) {
    const grab = await api('POST', `/packets/${packetId}/grab`, { user, body: {} });
    assert.equal(grab.status, 200, JSON.stringify(grab.body));
    amounts[user] = grab.body.amount_cents;
  }
  const rows = page.locator('[data-testid=grab-row]');
  await until(STEP_MS, 'three grabs on alice\'s page', async () => (await rows.count()) === 3);
  await page.locator('[data-testid=packet-status][data-status=finished]').waitFor();
  assert.equal(await page.locator('[data-action=cancel]').count(), 0, 'nothing left to take back');

  await page.locator('[data-testid=packet-status][data-settled=true]').waitFor();
  const view = await api('GET', `/packets/${packetId}`, { user: 'alice' });
  assert.ok(view.body.best_luck, JSON.stringify(view.body));
  const best = page.locator('[data-testid=grab-row][data-best-luck=true]');
  await best.waitFor();
  assert.equal(await best.count(), 1, 'one best luck');
  assert.equal(await best.getAttribute('data-user'), view.body.best_luck.user);
  assert.equal(Number(await best.getAttribute('data-cents')), Math.max(...Object.values(amounts)));
  assert.equal((await best.locator('[data-testid=best-luck]').innerText()).trim(), '手气最佳');
  await shot(page, 'best-luck');

  // alice's sent history lists it
  await page.goto(`${APP_URL}history`);
  await page.locator(`[data-testid=history-item][data-packet="${packetId}"]`).waitFor();
  await shot(page, 'history');
  alice.assertClean();
});

test("the send form states the stack's limits and refuses a draft over them with the limit's sentence, sending nothing", async (t) => {
  const limits = await api('GET', '/me/limits', { user: 'limits-carol' });
  assert.equal(limits.status, 200, JSON.stringify(limits.body));
  const { max_total_cents: maxTotal, max_count: maxCount } = limits.body;
  const yuan = (cents) => (cents / 100).toFixed(2);
  const carol = await session(t);
  const { page } = carol;
  const sends = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname.endsWith('/packets')) sends.push(request.url());
  });
  await page.goto(APP_URL);
  await signIn(page, 'limits-carol');
  const stated = page.locator('[data-testid=send-limits]');
  await stated.waitFor();
  assert.equal(Number(await stated.getAttribute('data-max-total')), maxTotal);
  assert.equal(Number(await stated.getAttribute('data-max-count')), maxCount);
  assert.match(await stated.innerText(), new RegExp(`单个红包金额不可超过${yuan(maxTotal)}元[\\s\\S]*红包个数不可超过${maxCount}个`));
  const refusal = page.locator('[data-testid=send-error]');
  for (const [amount, count, sentence] of [
    ['1.00', String(maxCount + 1), `红包个数不可超过${maxCount}个`],
    [yuan(maxTotal * 50), '10', `单个红包金额不可超过${yuan(maxTotal)}元`],
    ['0.05', '10', '每人至少0.01元，请减少个数或增加金额'],
  ]) {
    await page.locator('input[name=amount]').fill(amount);
    await page.locator('input[name=count]').fill(count);
    await page.locator('[data-submit=send]').click();
    await refusal.waitFor();
    assert.equal((await refusal.innerText()).trim(), sentence, `${amount} in ${count}`);
  }
  await shot(page, 'send-limit');
  assert.deepEqual(sends, [], 'a draft over the limits is refused before it is sent');
  carol.assertClean();
});

test('a greeting of markup is shown as text; the language switch', async (t) => {
  topup('alice', 1_000);
  const sent = await api('POST', '/packets', {
    user: 'alice',
    idempotencyKey: randomUUID(),
    body: { total_cents: 200, count: 2, greeting: XSS },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const bob = await session(t);
  await bob.page.goto(`${APP_URL}p/${sent.body.packet_id}`);
  // the sign-in page in English, then back to Chinese
  await bob.page.locator('[data-action=language]').click();
  await bob.page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await bob.page.locator('[data-action=language]').click();
  await bob.page.getByRole('heading', { name: '登录' }).waitFor();
  await signIn(bob.page, 'bob');
  // a browser in English opens the sign-in page in English
  const visitor = await session(t, { locale: 'en-US' });
  await visitor.page.goto(`${APP_URL}p/${sent.body.packet_id}`);
  await visitor.page.getByRole('heading', { name: 'Sign in' }).waitFor();
  const greeting = bob.page.locator('[data-testid=envelope-greeting]');
  await greeting.waitFor();
  assert.equal((await greeting.innerText()).trim(), XSS);
  assert.equal(await bob.page.locator('[data-testid=envelope] img').count(), 0, 'no <img> made of it');
  await bob.page.locator('[data-action=open]').click();
  await bob.page.locator('[data-testid=grab-amount]').waitFor();
  assert.equal(await bob.page.locator('img').count(), 0);
  bob.assertClean();
});

test('signIn "host": the token and the membership ticket come from window.RedPacketsHost; without it, a page saying so', async (t) => {
  topup('alice', 1_000);
  const sent = await api('POST', '/packets', {
    user: 'alice',
    idempotencyKey: randomUUID(),
    body: { total_cents: 200, count: 2, chat_id: 'family', members_only: true },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const link = `${APP_URL}p/${sent.body.packet_id}`;
  const hostConfig = JSON.stringify({ apiUrl: '', signIn: 'host' });

  // the host app: a web view whose page finds window.RedPacketsHost (here, the local stand-ins
  // of the host's sign-in and chat server behind it), config.json saying "host"
  const carol = await session(t);
  const asked = [];
  await carol.page.exposeFunction('e2eHostAsked', (what) => asked.push(what));
  await carol.page.addInitScript((api) => {
    const post = async (path, body) => {
      const response = await fetch(`${api}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return response.json();
    };
    window.RedPacketsHost = {
      token: async () => {
        window.e2eHostAsked('token');
        return (await post('/local/app-token', { user: 'carol' })).token;
      },
      membershipTicket: async (chatId) => {
        window.e2eHostAsked(`ticket ${chatId}`);
        return chatId === 'family' ? (await post('/local/membership-ticket', { chat_id: chatId, user: 'carol' })).ticket : undefined;
      },
    };
  }, new URL(APP_URL).origin);
  await carol.page.route(`${APP_URL}config.json`, (route) =>
    route.fulfill({ status: 200, contentType: 'application/json', body: hostConfig }),
  );
  await carol.page.goto(link);
  await carol.page.locator('[data-testid=envelope]').waitFor();
  assert.ok(!new URL(carol.page.url()).pathname.endsWith('/signin'), 'no sign-in page');
  await carol.page.locator('[data-action=open]').click();
  const amount = carol.page.locator('[data-testid=grab-amount]');
  await amount.waitFor();
  assert.ok(Number(await amount.getAttribute('data-cents')) >= 1);
  assert.ok(asked.includes('token'), JSON.stringify(asked));
  assert.ok(asked.includes('ticket family'), JSON.stringify(asked));
  carol.assertClean();

  // no host: the page says to open it inside the app
  const nobody = await session(t);
  await nobody.page.route(`${APP_URL}config.json`, (route) =>
    route.fulfill({ status: 200, contentType: 'application/json', body: hostConfig }),
  );
  await nobody.page.goto(link);
  await nobody.page.getByText('请在 App 内打开这个页面').waitFor();
  nobody.assertClean();
});
