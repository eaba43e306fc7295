// The console's one list of the operators' roles (src/roles.ts) against openapi.yaml's
// OperatorRole, under node's test runner, with the sign-in page's labels of each. The sources
// are TypeScript with no runtime imports: transpiled here by the project's typescript, then imported.
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

const { ROLES } = await load('../src/roles.ts');
const { zh } = await load('../src/i18n/zh.ts');
const { en } = await load('../src/i18n/en.ts');

const contract = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8');

/** openapi.yaml's OperatorRole enum, in its order. */
function contractRoles() {
  const schema = contract.slice(contract.indexOf('\n    OperatorRole:\n'));
  const enumLine = /^ {6}enum: \[([^\]]*)\]$/m.exec(schema.slice(0, schema.indexOf('description:')));
  assert.ok(enumLine, "openapi.yaml's OperatorRole has an enum: [...] line");
  return enumLine[1].split(/,\s*/);
}

test("the console's roles are openapi.yaml's OperatorRole, in its order", () => {
  assert.deepEqual([...ROLES], contractRoles());
});

test("each operators' operation names its roles (x-roles) among them, admin always", () => {
  const operations = contract.match(/^ {6}security: \[\{ operators: \[\] \}\]\n {6}x-roles: \[.*\]$/gm) ?? [];
  assert.equal(operations.length, contract.match(/^ {6}security: \[\{ operators: \[\] \}\]$/gm).length, 'x-roles on every one');
  assert.ok(operations.length >= 28, `${operations.length} operations`);
  for (const operation of operations) {
    const roles = /x-roles: \[(.*)\]/.exec(operation)[1].split(/,\s*/);
    for (const role of roles) assert.ok(ROLES.includes(role), `${role} in ${operation}`);
    assert.ok(roles.includes('admin'), operation);
  }
});

test('every role has its label in Chinese and in English', () => {
  for (const [name, messages] of [['zh', zh], ['en', en]]) {
    assert.deepEqual(Object.keys(messages.console.roles).sort(), [...ROLES].sort(), name);
    for (const role of ROLES) assert.ok(messages.console.roles[role].length > 0, `${name}: ${role}`);
  }
});
