// The operators' console, end to end: a real Chromium (Debian's, through npm's playwright-core;
// no browser download) on the built console, against a running local API.
//
//   CONSOLE_URL  the console (default http://127.0.0.1:3000/console/, `make run`)
//   API_URL      the local API (default http://127.0.0.1:3000): the app's routes (withdrawals,
//                a 接龙 game's packets and grabs), the operators' routes the setup and the checks
//                call beside the browser, and POST /local/ops-token for their tokens
//   LOCAL_BIN    the local binary (default ../target/debug/local): `topup`, `token`, `ops-token`
//                and `trial-balance` for the setup and the checks, run with this process's environment
//                (AWS_ENDPOINT_URL_DYNAMODB, TABLE_NAME, BUSINESS_TIME_ZONE etc. of the running
//                stack, exported by the caller)
//   CHROMIUM     the browser (default /usr/bin/chromium)
//   SCREENSHOTS=1  also save the main pages as ../docs/console/*.png
//
// The OIDC sign-in's tests serve the built console (console/dist, `npm run build`) themselves, on a
// free port of 127.0.0.1, the API's /ops/* proxied to API_URL: beside a stand-in OIDC provider
// (test 7), or with a Cognito pool's endpoints answered in the browser (test 8).
//
// The browser, its sessions' checks, axe-core and the calls beside it are the harness the app's
// suite shares (scripts/browser/harness.mjs).
//
// node's own test runner: `node --test e2e/run.mjs` (npm run test:e2e) prints "# pass N" / "# fail N".
// Bounded: 120 s a test (--test-timeout), 240 s in all; each step waits 15 s at most.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { API_URL, api, browserSuite, LOCAL_BIN, local, RUN, sleep, STEP_MS, until, XSS } from '../../scripts/browser/harness.mjs';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const CONSOLE_URL = (process.env.CONSOLE_URL ?? 'http://127.0.0.1:3000/console/').replace(/\/?$/, '/');

const { csp: CSP, session, shot, accessibilityViolations } = browserSuite({
  chromium,
  site: here,
  shots: join(here, '../docs/console'),
  context: { viewport: { width: 1280, height: 800 } },
});

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

/** An operator's token, from the local API's `POST /local/ops-token` (as the console signs in). */
async function opsToken(operator, roles) {
  const answer = await api('POST', '/local/ops-token', { body: { operator, roles } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.token;
}

/** Every item of a list of the operators' API paged by cursor (`{items, next_cursor}`), bounded. */
async function everyItem(path, query, token) {
  const items = [];
  let cursor;
  for (let pages = 0; pages < 50; pages++) {
    const params = new URLSearchParams({ ...query, limit: '100', ...(cursor ? { cursor } : {}) });
    const page = await api('GET', `${path}?${params}`, { token });
    assert.equal(page.status, 200, `${path}: ${JSON.stringify(page.body)}`);
    items.push(...page.body.items);
    cursor = page.body.next_cursor;
    if (!cursor) return items;
  }
  assert.fail(`${path}: more than 50 pages`);
}

/** The console's business time zone (its config.json's), for the day its pickers default to. */
let businessTimeZone = 'Asia/Shanghai';

/** Today's business day, YYYY-MM-DD, in the console's business time zone. */
/** The calendar day `n` days from `day` (`YYYY-MM-DD`). */
function shiftDay(day, n) {
  const at = new Date(`${day}T12:00:00Z`);
  at.setUTCDate(at.getUTCDate() + n);
  return at.toISOString().slice(0, 10);
}

function businessDay(at = new Date()) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: businessTimeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(at);
  const part = (type) => parts.find((p) => p.type === type).value;
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/**
 * The CSV of `day`'s trial balance the funds function files: `local trial-balance <day>` run in a
 * directory of its own (its reports are written under the process's cwd, `reports/`), the .csv
 * among the files its answer's `trial_balance.written` names, read there.
 */
function filedTrialBalance(day) {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-trial-balance-'));
  try {
    const env = { ...process.env, RUST_LOG: 'error' };
    delete env.REPORTS_DIR;
    const out = execFileSync(LOCAL_BIN, ['trial-balance', day], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: STEP_MS,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // the answer is the pretty-printed JSON object that ends the output (a log line may precede it)
    const start = out.search(/^\{/m);
    assert.ok(start >= 0, `a JSON answer in ${JSON.stringify(out)}`);
    const answer = JSON.parse(out.slice(start));
    const written = answer?.trial_balance?.written ?? [];
    const csv = written.find((file) => String(file).endsWith('.csv'));
    assert.ok(csv, `a .csv among ${JSON.stringify(written)}`);
    return readFileSync(resolve(dir, csv), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** "1,234.56 CNY" → 123456 (the exponent as shown). */
function cents(text) {
  const match = /(-?[\d,]+)(?:\.(\d+))?\s+[A-Z]{3}/.exec(text);
  assert.ok(match, `an amount in ${JSON.stringify(text)}`);
  return Number(match[1].replace(/,/g, '') + (match[2] ?? ''));
}

before(async () => {
  const config = await fetch(`${CONSOLE_URL}config.json`, { signal: AbortSignal.timeout(STEP_MS) });
  businessTimeZone = (await config.json()).businessTimeZone || businessTimeZone;
});

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
  for (const path of ['', 'users/someone/show', 'audit', 'adjustments', 'withdrawals', 'flags', 'reports']) {
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
  // said in the console's language with the roles it needs, never in the server's English words
  const refused = await notification(sam.page, '没有权限');
  assert.match(refused, /需要以下角色之一：财务 \(finance\)、管理员 \(admin\)/);
  assert.doesNotMatch(refused, /this needs|forbidden/);
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
  // the reason worded in Chinese from the entry's facts, never the server's English
  const reasons = await rows.locator('[data-testid=audit-reason]').allInnerTexts();
  assert.deepEqual(reasons, Array(2).fill('入账（加款） 5.00 CNY：e2e: goodwill credit'), reasons.join(' | '));
  await shot(fay.page, 'audit');
  // exported as filtered: the two entries, as the API has them
  const [download] = await Promise.all([
    fay.page.waitForEvent('download'),
    fay.page.locator('button[aria-label="导出"]').click(),
  ]);
  const exported = readFileSync(await download.path(), 'utf8').trimEnd().split('\n');
  assert.equal(exported.length, 1 + 2, `a header and the two entries: ${exported.join(' | ')}`);
  assert.ok(exported.slice(1).every((line) => line.includes(reference)), 'the filter kept');
  const answer = await api('GET', `/ops/v1/audit/${businessDay()}`, { token: await opsToken('fay', ['finance']) });
  const entries = answer.body.entries.filter((entry) => entry.subject === reference);
  assert.deepEqual(
    entries.map((entry) => entry.actor).sort(),
    ['fay', 'sam'],
    'the API names the same two steps',
  );
  assert.ok(entries.every((entry) => exported.some((line) => line.includes(entry.at))), 'each at its time');

  // the reference a case quotes, typed in the search box: the adjustment, applied, its user
  await fay.page.goto(`${CONSOLE_URL}users`);
  await fay.page.locator('input[name=user]').fill(reference);
  await fay.page.locator('[data-submit=find-user]').click();
  await fay.page.waitForURL((url) => url.pathname.endsWith(`/adjustments/${encodeURIComponent(reference)}/show`));
  await fay.page.locator('[data-testid=adjustment-reference]').filter({ hasText: reference }).waitFor();
  await fay.page.locator('[data-testid=adjustment-status]').filter({ hasText: '已入账' }).waitFor();
  assert.equal((await fay.page.locator('[data-testid=adjustment-user]').innerText()).trim(), user);
  await shot(fay.page, 'adjustment');
  fay.assertClean();
});

test('1b: the pending adjustments: finance approves one from the list and rejects one with a reason; a withdrawal by anyone but the proposer is refused (400); the proposer withdraws it', async (t) => {
  const user = `${RUN}-pending`;
  topup(user, 10_000);
  const samToken = await opsToken('sam', ['support']);
  const refs = {
    approve: `${RUN}-pend-approve`,
    reject: `${RUN}-pend-reject`,
    withdraw: `${RUN}-pend-withdraw`,
  };
  for (const [step, reference] of Object.entries(refs)) {
    const proposed = await api('POST', '/ops/v1/adjustments', {
      token: samToken,
      body: { reference, user, direction: 'credit', amount_cents: 100, reason: `e2e: to ${step}` },
    });
    assert.equal(proposed.status, 200, JSON.stringify(proposed.body));
    assert.equal(proposed.body.adjustment.status, 'proposed');
  }

  // fay (finance) sees the three among the pending ones
  const fay = await session(t);
  await signIn(fay.page, 'fay', ['finance']);
  await fay.page.goto(`${CONSOLE_URL}adjustments?page=1&perPage=100`);
  const row = (reference) => fay.page.locator('tbody tr').filter({ hasText: reference });
  for (const reference of Object.values(refs)) await row(reference).waitFor();
  assert.match(await row(refs.approve).innerText(), /\bsam\b/, 'the proposer, named');
  await shot(fay.page, 'adjustments');

  // approves one from its row: +1.00, and it leaves the list
  await row(refs.approve).locator('[data-action=approve-adjustment]').click();
  await fay.page.locator('[data-dialog=approve-adjustment] [data-submit=approve-adjustment]').click();
  await notification(fay.page, refs.approve);
  await row(refs.approve).waitFor({ state: 'detached' });
  const credited = await api('GET', `/ops/v1/users/${encodeURIComponent(user)}`, { token: samToken });
  assert.equal(credited.body.balance_cents, 10_100, JSON.stringify(credited.body));

  // withdrawing sam's proposal as fay: the server's 400 (naming `operator`), shown; it stays
  await row(refs.withdraw).locator('[data-action=withdraw-adjustment]').click();
  const notHers = fay.page.locator('[data-dialog=withdraw-adjustment]');
  await notHers.locator('textarea[name=reason]').first().fill('e2e: not mine to withdraw');
  await notHers.locator('[data-submit=withdraw-adjustment]').click();
  const refused = await notification(fay.page, '请求有误');
  assert.match(refused, /请求有误：操作员 不符合要求/);
  await shot(fay.page, 'withdraw-refused');
  await fay.page.keyboard.press('Escape');
  await notHers.waitFor({ state: 'detached' });

  // rejects one with a reason: it leaves the list
  await row(refs.reject).locator('[data-action=reject-adjustment]').click();
  const reject = fay.page.locator('[data-dialog=reject-adjustment]');
  await reject.locator('textarea[name=reason]').first().fill('e2e: no such case');
  await reject.locator('[data-submit=reject-adjustment]').click();
  await notification(fay.page, refs.reject);
  await row(refs.reject).waitFor({ state: 'detached' });
  await fay.page.reload();
  await row(refs.withdraw).waitFor(); // still pending
  fay.assertClean();

  // sam, its proposer, withdraws it
  const sam = await session(t);
  await signIn(sam.page, 'sam', ['support']);
  await sam.page.goto(`${CONSOLE_URL}adjustments?page=1&perPage=100`);
  const mine = sam.page.locator('tbody tr').filter({ hasText: refs.withdraw });
  await mine.locator('[data-action=withdraw-adjustment]').click();
  const withdrawal = sam.page.locator('[data-dialog=withdraw-adjustment]');
  await withdrawal.locator('textarea[name=reason]').first().fill('e2e: proposed in error');
  await withdrawal.locator('[data-submit=withdraw-adjustment]').click();
  await notification(sam.page, refs.withdraw);
  await mine.waitFor({ state: 'detached' });
  sam.assertClean();

  // none of the three is pending; the balance moved by the approved one only; the day's audit
  // names who closed which, and why
  const pending = await everyItem('/ops/v1/adjustments/pending', {}, samToken);
  assert.deepEqual(pending.filter((item) => Object.values(refs).includes(item.reference)), []);
  const after = await api('GET', `/ops/v1/users/${encodeURIComponent(user)}`, { token: samToken });
  assert.equal(after.body.balance_cents, 10_100, 'rejected and withdrawn ones move no money');
  const audit = await api('GET', `/ops/v1/audit/${businessDay()}`, { token: samToken });
  assert.equal(audit.status, 200, JSON.stringify(audit.body));
  const closed = (reference) =>
    audit.body.entries
      .filter((entry) => entry.subject === reference && entry.action !== 'adjustment_proposed')
      .map((entry) => [entry.action, entry.actor, entry.reason]);
  assert.deepEqual(closed(refs.reject), [['adjustment_rejected', 'fay', 'e2e: no such case']]);
  assert.deepEqual(closed(refs.withdraw), [['adjustment_withdrawn', 'sam', 'e2e: proposed in error']]);
  assert.deepEqual(closed(refs.approve).map(([action, actor]) => [action, actor]), [['adjustment_approved', 'fay']]);
});

test('2: risk holds money out (403 account_held, nothing debited), lifts it from the holds list, the withdrawal goes through', async (t) => {
  const user = `${RUN}-held`;
  topup(user, 10_000);

  const rita = await session(t);
  await signIn(rita.page, 'rita', ['risk']);
  assert.equal(await openUser(rita.page, user), 10_000);
  assert.equal(await rita.page.locator('[data-testid=user-unknown]').count(), 0, 'a user on record is not unknown');
  // a typo is said to be one, not shown as an empty account
  const typo = `nobody-such-user-${Date.now()}`;
  assert.equal(await openUser(rita.page, typo), 0);
  assert.match(await rita.page.locator('[data-testid=user-unknown]').innerText(), /没有用户 nobody-such-user-\d+ 的任何记录/);
  assert.equal(await openUser(rita.page, user), 10_000);
  await rita.page.locator('[data-action=place-hold]').click();
  const dialog = rita.page.locator('[data-dialog=place-hold]');
  // the scope is chosen, never preselected: without one the dialog refuses to submit
  await dialog.locator('textarea[name=reason]').first().fill('e2e: suspicious payout');
  await dialog.locator('[data-submit=place-hold]').click();
  await dialog.getByText('必填').first().waitFor();
  assert.equal(await dialog.locator('input[name=scope]').inputValue(), '', 'no scope preselected');
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

  // the user's page, its audit section (审计记录): the hold placed and lifted, by rita, with their
  // reasons, under the labels the audit page gives those actions (read through an index: polled)
  const trail = rita.page.locator('[data-testid=user-audit]');
  const entry = (label, reason) =>
    trail.locator('tbody tr').filter({ hasText: label }).filter({ has: rita.page.locator('td', { hasText: /^rita$/ }) }).filter({ hasText: reason });
  await until(STEP_MS, "the hold placed and lifted by rita, on the user's audit trail", async () => {
    await openUser(rita.page, user);
    await rita.page.getByRole('tab', { name: '审计记录' }).click();
    await entry('解除冻结', 'e2e: cleared').first().waitFor({ timeout: 3_000 }).catch(() => {});
    return (
      (await entry('冻结账户', 'e2e: suspicious payout').count()) === 1 &&
      (await entry('解除冻结', 'e2e: cleared').count()) === 1
    );
  });
  rita.assertClean();
});

/**
 * One round of 接龙 in `chat`: `sender` sends a lucky packet of `totalCents` in one share per
 * grabber, every grabber grabs it (in their order), and the round waits until settle has settled
 * it. Answers the least lucky grabber (the smallest share, the earliest grab on a tie: the risk
 * rule's Handoff::of), who sends the next round.
 */
async function jielongRound(chat, sender, grabbers, totalCents, tokens) {
  const sent = await api('POST', '/packets', {
    token: tokens[sender],
    idempotencyKey: randomUUID(),
    body: { total_cents: totalCents, count: grabbers.length, chat_id: chat },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const packet = sent.body.packet_id;
  let least;
  for (const grabber of grabbers) {
    const grab = await api('POST', `/packets/${packet}/grab`, { token: tokens[grabber], body: {} });
    assert.equal(grab.status, 200, JSON.stringify(grab.body));
    if (!least || grab.body.amount_cents < least.cents) least = { user: grabber, cents: grab.body.amount_cents };
  }
  // settle (every second) records the grabs and settles the finished packet: best luck is known
  await until(STEP_MS, `packet ${packet} settled`, async () => {
    const view = await api('GET', `/packets/${packet}`, { token: tokens[sender] });
    return view.status === 200 && (view.body.settled === true || view.body.best_luck) ? view.body : null;
  }, 250);
  return { packet, least: least.user };
}

test('3: a 接龙 chain is flagged; risk assigns it to herself and resolves it confirmed; the audit names both steps', async (t) => {
  // Four members of one chat; each round's least lucky grabber sends the next packet, of about
  // the same total, at once: the chain rule (RISK_CHAIN_LINKS=2, scripts/console-e2e.sh) flags
  // two handoffs in a row within RISK_CHAIN_WINDOW_SECONDS and RISK_CHAIN_TOLERANCE_PERCENT.
  const chat = `${RUN}-jielong`;
  const members = ['a', 'b', 'c', 'd'].map((name) => `${RUN}-jl-${name}`);
  const tokens = {};
  for (const member of members) {
    topup(member, 20_000);
    tokens[member] = local('token', member);
  }
  let sender = members[0];
  const packets = [];
  for (const total of [1_000, 1_040, 980, 1_010]) {
    const round = await jielongRound(chat, sender, members.filter((member) => member !== sender), total, tokens);
    packets.push(round.packet);
    sender = round.least;
  }

  // the risk function (beside the local API, every second) raises the flag
  const ritaToken = await opsToken('rita', ['risk']);
  const flag = await until(30_000, `an open chain flag of chat ${chat}`, async () =>
    (await everyItem('/ops/v1/flags', { status: 'open' }, ritaToken)).find(
      (item) => item.rule === 'chain' && item.chat_id === chat,
    ),
  );
  assert.ok(flag.packets.length >= 3, JSON.stringify(flag));
  assert.ok(flag.packets.every((packet) => packets.includes(packet)), JSON.stringify(flag));
  assert.ok(flag.users.every((user) => members.includes(user)), JSON.stringify(flag));

  // rita (risk) finds it among the open flags, assigns it to herself (the assignee left empty)
  const rita = await session(t);
  await signIn(rita.page, 'rita', ['risk']);
  const open = encodeURIComponent(JSON.stringify({ status: 'open' }));
  await rita.page.goto(`${CONSOLE_URL}flags?filter=${open}&page=1&perPage=100`);
  assert.match(await rita.page.locator('#react-admin-title').innerText(), /风险标记/);
  const row = rita.page.locator('tbody tr').filter({ hasText: chat });
  await row.waitFor();
  // what it found, in Chinese from its fields, never the server's English detail
  const summary = (await row.locator('[data-testid=flag-summary]').innerText()).trim();
  assert.equal(summary, `群 ${chat} 里 ${flag.users.length} 人接龙发红包，共 ${flag.packets.length} 个`);
  assert.ok(!(await row.innerText()).includes(flag.detail), 'the detail is not shown as the server wrote it');
  await row.locator('[data-action=assign-flag]').click();
  const assign = rita.page.locator('[data-dialog=assign-flag]');
  assert.equal(await assign.locator('input[name=assignee]').inputValue(), '', 'empty: the signed-in operator');
  await assign.locator('[data-submit=assign-flag]').click();
  await notification(rita.page, /已将 .* 分配给 rita/);
  await row.locator('[data-testid=flag-assignee]').filter({ hasText: /^rita$/ }).waitFor();
  await shot(rita.page, 'flags');

  // a second tab, opened before the flag is resolved, still offers to assign it: its dialog open
  const stale = await rita.page.context().newPage();
  await signIn(stale, 'rita', ['risk']); // a tab of its own signs in of its own (sessionStorage)
  await stale.goto(`${CONSOLE_URL}flags?filter=${open}&page=1&perPage=100`);
  const staleRow = stale.locator('tbody tr').filter({ hasText: chat });
  await staleRow.waitFor();
  await staleRow.locator('[data-action=assign-flag]').click();
  const staleAssign = stale.locator('[data-dialog=assign-flag]');
  await staleAssign.waitFor();

  // and resolves it, confirmed, with a note
  await row.locator('[data-action=resolve-flag]').click();
  const dialog = rita.page.locator('[data-dialog=resolve-flag]');
  await dialog.locator('input[type=radio][value=confirmed]').check();
  await dialog.locator('textarea[name=note]').first().fill('e2e: a 接龙 game, confirmed');
  await dialog.locator('[data-submit=resolve-flag]').click();
  await notification(rita.page, /已处理/);
  await row.waitFor({ state: 'detached' }); // no longer open

  // the stale tab's assignment changes nothing (200, changed: false), and the console says so
  await staleAssign.locator('[data-submit=assign-flag]').click();
  await notification(stale, `${flag.flag_id} 已不是待处理状态，没有变化`);
  await stale.close();

  // the dashboard's hourly view counts the game among today's traffic: its four sends and twelve
  // grabs, once each (the risk function counts the events as the bus delivers them)
  const hoursPath = `/ops/v1/reports/hours/${businessDay()}`;
  const hours = await until(30_000, 'the hourly view counting the game', async () => {
    const answer = await api('GET', hoursPath, { token: ritaToken });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const { sent, grabbed } = answer.body.totals;
    return sent.count >= 4 && grabbed.count >= 12 ? answer.body : undefined;
  });
  assert.equal(hours.hours.length, 24);
  await rita.page.goto(CONSOLE_URL);
  const hoursText = rita.page.locator('[data-testid=hours-text]');
  await hoursText.waitFor();
  const text = await hoursText.innerText();
  const count = (name) => Number(new RegExp(`${name}：(\\d+)（`).exec(text)?.[1] ?? -1);
  assert.ok(count('发出红包') >= hours.totals.sent.count, `sends as the API counts them: ${text}`);
  assert.ok(count('抢到') >= hours.totals.grabbed.count, `grabs as the API counts them: ${text}`);
  assert.ok((await rita.page.locator('[data-testid=hours-counts] .recharts-bar-rectangle').count()) >= 1, 'bars drawn');
  await rita.page.locator('[data-testid=chart-hours]').scrollIntoViewIfNeeded();
  await shot(rita.page, 'dashboard-hours');
  rita.assertClean();

  // the API: confirmed, assigned to and resolved by rita
  const confirmed = (await everyItem('/ops/v1/flags', { status: 'confirmed' }, ritaToken)).find(
    (item) => item.flag_id === flag.flag_id,
  );
  assert.ok(confirmed, `${flag.flag_id} among the confirmed flags`);
  assert.equal(confirmed.status, 'confirmed');
  assert.equal(confirmed.assignee, 'rita');
  assert.equal(confirmed.resolved_by, 'rita');
  assert.equal(confirmed.note, 'e2e: a 接龙 game, confirmed');

  // the day's audit trail: flag_assigned and flag_resolved, by rita
  const day = businessDay();
  const audit = await api('GET', `/ops/v1/audit/${day}`, { token: ritaToken });
  assert.equal(audit.status, 200, JSON.stringify(audit.body));
  const steps = audit.body.entries.filter((entry) => entry.subject === flag.flag_id);
  assert.deepEqual(
    steps.map((entry) => [entry.action, entry.actor]),
    [
      ['flag_assigned', 'rita'],
      ['flag_resolved', 'rita'],
    ],
    JSON.stringify(steps),
  );
});

test('4: finance reads the business day\'s trial balance, downloads the CSV the funds function files, reconciles with no difference, and lists the pending withdrawals', async (t) => {
  const day = businessDay();
  const fay = await session(t);
  await signIn(fay.page, 'fay', ['finance']);
  await fay.page.goto(`${CONSOLE_URL}reports`);
  const report = fay.page.locator(`[data-testid=trial-balance][data-day="${day}"]`);
  await report.waitFor();
  assert.equal(await report.getAttribute('data-balanced'), 'true', await report.innerText());
  assert.equal(await report.getAttribute('data-differences'), '0', await report.innerText());
  const rows = await report.locator('tbody tr').count();
  assert.ok(rows > 0, 'the rows of the trial balance');
  await shot(fay.page, 'reports');

  // Download CSV: the server's text, as the funds function files it. The day is not over, so
  // both are made to the latest safe cut-off (now less a minute): the file is compared with
  // reports made just before and just after it, and made again if the books moved in between.
  let compared = false;
  for (let attempt = 1; attempt <= 3 && !compared; attempt++) {
    const filedBefore = filedTrialBalance(day);
    const [download] = await Promise.all([
      fay.page.waitForEvent('download'),
      fay.page.locator('[data-action=download-trial-balance]').click(),
    ]);
    assert.equal(download.suggestedFilename(), `trial-balance-${day}.csv`);
    const downloaded = readFileSync(await download.path(), 'utf8');
    const filedAfter = filedTrialBalance(day);
    if (filedBefore !== filedAfter) {
      t.diagnostic(`attempt ${attempt}: the books moved while comparing; again`);
      continue;
    }
    assert.equal(downloaded, filedAfter, 'the CSV downloaded is the one the funds function files');
    assert.equal(downloaded.trimEnd().split('\n').length - 1, rows, 'one line a row shown');
    compared = true;
  }
  assert.ok(compared, 'the books held still for one comparison in three');

  // Reconcile now: this run's own table has no difference
  await fay.page.locator('[data-action=reconcile]').click();
  const reconciliation = fay.page.locator('[data-testid=reconciliation]');
  await reconciliation.waitFor();
  assert.equal(await reconciliation.getAttribute('data-differences'), '0', await reconciliation.innerText());
  await fay.page.locator('[data-testid=reconciliation-result]').filter({ hasText: '无差异' }).waitFor();
  await shot(fay.page, 'reconcile');

  // a user's withdrawal, pending: listed, not overdue; the overdue-only filter leaves it out
  const user = `${RUN}-payout`;
  topup(user, 5_000);
  const asked = await withdraw(user, 1_234);
  assert.equal(asked.status, 201, JSON.stringify(asked.body));
  await fay.page.goto(`${CONSOLE_URL}withdrawals?page=1&perPage=100`);
  const pending = fay.page.locator('tbody tr').filter({ hasText: asked.body.withdrawal_id });
  await pending.waitFor();
  assert.equal(cents(await pending.locator('[data-cents]').innerText()), 1_234);
  assert.equal(await pending.locator('[data-overdue=true]').count(), 0, 'asked a moment ago: not overdue');
  await shot(fay.page, 'withdrawals');

  // the CSV export holds what the API lists under the same filter, every page of it
  const finance = await opsToken('fay', ['finance']);
  const exported = async () => {
    const [download] = await Promise.all([
      fay.page.waitForEvent('download'),
      fay.page.locator('button[aria-label="导出"]').click(),
    ]);
    return readFileSync(await download.path(), 'utf8').trimEnd().split('\n');
  };
  const all = (await everyItem('/ops/v1/withdrawals/pending', {}, finance)).map((item) => item.withdrawal_id);
  const lines = await exported();
  assert.ok(lines[0].split(',').includes('withdrawal_id'), `a header: ${lines[0]}`);
  assert.equal(lines.length - 1, all.length, 'a line a pending withdrawal');
  assert.ok(all.every((id) => lines.some((line) => line.includes(id))), 'each pending withdrawal exported');
  await fay.page.locator('input[name=overdue]').check();
  await pending.waitFor({ state: 'detached' });
  assert.equal(await fay.page.locator('tbody tr [data-overdue=false]').count(), 0, 'only overdue ones listed');
  const overdue = await everyItem('/ops/v1/withdrawals/pending', { overdue: 'true' }, finance);
  const overdueLines = overdue.length ? await exported() : [];
  assert.equal(Math.max(overdueLines.length - 1, 0), overdue.length, 'the export keeps the filter');
  assert.ok(!overdueLines.some((line) => line.includes(asked.body.withdrawal_id)), 'not the one on time');

  // a period: requested from tomorrow on leaves today's out; yesterday to today holds it, and
  // the export keeps the period as the API does
  const today = businessDay();
  const [yesterday, tomorrow] = [shiftDay(today, -1), shiftDay(today, 1)];
  await fay.page.locator('input[name=overdue]').uncheck();
  await pending.waitFor();
  await fay.page.locator('input[name=from]').fill(tomorrow);
  await pending.waitFor({ state: 'detached' });
  await fay.page.locator('input[name=from]').fill(yesterday);
  await fay.page.locator('input[name=to]').fill(today);
  await pending.waitFor();
  const period = await everyItem('/ops/v1/withdrawals/pending', { from: yesterday, to: today }, finance);
  const periodLines = await exported();
  assert.equal(periodLines.length - 1, period.length, 'the export keeps the period');
  assert.ok(periodLines.some((line) => line.includes(asked.body.withdrawal_id)), 'this one among them');

  // the payee's statement of yesterday to today: one period, dated at both ends; its CSV the
  // server's for the same period. A statement stops at the latest cut-off (a minute ago), which
  // moves while the test runs: the file is compared with the API's CSV asked for just before and
  // just after it, and downloaded again if the two differ.
  await fay.page.goto(`${CONSOLE_URL}reports`);
  const card = fay.page.locator('[data-testid=statement-card]');
  await card.locator('input[name=user]').fill(user);
  await card.locator('input[name=day]').fill(yesterday);
  await card.locator('input[name=to]').fill(today);
  await card.locator('[data-submit=statement]').click();
  const statement = card.locator(`[data-testid=statement][data-to="${today}"]`);
  await statement.waitFor();
  assert.equal(await statement.getAttribute('data-day'), yesterday);
  const periodCsv = async () => {
    const response = await fetch(`${API_URL}/ops/v1/users/${user}/statements/${yesterday}?to=${today}&format=csv`, {
      headers: { authorization: `Bearer ${finance}` },
    });
    assert.equal(response.status, 200);
    return response.text();
  };
  let matched = false;
  for (let attempt = 1; attempt <= 3 && !matched; attempt++) {
    const before = await periodCsv();
    const [download] = await Promise.all([
      fay.page.waitForEvent('download'),
      card.locator('[data-action=download-statement]').click(),
    ]);
    assert.equal(download.suggestedFilename(), `statement-${user}-${yesterday}-to-${today}.csv`);
    const downloaded = readFileSync(await download.path(), 'utf8');
    const after = await periodCsv();
    if (before !== after) {
      t.diagnostic(`attempt ${attempt}: the cut-off passed a movement while comparing; again`);
      continue;
    }
    assert.equal(downloaded, after, 'the CSV downloaded is the API\'s for the same period');
    const rows = downloaded.trimEnd().split('\n');
    assert.ok(rows[1].startsWith(`${user},${yesterday},opening,`), rows[1]);
    assert.ok(rows.at(-1).startsWith(`${user},${today},closing,`), rows.at(-1));
    matched = true;
  }
  assert.ok(matched, 'the period held still for one comparison in three');
  await shot(fay.page, 'statement-period');

  // the withdrawal a user quotes, found by its id in the search box: pending; once the payments
  // system has paid it, paid with its reference, and no longer a pending one
  const withdrawalId = asked.body.withdrawal_id;
  const find = async () => {
    await fay.page.goto(`${CONSOLE_URL}users`);
    await fay.page.locator('input[name=user]').fill(withdrawalId);
    await fay.page.locator('[data-submit=find-user]').click();
    await fay.page.waitForURL((url) => url.pathname.endsWith(`/withdrawals/${withdrawalId}/show`));
    await fay.page.locator('[data-testid=withdrawal-id]').filter({ hasText: withdrawalId }).waitFor();
  };
  await find();
  await fay.page.locator('[data-testid=withdrawal-status]').filter({ hasText: '处理中' }).waitFor();
  assert.equal((await fay.page.locator('[data-testid=withdrawal-user]').innerText()).trim(), user);
  // the payments system's word, through the funds function (`local funds` prints its log line, then the answer)
  const said = local('funds', JSON.stringify({ withdrawal_paid: { withdrawal_id: withdrawalId, reference: `${RUN}-payout-1` } }));
  const paid = JSON.parse(said.slice(said.indexOf('{')));
  assert.equal(paid.withdrawal?.applied, true, said);
  await find();
  await fay.page.locator('[data-testid=withdrawal-status]').filter({ hasText: '已到账' }).waitFor();
  await fay.page.getByText(`${RUN}-payout-1`).waitFor();
  await shot(fay.page, 'withdrawal');
  const unknown = await api('GET', `/ops/v1/withdrawals/wd-${'0'.repeat(32)}`, { token: finance });
  assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
  fay.assertClean();
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
  // the same packet found by its id in the search box (upper case as some tools print it)
  await page.goto(`${CONSOLE_URL}users`);
  await page.locator('input[name=user]').fill(packet.toUpperCase());
  await page.locator('[data-submit=find-user]').click();
  await page.waitForURL((url) => url.pathname.endsWith(`/packets/${packet}/show`));
  await openUser(page, user);

  // a hold whose reason is markup
  await page.locator('[data-action=place-hold]').click();
  const dialog = page.locator('[data-dialog=place-hold]');
  await dialog.getByRole('combobox').click();
  await page.getByRole('option', { name: '全部' }).click();
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

  // the pending adjustments: the proposal's reason, literal
  await page.goto(`${CONSOLE_URL}adjustments?page=1&perPage=100`);
  const pendingRow = page.locator('tbody tr').filter({ hasText: reference });
  await pendingRow.waitFor();
  assert.ok((await pendingRow.innerText()).includes(XSS), 'the literal text in the pending adjustments');
  await noInjectedImage();

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

test('5b: a packet\'s page sets Redis beside the ledger: its grab row, both amounts, nothing pending, no differences', async (t) => {
  const sender = `${RUN}-sides-sender`;
  const grabber = `${RUN}-sides-grabber`;
  topup(sender, 1_000);
  const sent = await api('POST', '/packets', {
    token: local('token', sender),
    idempotencyKey: randomUUID(),
    body: { total_cents: 300, count: 2 },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const packet = sent.body.packet_id;
  const grab = await api('POST', `/packets/${packet}/grab`, { token: local('token', grabber), body: {} });
  assert.equal(grab.status, 200, JSON.stringify(grab.body));
  const amount = grab.body.amount_cents;

  // GET /ops/v1/packets/{packet_id}/sides, once settle (every second) wrote the grab
  const samToken = await opsToken('sam', ['support']);
  const path = `/ops/v1/packets/${encodeURIComponent(packet)}/sides`;
  const first = await api('GET', path, { token: samToken });
  if (first.status === 404 && first.body?.message === 'Not Found') {
    t.diagnostic(`${path}: no such route in this API yet: the sides check skipped`);
    return;
  }
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const sides = await until(STEP_MS, `the grab of ${packet} persisted`, async () => {
    const answer = await api('GET', path, { token: samToken });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const rows = answer.body.grabs;
    return rows.length === 1 && !rows[0].pending && rows[0].ledger_cents !== null ? answer.body : null;
  }, 250);
  assert.deepEqual(sides.differences, [], JSON.stringify(sides));
  assert.equal(sides.quarantined_at, null);

  // the console: both sides, the grab row with the ledger's and Redis's amount, the all-clear line
  const sam = await session(t);
  await signIn(sam.page, 'sam', ['support']);
  const { page } = sam;
  await page.goto(`${CONSOLE_URL}packets/${encodeURIComponent(packet)}/show`);
  const section = page.locator('[data-testid=packet-sides]');
  await section.waitFor();
  assert.equal(await section.getAttribute('data-differences'), '0', await section.innerText());
  assert.equal(await section.getAttribute('data-quarantined'), 'false');
  assert.equal(await page.locator('[data-testid=packet-sides-ledger][data-present=true]').count(), 1, 'the ledger side');
  assert.equal(await page.locator('[data-testid=packet-sides-live][data-present=true]').count(), 1, 'the Redis side');
  const rows = page.locator('[data-testid=packet-sides-grabs] tbody tr');
  await rows.filter({ hasText: grabber }).waitFor();
  assert.equal(await rows.count(), 1, 'one grab row');
  assert.equal(cents(await rows.locator('.sides-ledger-cents').innerText()), amount, "the ledger's amount");
  assert.equal(cents(await rows.locator('.sides-live-cents').innerText()), amount, "Redis's amount");
  assert.equal(await rows.locator('[data-testid=grab-pending]').count(), 0, 'nothing pending');
  const result = page.locator('[data-testid=packet-sides-result]');
  assert.equal((await result.innerText()).trim(), '两边一致，无差异');
  assert.equal(await page.locator('[data-testid=packet-quarantine]').count(), 0, 'no quarantine banner');
  assert.equal(await page.locator('[data-action=release-packet]').count(), 0, 'nothing to release');
  await shot(page, 'packet-sides');
  sam.assertClean();
});

// A quarantined packet's banner and its release by finance (data-action=release-packet,
// data-dialog=release-packet, data-submit=release-packet) are not tested end to end: nothing in
// the local stack sets a packet aside on demand (no route; `local quarantine` runs a settle pass
// and lists the quarantined ones, it quarantines none).

test('every page has no serious accessibility violation (axe-core, WCAG 2.1 A and AA), dialogs open too', async (t) => {
  const user = `a11y-${randomUUID().slice(0, 8)}`;
  topup(user, 1_000);
  const { page } = await session(t, { bypassCSP: true });
  const found = {};
  await page.goto(`${CONSOLE_URL}login`);
  await page.locator('input[name=operator]').waitFor();
  found.login = await accessibilityViolations(page);
  await signIn(page, 'ada', ['support', 'finance', 'risk', 'admin']);
  const adjustment = { reference: `${user}-case`, user, direction: 'credit', amount_cents: 100, reason: 'a11y' };
  const proposed = await api('POST', '/ops/v1/adjustments', { token: await opsToken('sam', ['support']), body: adjustment });
  assert.equal(proposed.status, 200, JSON.stringify(proposed.body));
  const withdrawal = await withdraw(user, 100);
  assert.equal(withdrawal.status, 201, JSON.stringify(withdrawal.body));
  const pages = ['', 'users', `users/${user}/show`, 'audit', 'adjustments', 'withdrawals', 'flags', 'holds', 'reports'];
  pages.push(`adjustments/${adjustment.reference}/show`, `withdrawals/${withdrawal.body.withdrawal_id}/show`);
  for (const path of pages) {
    await page.goto(`${CONSOLE_URL}${path}`);
    await page.locator('#react-admin-title').filter({ hasText: /\S/ }).waitFor();
    await page.waitForLoadState('networkidle', { timeout: STEP_MS }).catch(() => {});
    found[path || 'dashboard'] = await accessibilityViolations(page);
  }
  // a dialog's form: the hold's
  await page.goto(`${CONSOLE_URL}users/${user}/show`);
  await page.locator('[data-action=place-hold]').click();
  await page.locator('[data-dialog=place-hold] textarea[name=reason]').first().waitFor();
  found['place-hold dialog'] = await accessibilityViolations(page);
  const failing = Object.entries(found).filter(([, violations]) => violations.length > 0);
  assert.deepEqual(failing, [], JSON.stringify(failing, null, 1));
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

/** Starts `handler` on a free port of 127.0.0.1; answers its origin and a close() for t.after. */
async function serve(handler) {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch((error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error?.stack ?? error));
    });
  });
  await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((closed) => {
        server.closeAllConnections();
        server.close(closed);
      }),
  };
}

/** A request's body, as text. */
async function bodyOf(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The built console (console/dist) as CloudFront serves it in AWS, on a free port of 127.0.0.1:
 * the `config.json` the deploy writes, csp.txt with the provider's `origins` added to
 * connect-src, /ops/* to the API on the same origin, index.html for page paths. Answers the
 * console's base URL and the /ops/* calls it passed on.
 */
async function servedConsole(t, config, origins) {
  const dist = join(here, 'dist');
  assert.ok(existsSync(join(dist, 'index.html')), 'the built console (npm run build) in console/dist');
  const csp = CSP.replace("connect-src 'self'", `connect-src 'self' ${origins.join(' ')}`);
  assert.notEqual(csp, CSP, "csp.txt's connect-src 'self'");
  const proxied = [];
  const site = await serve(async (req, res) => {
    const url = new URL(req.url, 'http://console');
    if (url.pathname.startsWith('/ops/')) {
      const headers = { ...req.headers };
      for (const name of ['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'accept-encoding']) {
        delete headers[name];
      }
      const body = ['GET', 'HEAD'].includes(req.method) ? undefined : await bodyOf(req);
      const answer = await fetch(`${API_URL}${req.url}`, {
        method: req.method,
        headers,
        body,
        signal: AbortSignal.timeout(STEP_MS),
      });
      proxied.push({ method: req.method, path: url.pathname, status: answer.status, authorization: req.headers.authorization });
      const out = Object.fromEntries(
        [...answer.headers].filter(([name]) => !['content-encoding', 'content-length', 'transfer-encoding', 'connection'].includes(name)),
      );
      res.writeHead(answer.status, out);
      return res.end(Buffer.from(await answer.arrayBuffer()));
    }
    if (url.pathname === '/console/config.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return res.end(JSON.stringify(config));
    }
    if (!url.pathname.startsWith('/console/') && url.pathname !== '/console') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not found');
    }
    const wanted = resolve(dist, `.${decodeURIComponent(url.pathname.slice('/console'.length)) || '/'}`);
    const inside = wanted.startsWith(`${dist}${sep}`);
    const file = inside && existsSync(wanted) && statSync(wanted).isFile() ? wanted : join(dist, 'index.html');
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-security-policy': csp,
      'cache-control': 'no-cache',
    });
    return res.end(readFileSync(file));
  });
  t.after(site.close);
  return { consoleBase: `${site.origin}/console/`, proxied };
}

test('7: OIDC sign-in: the company account button, through the provider and back; the ID token is the bearer; sign-out', async (t) => {
  // The ID token: an operator's token the local API's authorizer accepts. It is used as the
  // provider's id_token: its `iss` is the discovery's issuer and its `aud` the console's client id
  // when it has them (the local API's tokens name neither: the stand-in's origin and a client id
  // of the test's then). oidc-client-ts reads the id_token's claims (sub, and nonce when it sent
  // one) and does not check its signature: the API does.
  const operator = 'olga';
  const roles = ['risk', 'finance'];
  const idToken = local('ops-token', operator, roles.join(','));
  const claims = JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString('utf8'));
  assert.equal(claims.sub, operator);
  assert.deepEqual(claims['cognito:groups'], roles);
  const clientId = (Array.isArray(claims.aud) ? claims.aud[0] : claims.aud) ?? 'e2e-console';

  // The stand-in OIDC provider. Its requests are kept for the checks.
  const seen = { authorize: [], token: [], jwks: 0, logout: [] };
  const codes = new Map();
  let consoleBase = '';
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*' };
  const provider = await serve(async (req, res) => {
    const url = new URL(req.url, 'http://stand-in');
    const json = (status, value) => {
      res.writeHead(status, { ...cors, 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'GET, POST' });
      return res.end();
    }
    switch (url.pathname) {
      case '/.well-known/openid-configuration':
        return json(200, {
          issuer: claims.iss ?? provider.origin,
          authorization_endpoint: `${provider.origin}/authorize`,
          token_endpoint: `${provider.origin}/token`,
          jwks_uri: `${provider.origin}/jwks`,
          end_session_endpoint: `${provider.origin}/logout`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['HS256'],
          code_challenge_methods_supported: ['S256'],
          scopes_supported: ['openid', 'email', 'profile'],
        });
      case '/authorize': {
        // auto-approves: back to redirect_uri with a code and the state
        const query = Object.fromEntries(url.searchParams);
        seen.authorize.push(query);
        const code = randomUUID();
        codes.set(code, query);
        const back = new URL(query.redirect_uri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', query.state);
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      case '/token': {
        const form = Object.fromEntries(new URLSearchParams((await bodyOf(req)).toString('utf8')));
        seen.token.push({ form, authorization: req.headers.authorization });
        const asked = codes.get(form.code);
        codes.delete(form.code);
        const challenge = form.code_verifier && createHash('sha256').update(form.code_verifier).digest('base64url');
        if (
          form.grant_type !== 'authorization_code' ||
          !asked ||
          form.client_id !== asked.client_id ||
          form.redirect_uri !== asked.redirect_uri ||
          challenge !== asked.code_challenge
        ) {
          return json(400, { error: 'invalid_grant' });
        }
        return json(200, {
          id_token: idToken,
          access_token: `stand-in-access-${randomUUID()}`,
          token_type: 'Bearer',
          expires_in: 3600,
        });
      }
      case '/jwks':
        seen.jwks += 1;
        return json(200, { keys: [] });
      case '/logout': {
        const query = Object.fromEntries(url.searchParams);
        seen.logout.push(query);
        const back = new URL(query.post_logout_redirect_uri ?? consoleBase);
        if (query.state) back.searchParams.set('state', query.state);
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      default:
        return json(404, { error: 'not_found' });
    }
  });
  t.after(provider.close);

  const config = {
    signIn: 'oidc',
    apiBase: '',
    authority: provider.origin,
    clientId,
    rolesClaim: 'cognito:groups',
    businessTimeZone,
  };
  const site = await servedConsole(t, config, [provider.origin]);
  consoleBase = site.consoleBase;

  const { page, problems, assertClean } = await session(t);

  // signed out: the sign-in page, one button for the company account
  await page.goto(consoleBase);
  await page.waitForURL((url) => url.pathname === '/console/login');
  const button = page.locator('[data-submit=sign-in-oidc]');
  assert.equal((await button.innerText()).trim(), '使用公司账号登录');
  assert.equal(await page.locator('input[name=operator]').count(), 0, 'no local form');

  // through the provider (authorize, token) and back: the operator's name and roles
  await button.click();
  await page.getByText(`${operator} (${roles.join(', ')})`).first().waitFor();
  const back = new URL(page.url());
  assert.match(back.pathname, /^\/console\/?$/, 'on the dashboard');
  assert.equal(back.search, '', 'the code and state gone from the URL');

  assert.equal(seen.authorize.length, 1);
  const asked = seen.authorize[0];
  assert.equal(asked.client_id, clientId);
  assert.equal(asked.redirect_uri, consoleBase);
  assert.equal(asked.response_type, 'code');
  assert.equal(asked.scope, 'openid email profile');
  assert.equal(asked.code_challenge_method, 'S256');
  assert.ok(asked.code_challenge && asked.state, 'PKCE and a state');
  assert.equal(seen.token.length, 1, 'one code exchange');
  assert.equal(seen.token[0].form.client_secret, undefined, 'no client secret');
  assert.equal(seen.token[0].authorization, undefined, 'no client authentication');

  // a page that calls the API: 200 through the same origin, the ID token the bearer
  const [holds] = await Promise.all([
    page.waitForResponse((response) => new URL(response.url()).pathname === '/ops/v1/holds'),
    page.goto(`${consoleBase}holds`),
  ]);
  assert.equal(holds.status(), 200);
  await page.locator('#react-admin-title').filter({ hasText: /\S/ }).waitFor();
  const calls = site.proxied.filter((call) => call.path === '/ops/v1/holds');
  assert.ok(calls.length > 0 && calls.every((call) => call.status === 200), JSON.stringify(calls));
  assert.ok(calls.every((call) => call.authorization === `Bearer ${idToken}`), 'the ID token is the bearer');
  assert.equal(await page.locator('.MuiSnackbar-root').filter({ hasText: /401|403|forbidden|没有权限/i }).count(), 0);

  // sign out: on to the provider's end_session_endpoint (OpenID Connect RP-Initiated Logout) and
  // back to the sign-in page
  await page.locator('.RaUserMenu-userButton').click();
  await page.locator('li.logout').click();
  await page.waitForURL((url) => url.pathname === '/console/login');
  await page.locator('[data-submit=sign-in-oidc]').waitFor();
  assert.equal(seen.logout.length, 1, 'the provider signed out too');
  assert.deepEqual(seen.logout[0], { id_token_hint: idToken, client_id: clientId, post_logout_redirect_uri: consoleBase });
  const stored = await page.evaluate(() => Object.keys(sessionStorage).filter((key) => key.startsWith('oidc.user')));
  assert.deepEqual(stored, [], 'the user forgotten');
  t.diagnostic(`jwks fetched ${seen.jwks} time(s) (oidc-client-ts checks no signature)`);
  assert.deepEqual(problems, []);
  assertClean();
});

test("8: OIDC sign-in through a Cognito pool: signing out ends the pool's session at its domain's /logout with client_id and logout_uri", async (t) => {
  // Cognito's endpoints as the stack's operators' pool has them (its issuer, its domain
  // red-packets-<Stage>-<account>), answered in the browser by Playwright: no request leaves the
  // machine. The ID token is the local API's, as in test 7.
  const operator = 'olga';
  const roles = ['risk'];
  const idToken = local('ops-token', operator, roles.join(','));
  const clientId = 'e2e-console';
  const issuer = 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_E2e0Pool1';
  const domain = 'https://red-packets-e2e-123456789012.auth.us-east-1.amazoncognito.com';
  const config = { signIn: 'oidc', apiBase: '', authority: issuer, clientId, rolesClaim: 'cognito:groups', businessTimeZone };
  // The stack's CSP adds the pool's issuer host and its domain (template.yaml's ConsoleHeaders).
  const site = await servedConsole(t, config, ['https://cognito-idp.us-east-1.amazonaws.com', domain]);
  const { page, problems, assertClean } = await session(t);

  const seen = { logout: [] };
  const codes = new Map();
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*' };
  const json = (route, value) =>
    route.fulfill({ status: 200, headers: { ...cors, 'content-type': 'application/json' }, body: JSON.stringify(value) });
  await page.route(`${issuer}/.well-known/openid-configuration`, (route) =>
    json(route, {
      issuer,
      authorization_endpoint: `${domain}/oauth2/authorize`,
      token_endpoint: `${domain}/oauth2/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      end_session_endpoint: `${domain}/logout`,
      response_types_supported: ['code', 'token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'email', 'phone', 'profile'],
    }),
  );
  await page.route(`${domain}/**`, async (route) => {
    const request = route.request();
    const url = new URL(request.url());
    if (request.method() === 'OPTIONS') return route.fulfill({ status: 204, headers: { ...cors, 'access-control-allow-methods': 'GET, POST' } });
    const query = Object.fromEntries(url.searchParams);
    switch (url.pathname) {
      case '/oauth2/authorize': {
        const code = randomUUID();
        codes.set(code, query);
        const back = new URL(query.redirect_uri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', query.state);
        return route.fulfill({ status: 302, headers: { location: back.href } });
      }
      case '/oauth2/token': {
        const form = Object.fromEntries(new URLSearchParams(request.postData() ?? ''));
        const asked = codes.get(form.code);
        codes.delete(form.code);
        if (!asked || form.client_id !== asked.client_id || form.redirect_uri !== asked.redirect_uri) {
          return route.fulfill({ status: 400, headers: cors, body: '{"error":"invalid_grant"}' });
        }
        return json(route, { id_token: idToken, access_token: `cognito-access-${randomUUID()}`, token_type: 'Bearer', expires_in: 3600 });
      }
      case '/logout': {
        // Cognito's contract: client_id and logout_uri, one of the client's sign-out URLs.
        seen.logout.push(query);
        if (query.client_id !== clientId || query.logout_uri !== site.consoleBase) {
          return route.fulfill({ status: 400, contentType: 'text/plain', body: 'Required String parameter logout_uri or client_id is not valid' });
        }
        return route.fulfill({ status: 302, headers: { location: query.logout_uri } });
      }
      default:
        return route.fulfill({ status: 404, headers: cors, body: 'not found' });
    }
  });

  await page.goto(site.consoleBase);
  await page.waitForURL((url) => url.pathname === '/console/login');
  await page.locator('[data-submit=sign-in-oidc]').click();
  await page.getByText(`${operator} (${roles.join(', ')})`).first().waitFor();

  await page.locator('.RaUserMenu-userButton').click();
  await page.locator('li.logout').click();
  await page.waitForURL((url) => url.pathname === '/console/login');
  await page.locator('[data-submit=sign-in-oidc]').waitFor();
  assert.deepEqual(seen.logout, [{ client_id: clientId, logout_uri: site.consoleBase }], "Cognito's parameters alone");
  const stored = await page.evaluate(() => Object.keys(sessionStorage).filter((key) => key.startsWith('oidc.user')));
  assert.deepEqual(stored, [], 'the user forgotten');
  // react-admin's own useEvent guard fires now and then when the provider's endpoints answer at
  // once (Playwright's routes: no network between the redirects): seen in 2 of 5 runs, the page
  // reaching the sign-in page all the same. Any other page error fails the test.
  const known = 'page error: Cannot call an event handler while rendering.';
  assert.deepEqual(problems.filter((problem) => problem !== known), []);
  problems.length = 0;
  assertClean();
});
