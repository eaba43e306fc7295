// Fails when openapi.yaml changed without `npm run generate`: run from a package folder as its
// `npm run check-generated`, it runs the `generate` script of the package that owns the generated
// schema (read from its package.json, so the flags are written once) into a temporary file and
// compares it with the committed one. The owner is the package itself (sdk/), or the folder named
// as the argument (console/ passes ../sdk: it compiles against the SDK's schema); the
// openapi-typescript run is the caller's own install, which must be the version the owner pins.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

const here = process.cwd();
const owner = resolve(here, process.argv[2] ?? '.');
const name = basename(owner);
const manifest = JSON.parse(readFileSync(join(owner, 'package.json'), 'utf8'));
const generate = manifest.scripts.generate.split(/\s+/);
const output = generate.indexOf('-o') + 1;
if (generate[0] !== 'openapi-typescript' || output === 0) {
  throw new Error(`${name}/package.json: generate is not "openapi-typescript <spec> -o <file> [flags]"`);
}
const pinned = manifest.devDependencies?.['openapi-typescript'];
const installed = JSON.parse(readFileSync(join(here, 'node_modules/openapi-typescript/package.json'), 'utf8')).version;
if (pinned !== installed) {
  throw new Error(`${basename(here)}/ runs openapi-typescript ${installed}, ${name}/package.json pins ${pinned}: keep them the same`);
}
const committed = join(owner, generate[output]);
const dir = mkdtempSync(join(tmpdir(), `${name}-schema-`));
const fresh = join(dir, 'schema.d.ts');
const args = generate.slice(1).map((arg, i) => (i + 1 === output ? fresh : arg));
try {
  execFileSync(join(here, 'node_modules/.bin/openapi-typescript'), args, {
    cwd: owner,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const want = readFileSync(fresh, 'utf8');
  let have = '';
  try {
    have = readFileSync(committed, 'utf8');
  } catch {
    // missing: reported below
  }
  const shown = `${name}/${generate[output]}`;
  if (want !== have) {
    try {
      execFileSync('diff', ['-u', committed, fresh], { stdio: 'inherit' });
    } catch {
      // diff exits 1 on a difference; its output is the report
    }
    console.error(`${shown} is not what openapi.yaml generates: run \`npm run generate\` in ${name}/ and commit it`);
    process.exitCode = 1;
  } else {
    console.log(`${shown} matches openapi.yaml`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
