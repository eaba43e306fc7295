// The operators' console, end to end: a real Chromium (Debian's, through npm's playwright-core;
// no browser download) on the built console, against a running local API.
//
//   CONSOLE_URL  the console (default http://127.0.0.1:3000/console/, `make run`)
//   API_URL      the local API (default http://127.0.0.1:3000): the app's routes, for a user's
//                withdrawal
//   LOCAL_BIN    the local binary (default ../target/debug/local): `topup` and `token` for the
//                setup, run with this process's environment (AWS_ENDPOINT_URL_DYNAMODB etc. of
//                the running stack, exported by the caller)
//   CHROMIUM     the browser (default /usr/bin/chromium)
//   SCREENSHOTS=1  also save the main pages as ../docs/console/*.png
//
// node's own test runner: `node --test e2e/run.mjs` (npm run test:e2e) prints "# pass N" / "# fail N".
// Bounded: 120 s in all; each step waits 15 s at most.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const CONSOLE_URL = (process.env.CONSOLE_URL ?? 'http://127.0.0.1:3000/console/').replace(/\/?$/, '/');
const API_URL = (process.env.API_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
const LOCAL_BIN = process.env.LOCAL_BIN ?? join(here, '../target/debug/local');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOTS = process.env.SCREENSHOTS === '1';
const SHOTS_DIR = join(here, '../docs/console');
const STEP_MS = 15_000;
const CSP = readFileSync(join(here, 'csp.txt'), 'utf8').trim();
const XSS = '<img src=x onerror=alert(1)>';
// Names of this run's own: the stack may keep data from runs before.
const RUN = `e2e${Date.now().toString(36)}`;

// The whole run is bounded, whatever hangs.
const overall = setTimeout(() => {
  console.error('e2e: the global timeout of 120 s passed');
  process.exit(1);
}, 120_000);
overall.unref();

/** `target/debug/local <args>` with this environment (the running stack's). */
function local(...args) {
  return execFileSync(LOCAL_BIN, args, { encoding: 'utf8', timeout: STEP_MS, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const topup = (user, cents) => local('topup', user, String(cents), `${RUN}-topup-${user}`);

/** `POST /me/withdrawals` as the user (their app token), straight on the API. */
async function withdraw(user, cents) {
  const response = await fetch(`${API_URL}/me/withdrawals`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${local('token', user)}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ amount_cents: cents, destination: 'card-e2e' }),
    signal: AbortSignal.timeout(STEP_MS),
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** "1,234.56 CNY" → 123456 (the exponent as shown). */
function cents(text) {
  const match = /(-?[\d,]+)(?:\.(\d+))?\s+[A-Z]{3}/.exec(text);
  assert.ok(match, `an amount in ${JSON.stringify(text)}`);
  return Number(match[1].replace(/,/g, '') + (match[2] ?? ''));
}

let browser;

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

after(async () => {
  await browser?.close();
});

/**
 * A fresh browser session (its own sessionStorage) whose page fails the test on any dialog
 * (an alert an injected script would open), uncaught error, or Content-Security-Policy violation.
 */
async function session(t) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
  context.setDefaultTimeout(STEP_MS);
  context.setDefaultNavigationTimeout(STEP_MS);
  const page = await context.newPage();
  const problems = [];
  page.on('dialog', async (dialog) => {
    problems.push(`a dialog opened: ${dialog.type()} ${dialog.message()}`);
    await dialog.dismiss().catch(() => {});
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to (execute|load|apply|connect)/i.test(message.text())) {
      problems.push(`CSP: ${message.text()}`);
    }
  });
  t.after(async () => {
    await context.close();
  });
  return {
    page,
    problems,
    assertClean() {
      assert.deepEqual(problems, [], 'no dialog, page error or CSP violation');
    },
  };
}

async function shot(page, name) {
  if (!SCREENSHOTS) return;
  mkdirSync(SHOTS_DIR, { recursive: true });
  await page.waitForLoadState('networkidle', { timeout: STEP_MS }).catch(() => {});
  await page.screenshot({ path: join(SHOTS_DIR, `${name}.png`) });
}

async function signIn(page, operator, roles, { screenshot = false } = {}) {
  await page.goto(`${CONSOLE_URL}login`);
  await page.locator('input[name=operator]').fill(operator);
  for (const role of roles) await page.locator(`input[type=checkbox][value=${role}]`).check();
  if (screenshot) await shot(page, 'sign-in');
  await page.locator('[data-submit=sign-in]').click();
  await page.waitForURL((url) => !url.pathname.endsWith('/login'));
  // the dashboard greets the operator by name and roles
  await page.getByText(`${operator} (${roles.join(', ')})`).first().waitFor();
}

/** The latest notification's text (react-admin's snackbar). */
async function notification(page, pattern) {
  const snackbar = page.locator('.MuiSnackbar-root').filter({ hasText: pattern }).last();
  await snackbar.waitFor();
  return (await snackbar.innerText()).trim();
}

/** Waits until an input holds the value (a form fills in after it mounts). */
async function waitForValue(locator, value) {
  const deadline = Date.now() + STEP_MS;
  let seen;
  while ((seen = await locator.inputValue()) !== value) {
    assert.ok(Date.now() < deadline, `${value} in the input, not ${JSON.stringify(seen)}`);
    await sleep(100);
  }
}

/** Types in a list's search box, then waits until the rows shown are the ones it finds. */
async function search(page, text) {
  await page.locator('input[name=q]').fill(text);
  const deadline = Date.now() + STEP_MS;
  for (;;) {
    const rows = await page.locator('tbody tr').allInnerTexts();
    if (rows.length > 0 && rows.every((row) => row.includes(text))) return;
    assert.ok(Date.now() < deadline, `rows of ${text} only, not ${JSON.stringify(rows)}`);
    await sleep(100);
  }
}

async function openUser(page, user) {
  await page.goto(`${CONSOLE_URL}users/${encodeURIComponent(user)}/show`);
  await page.locator('[data-testid=user-id]').filter({ hasText: user }).waitFor();
  return cents(await page.locator('.user-balance[data-cents]').innerText());
}

async function approve(page, reference) {
  await page.goto(`${CONSOLE_URL}adjustments`);
  await page.locator('input[name=reference]').fill(reference);
  await page.locator('[data-submit=approve]').click();
}

test('the console is served under its Content-Security-Policy, every page of it', async () => {
  for (const path of ['', 'users/someone/show', 'audit']) {
    const response = await fetch(`${CONSOLE_URL}${path}`, { signal: AbortSignal.timeout(STEP_MS) });
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get('content-security-policy'), CSP, path);
    assert.match(await response.text(), /<div id="root">/, path);
  }
  const config = await fetch(`${CONSOLE_URL}config.json`, { signal: AbortSignal.timeout(STEP_MS) });
  assert.equal((await config.json()).signIn, 'local');
});

test('1: support proposes a credit, support cannot approve it (403), finance approves it once; the audit names both', async (t) => {
  const user = `${RUN}-credit`;
  const reference = `${RUN}-ticket-1`;
  topup(user, 10_000);

  const sam = await session(t);
  await signIn(sam.page, 'sam', ['support'], { screenshot: true });
  // find the user by id
  await sam.page.goto(`${CONSOLE_URL}users`);
  await sam.page.locator('input[name=user]').fill(user);
  await sam.page.locator('[data-submit=find-user]').click();
  await sam.page.waitForURL((url) => url.pathname.endsWith(`/users/${user}/show`));
  await sam.page.locator('[data-testid=user-id]').filter({ hasText: user }).waitFor();
  const before = cents(await sam.page.locator('.user-balance[data-cents]').innerText());
  assert.equal(before, 10_000);

  // propose a credit of 5.00
  await sam.page.locator('[data-action=propose-adjustment]').click();
  await sam.page.waitForURL((url) => url.pathname.endsWith('/adjustments/create'));
  await waitForValue(sam.page.locator('input[name=user]'), user);
  await sam.page.locator('input[name=reference]').fill(reference);
  await sam.page.locator('input[name=amount]').fill('5.00');
  await sam.page.locator('textarea[name=reason]').first().fill('e2e: goodwill credit');
  await sam.page.locator('main button[type=submit]').click();
  await sam.page.waitForURL((url) => url.pathname.endsWith(`/users/${user}/show`));
  assert.match(await notification(sam.page, reference), new RegExp(reference));
  assert.equal(cents(await sam.page.locator('.user-balance[data-cents]').innerText()), before, 'a proposal moves no money');

  // approving it as sam (support): the server's 403, shown; sam stays signed in
  await approve(sam.page, reference);
  const refused = await notification(sam.page, 'forbidden');
  assert.match(refused, /this needs one of the roles finance, admin/);
  await shot(sam.page, 'forbidden');
  assert.equal(await sam.page.locator('[data-testid=approve-result]').count(), 0);
  assert.ok(new URL(sam.page.url()).pathname.endsWith('/adjustments'), 'a 403 does not sign out');
  sam.assertClean();

  // fay (finance) approves it: applied, +5.00
  const fay = await session(t);
  await signIn(fay.page, 'fay', ['finance']);
  await approve(fay.page, reference);
  const result = fay.page.locator('[data-testid=approve-result]');
  await result.waitFor();
  assert.equal(await result.getAttribute('data-applied'), 'true');
  assert.equal(cents(await result.locator('.approve-balance[data-cents]').innerText()), before + 500);
  await shot(fay.page, 'approve');
  assert.equal(await openUser(fay.page, user), before + 500, 'the balance moved by 5.00 exactly');

  // approving again changes nothing
  await approve(fay.page, reference);
  await fay.page.locator('[data-testid=approve-result][data-applied=false]').waitFor();
  assert.equal(
    cents(await fay.page.locator('[data-testid=approve-result] .approve-balance[data-cents]').innerText()),
    before + 500,
  );
  assert.equal(await openUser(fay.page, user), before + 500, 'the balance moved once');
  await fay.page.getByRole('cell', { name: reference }).first().waitFor(); // the movement, listed
  await shot(fay.page, 'user');

  // today's audit trail names sam (proposed) and fay (approved)
  await fay.page.goto(`${CONSOLE_URL}audit`);
  await search(fay.page, reference);
  const rows = fay.page.locator('tbody tr').filter({ hasText: reference });
  await rows.first().waitFor();
  const trail = (await rows.allInnerTexts()).join('\n');
  assert.match(trail, /\bsam\b/);
  assert.match(trail, /\bfay\b/);
  assert.equal(await rows.count(), 2, 'proposed and approved, once each');
  await shot(fay.page, 'audit');
  fay.assertClean();
});

test('2: risk holds money out (403 account_held, nothing debited), lifts it from the holds list, the withdrawal goes through', async (t) => {
  const user = `${RUN}-held`;
  topup(user, 10_000);

  const rita = await session(t);
  await signIn(rita.page, 'rita', ['risk']);
  assert.equal(await openUser(rita.page, user), 10_000);
  await rita.page.locator('[data-action=place-hold]').click();
  const dialog = rita.page.locator('[data-dialog=place-hold]');
  await dialog.getByRole('combobox').click();
  await rita.page.getByRole('option', { name: '提现' }).click();
  await dialog.locator('textarea[name=reason]').first().fill('e2e: suspicious payout');
  await dialog.locator('[data-submit=place-hold]').click();
  await notification(rita.page, user);
  await rita.page.locator('[data-testid=user-hold]').filter({ hasText: 'e2e: suspicious payout' }).waitFor();
  assert.match(await rita.page.locator('[data-testid=user-hold]').innerText(), /提现/);

  // the send function reads the holds every HOLD_REFRESH_SECONDS (5 s) plus one read
  await sleep(6_500);
  const held = await withdraw(user, 1_000);
  assert.equal(held.status, 403, JSON.stringify(held.body));
  assert.equal(held.body?.error?.code, 'account_held');
  assert.equal(await openUser(rita.page, user), 10_000, 'nothing debited');

  // lift it from the holds list
  await rita.page.goto(`${CONSOLE_URL}holds`);
  await search(rita.page, user);
  const row = rita.page.locator('tbody tr').filter({ hasText: user });
  await row.locator('[data-action=lift-hold]').click();
  const lift = rita.page.locator('[data-dialog=lift-hold]');
  await lift.locator('textarea[name=reason]').first().fill('e2e: cleared');
  await lift.locator('[data-submit=lift-hold]').click();
  await notification(rita.page, user);
  await row.waitFor({ state: 'detached' });

  // within HOLD_REFRESH_SECONDS the withdrawal goes through
  let answer;
  const deadline = Date.now() + 10_000;
  do {
    answer = await withdraw(user, 1_000);
    if (answer.status !== 403) break;
    await sleep(1_000);
  } while (Date.now() < deadline);
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.equal(answer.body.balance_cents, 9_000);
  assert.equal(await openUser(rita.page, user), 9_000);
  rita.assertClean();
});

test('3: the flags list renders; an open flag is resolved if the ledger has one', async (t) => {
  const rita = await session(t);
  await signIn(rita.page, 'rita', ['risk']);
  await rita.page.goto(`${CONSOLE_URL}flags`);
  // the list (rows) or its empty state, under the filter of open flags
  await rita.page.locator('table, .RaList-noResults, .RaEmpty-message, .RaList-main').first().waitFor();
  assert.match(await rita.page.locator('#react-admin-title').innerText(), /风险标记/);
  await shot(rita.page, 'flags');
  const resolve = rita.page.locator('[data-action=resolve-flag]');
  if ((await resolve.count()) === 0) {
    t.diagnostic('no open flag in the local ledger: resolving skipped');
    rita.assertClean();
    return;
  }
  const row = rita.page.locator('tbody tr').filter({ has: resolve }).first();
  const rowText = await row.innerText();
  await row.locator('[data-action=resolve-flag]').click();
  const dialog = rita.page.locator('[data-dialog=resolve-flag]');
  await dialog.locator('textarea[name=note]').first().fill('e2e: looked at it');
  await dialog.locator('[data-submit=resolve-flag]').click();
  await notification(rita.page, /已处理/);
  await rita.page.locator('tbody tr').filter({ hasText: rowText.split('\t')[0] }).first().waitFor({ state: 'detached' });
  rita.assertClean();
});

test('5: user-supplied text is shown as text: an adjustment reason and a hold reason of markup run nothing', async (t) => {
  const user = `${RUN}-xss`;
  const reference = `${RUN}-ticket-xss`;
  topup(user, 1_000);

  const ada = await session(t);
  await signIn(ada.page, 'ada', ['support', 'risk']);
  const { page } = ada;
  const noInjectedImage = async () => assert.equal(await page.locator('img[src="x"]').count(), 0, 'no <img> made of text');

  // an adjustment whose reason is markup
  await openUser(page, user);
  await page.locator('[data-action=propose-adjustment]').click();
  await waitForValue(page.locator('input[name=user]'), user);
  await page.locator('input[name=reference]').fill(reference);
  await page.locator('input[name=amount]').fill('1');
  await page.locator('textarea[name=reason]').first().fill(XSS);
  await page.locator('main button[type=submit]').click();
  await page.waitForURL((url) => url.pathname.endsWith(`/users/${user}/show`));

  // a packet whose greeting is markup, on its page (GET /ops/v1/packets/{id}) when the API has it
  const sent = await fetch(`${API_URL}/packets`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${local('token', user)}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ total_cents: 100, count: 1, greeting: XSS.slice(0, 64) }),
    signal: AbortSignal.timeout(STEP_MS),
  });
  assert.equal(sent.status, 201);
  const packet = (await sent.json()).packet_id;
  await openUser(page, user);
  await page.getByRole('tab', { name: '发出的红包' }).click();
  await page.locator('tbody tr').filter({ hasText: packet }).click();
  await page.waitForURL((url) => url.pathname.endsWith(`/packets/${packet}/show`));
  const greeting = page.locator('[data-testid=packet-greeting]');
  const missing = page.locator('.MuiSnackbar-root').filter({ hasText: /404|not_found|Not Found/ });
  await Promise.race([greeting.waitFor(), missing.waitFor()]);
  if (await greeting.count()) {
    assert.equal((await greeting.innerText()).trim(), XSS);
    await noInjectedImage();
  } else {
    t.diagnostic('GET /ops/v1/packets/{packet_id} answered 404 (not served by this API yet): the packet page skipped');
  }
  await openUser(page, user);

  // a hold whose reason is markup
  await page.locator('[data-action=place-hold]').click();
  const dialog = page.locator('[data-dialog=place-hold]');
  await dialog.locator('textarea[name=reason]').first().fill(XSS);
  await dialog.locator('[data-submit=place-hold]').click();
  await notification(page, user);
  const holdReason = page.locator('[data-testid=user-hold-reason]');
  await holdReason.waitFor();
  assert.equal((await holdReason.innerText()).trim(), XSS);
  await noInjectedImage();

  // the holds list
  await page.goto(`${CONSOLE_URL}holds`);
  await search(page, user);
  const row = page.locator('tbody tr').filter({ hasText: user });
  await row.waitFor();
  assert.ok((await row.innerText()).includes(XSS), 'the literal text in the holds list');
  await noInjectedImage();
  await shot(page, 'holds');

  // the audit trail: both reasons, literal
  await page.goto(`${CONSOLE_URL}audit`);
  await search(page, user);
  const proposed = page.locator('tbody tr').filter({ hasText: reference });
  await proposed.waitFor();
  assert.ok((await proposed.innerText()).includes(XSS), 'the literal text in the audit trail');
  const heldRow = page.locator('tbody tr').filter({ hasText: user }).filter({ hasText: XSS });
  assert.ok((await heldRow.count()) >= 2, 'the adjustment and the hold, each with its literal reason');
  await noInjectedImage();

  // the dashboard's charts count the hold
  await page.goto(CONSOLE_URL);
  await page.locator('[data-testid=chart-holds]').waitFor();
  await shot(page, 'dashboard');

  // lift it from the user's page
  await openUser(page, user);
  await page.locator('[data-action=lift-hold]').click();
  await page.locator('[data-dialog=lift-hold] textarea[name=reason]').first().fill(XSS);
  await page.locator('[data-submit=lift-hold]').click();
  await page.locator('[data-testid=user-hold]').filter({ hasText: '无冻结' }).waitFor();
  await sleep(300); // a late script, if any, would open its dialog now
  ada.assertClean();
});

test('a 401 signs out: a token the API refuses brings the sign-in page back', async (t) => {
  const { page, assertClean } = await session(t);
  await signIn(page, 'sam', ['support']);
  await page.evaluate(() => sessionStorage.setItem('ops.token', 'not-a-token'));
  await page.goto(`${CONSOLE_URL}holds`);
  await page.waitForURL((url) => url.pathname.endsWith('/login'));
  await page.locator('input[name=operator]').waitFor();
  assertClean();
});
