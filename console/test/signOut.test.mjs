// The URL signing out of the console leaves for (src/signOut.ts), under node's test runner:
// Cognito's /logout with its own parameters, another provider's end_session_endpoint with
// OpenID Connect's. src/signOut.ts is TypeScript with no imports: transpiled here by the
// project's typescript, then imported.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import ts from 'typescript';

const source = readFileSync(new URL('../src/signOut.ts', import.meta.url), 'utf8');
const { outputText } = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
});
const { signOutUrl, isCognitoIssuer } = await import(`data:text/javascript,${encodeURIComponent(outputText)}`);

// As the stack deploys it: the pool's issuer, its domain (template.yaml's OperatorsUserPoolDomain,
// red-packets-<Stage>-<account>), the console's app client and ConsoleUrl, the client's only
// sign-out URL (its LogoutURLs; scripts/tests/test_sign_in.py holds the two equal).
const pool = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123xyz';
const domain = 'https://red-packets-prod-123456789012.auth.eu-west-1.amazoncognito.com';
const consoleUrl = 'https://d111111abcdef8.cloudfront.net/console/';
const request = { clientId: '4tq1ig5e8j4lsk1u6bqk0tq1ig', returnTo: consoleUrl, idToken: 'header.claims.signature' };

function parts(href) {
  const url = new URL(href);
  return { endpoint: `${url.origin}${url.pathname}`, query: Object.fromEntries(url.searchParams) };
}

test('Cognito: /logout on the pool domain with client_id and logout_uri, nothing of OpenID Connect', () => {
  const cognito = {
    issuer: pool,
    authorization_endpoint: `${domain}/oauth2/authorize`,
    end_session_endpoint: `${domain}/logout`,
  };
  for (const metadata of [cognito, { ...cognito, end_session_endpoint: undefined }]) {
    assert.deepEqual(parts(signOutUrl(metadata, request)), {
      endpoint: `${domain}/logout`,
      query: { client_id: request.clientId, logout_uri: consoleUrl },
    });
  }
  const href = signOutUrl(cognito, request);
  assert.ok(!href.includes('post_logout_redirect_uri') && !href.includes('id_token_hint'), href);
  assert.ok(href.includes(`logout_uri=${encodeURIComponent(consoleUrl)}`), 'logout_uri encoded as one parameter');
});

test("Cognito on a custom domain: /logout where its authorization endpoint is", () => {
  const metadata = { issuer: pool, authorization_endpoint: 'https://auth.example.com/oauth2/authorize' };
  assert.equal(parts(signOutUrl(metadata, request)).endpoint, 'https://auth.example.com/logout');
});

test('another provider: its end_session_endpoint, by RP-Initiated Logout', () => {
  const metadata = {
    issuer: 'https://sso.example.com/oauth2/default',
    authorization_endpoint: 'https://sso.example.com/oauth2/default/v1/authorize',
    end_session_endpoint: 'https://sso.example.com/oauth2/default/v1/logout?tenant=ops',
  };
  assert.deepEqual(parts(signOutUrl(metadata, request)), {
    endpoint: 'https://sso.example.com/oauth2/default/v1/logout',
    query: {
      tenant: 'ops',
      id_token_hint: request.idToken,
      client_id: request.clientId,
      post_logout_redirect_uri: consoleUrl,
    },
  });
});

test('no way to sign out at the provider: undefined (the console forgets its tokens only)', () => {
  assert.equal(signOutUrl({ issuer: 'https://sso.example.com' }, request), undefined);
  assert.equal(signOutUrl({ issuer: pool, end_session_endpoint: `${domain}/logout` }, request), undefined);
});

test("Cognito is told by the issuer's whole form, not by a look-alike", () => {
  assert.ok(isCognitoIssuer(pool));
  assert.ok(isCognitoIssuer('https://cognito-idp.cn-north-1.amazonaws.com.cn/cn-north-1_AbC123xyz'));
  for (const issuer of [
    undefined,
    'https://cognito-idp.eu-west-1.amazonaws.com.evil.example/eu-west-1_AbC123xyz',
    'https://sso.example.com/cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123xyz',
    `${pool}/extra`,
    'http://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123xyz',
  ]) {
    assert.equal(isCognitoIssuer(issuer), false, issuer);
  }
});
