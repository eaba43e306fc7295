// The console's sentence per error code (src/api/sentence.ts, src/i18n/*.ts), under node's test
// runner: every code openapi.yaml's Error lists has a sentence in Chinese and in English, and no
// answer's sentence carries the server's own message (English, for engineers). The sources are
// TypeScript with no runtime imports: transpiled here by the project's typescript, then imported.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import ts from 'typescript';

async function load(path) {
  const source = readFileSync(new URL(path, import.meta.url), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  return import(`data:text/javascript,${encodeURIComponent(outputText)}`);
}

const { sentence } = await load('../src/api/sentence.ts');
const { zh } = await load('../src/i18n/zh.ts');
const { en } = await load('../src/i18n/en.ts');

/** The codes of openapi.yaml's Error schema (its `code` enum). */
function contractCodes() {
  const contract = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8');
  const schema = contract.slice(contract.indexOf('\n    Error:\n'));
  const list = schema.slice(schema.indexOf('enum:') + 5, schema.indexOf('message:'));
  return [...list.matchAll(/^\s+- (\w+)$/gm)].map((match) => match[1]);
}

/** polyglot's translate as react-admin runs it: a dotted key, %{name} arguments, `_` when missing. */
const translator = (messages) => (key, args = {}) => {
  const found = key.split('.').reduce((node, part) => node?.[part], messages);
  const text = typeof found === 'string' ? found : args._ ?? key;
  return text.replace(/%\{(\w+)\}/g, (_, name) => String(args[name] ?? `%{${name}}`));
};

const SERVER = 'SERVER MESSAGE, in English for engineers';

test('every code the server can answer has a sentence in Chinese and in English', () => {
  const codes = contractCodes();
  assert.ok(codes.length >= 20 && codes.includes('forbidden') && codes.includes('internal'), codes.join());
  for (const [name, messages] of [['zh', zh], ['en', en]]) {
    for (const code of codes) {
      const text = messages.console.errors[code];
      assert.equal(typeof text, 'string', `${name} has no sentence for ${code}`);
      assert.ok(text.length > 0, `${name}'s sentence for ${code} is empty`);
    }
    for (const extra of ['forbidden_roles', 'invalid_request_field', 'http']) {
      assert.equal(typeof messages.console.errors[extra], 'string', `${name}: console.errors.${extra}`);
    }
  }
});

test("a refusal is said in the console's language, never in the server's words", () => {
  const translate = translator(zh);
  for (const code of contractCodes()) {
    const said = sentence(400, { error: { code, message: SERVER } }, translate);
    assert.ok(!said.includes(SERVER) && !said.includes('console.'), `${code}: ${said}`);
    assert.equal(said, zh.console.errors[code], code);
  }
  const forbidden = { error: { code: 'forbidden', message: 'this needs one of the roles finance, admin', roles: ['finance', 'admin'] } };
  assert.equal(sentence(403, forbidden, translate), '你没有权限这样做：需要以下角色之一：财务 (finance)、管理员 (admin)');
  const field = { error: { code: 'invalid_request', message: SERVER, field: 'user' } };
  assert.equal(sentence(400, field, translate), '请求有误：用户 ID 不符合要求，请检查后重试');
  const unknownField = sentence(400, { error: { code: 'invalid_request', message: SERVER, field: 'zzz' } }, translate);
  assert.match(unknownField, /zzz/);
  const newer = sentence(418, { error: { code: 'a_code_of_a_newer_server', message: SERVER } }, translate);
  assert.equal(newer, '请求失败（HTTP 418），请稍后再试');
  assert.equal(sentence(429, { message: 'Too Many Requests' }, translate), '请求失败（HTTP 429），请稍后再试');
  assert.equal(sentence(403, forbidden, translator(en)), 'You may not do this: it needs one of the roles Finance, Admin');
});
