// The browser harness of the end-to-end suites of the operators' console (console/e2e/run.mjs)
// and of the H5 app (app/e2e/run.mjs), under node's test runner: Debian's Chromium launched
// through the suite's own playwright-core (passed in: this module needs no install of its own),
// sessions whose pages fail on a dialog, a page error or a CSP violation, axe-core's WCAG
// checks, screenshots, the local binary and straight calls on the API beside the browser.
//
//   API_URL    the local API (default http://127.0.0.1:3000)
//   LOCAL_BIN  the local binary (default target/debug/local), run with this process's environment
//              (AWS_ENDPOINT_URL_DYNAMODB, TABLE_NAME etc. of the running stack, exported by the caller)
//   CHROMIUM   the browser (default /usr/bin/chromium)
//   SCREENSHOTS=1  also save the pages the suite names (`shot`)
//
// Bounded: 240 s a suite in all; each step waits 15 s at most.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const API_URL = (process.env.API_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
export const LOCAL_BIN = process.env.LOCAL_BIN ?? join(root, 'target/debug/local');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOTS = process.env.SCREENSHOTS === '1';
/** The longest one step (a page's wait, a call, a run of the local binary) waits. */
export const STEP_MS = 15_000;
const OVERALL_MS = 240_000;
export const XSS = '<img src=x onerror=alert(1)>';
/** Names of this run's own: the stack may keep data from runs before. */
export const RUN = `e2e${Date.now().toString(36)}`;

export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** `target/debug/local <args>` with this environment (the running stack's). */
export function local(...args) {
  return execFileSync(LOCAL_BIN, args, { encoding: 'utf8', timeout: STEP_MS, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A call straight on the API (a user's or an operator's token): `{status, body}`, the body parsed as JSON when it is. */
export async function api(method, path, { token, body, idempotencyKey } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  const response = await fetch(`${API_URL}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(STEP_MS),
  });
  const text = await response.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: response.status, body: parsed };
}

/** Polls `probe` every `every` ms until it answers something, for at most `ms`. */
export async function until(ms, what, probe, every = 500) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found) return found;
    assert.ok(Date.now() < deadline, `${what}, within ${ms / 1000} s`);
    await sleep(every);
  }
}

/** An element axe-core names: its selector, and for a contrast its colours and ratio. */
function described(node) {
  const data = node.any?.[0]?.data;
  const colours = data?.fgColor ? ` (${data.fgColor} on ${data.bgColor}: ${data.contrastRatio}:1)` : '';
  return `${node.target.join(' ')}${colours}`;
}

/**
 * One suite's browser: `chromium` is its playwright-core's, `site` its package folder (its
 * csp.txt, its node_modules' axe-core), `shots` where SCREENSHOTS=1 saves its pages, `context`
 * the options of every session's browser context (its viewport, a phone's touch). Bounds the
 * whole run, launches Chromium before the suite's tests and closes it after them.
 */
export function browserSuite({ chromium, site, shots, context }) {
  const overall = setTimeout(() => {
    console.error(`e2e: the global timeout of ${OVERALL_MS / 1000} s passed`);
    process.exit(1);
  }, OVERALL_MS);
  overall.unref();

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

  /** axe-core's engine, put into a page by the accessibility tests (a context that bypasses the CSP). */
  const axe = readFileSync(join(site, 'node_modules/axe-core/axe.min.js'), 'utf8');

  return {
    /** The Content-Security-Policy the site is served under (its csp.txt). */
    csp: readFileSync(join(site, 'csp.txt'), 'utf8').trim(),

    /**
     * A fresh browser session (its own sessionStorage), in Chinese unless `options` say otherwise,
     * whose page fails the test on any dialog (an alert an injected script would open), uncaught
     * error, or Content-Security-Policy violation; closed after test `t`.
     */
    async session(t, options = {}) {
      const browserContext = await browser.newContext({ locale: 'zh-CN', ...context, ...options });
      browserContext.setDefaultTimeout(STEP_MS);
      browserContext.setDefaultNavigationTimeout(STEP_MS);
      const page = await browserContext.newPage();
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
        await browserContext.close();
      });
      return {
        page,
        problems,
        assertClean() {
          assert.deepEqual(problems, [], 'no dialog, page error or CSP violation');
        },
      };
    },

    /**
     * The serious and critical violations axe-core finds on the page as it stands, under WCAG
     * 2.1's A and AA rules: each rule's id and the first elements it names.
     */
    async accessibilityViolations(page) {
      // Axe reads colours as painted: a dialog still fading in blends with the page behind it, so
      // every finite animation (a transition) ends first; a spinner's never does, and is left.
      await page.evaluate(() =>
        Promise.all(
          document
            .getAnimations()
            .filter((animation) => animation.effect?.getComputedTiming().iterations !== Infinity)
            .map((animation) => animation.finished.catch(() => {})),
        ),
      );
      if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ content: axe });
      const results = await page.evaluate(() =>
        globalThis.axe.run(document, {
          runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
          resultTypes: ['violations'],
        }),
      );
      return results.violations
        .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
        .map((violation) => `${violation.id}: ${violation.nodes.slice(0, 5).map(described).join(', ')}`);
    },

    /** With SCREENSHOTS=1, saves the page as `<shots>/<name>.png` once its network and animations settle. */
    async shot(page, name, { fullPage = false } = {}) {
      if (!SCREENSHOTS) return;
      mkdirSync(shots, { recursive: true });
      await page.waitForLoadState('networkidle', { timeout: STEP_MS }).catch(() => {});
      await sleep(400);
      await page.screenshot({ path: join(shots, `${name}.png`), fullPage });
    },
  };
}
