// Fails when openapi.yaml changed without `npm run generate`: regenerates the client's types into
// a temporary file and compares it with the committed src/schema.d.ts (as console/ does), with
// the same flags as `npm run generate` (package.json).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const committed = join(here, 'src/schema.d.ts');
const dir = mkdtempSync(join(tmpdir(), 'sdk-schema-'));
const fresh = join(dir, 'schema.d.ts');
try {
  execFileSync(
    join(here, 'node_modules/.bin/openapi-typescript'),
    // --default-non-nullable=false: a request's defaulted fields stay optional (SendRequest's kind,
    // split, expires_in_seconds, members_only), as the server treats them
    [join(here, '../openapi.yaml'), '-o', fresh, '--default-non-nullable=false'],
    { cwd: here, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const want = readFileSync(fresh, 'utf8');
  let have = '';
  try {
    have = readFileSync(committed, 'utf8');
  } catch {
    // missing: reported below
  }
  if (want !== have) {
    try {
      execFileSync('diff', ['-u', committed, fresh], { stdio: 'inherit' });
    } catch {
      // diff exits 1 on a difference; its output is the report
    }
    console.error('sdk/src/schema.d.ts is not what openapi.yaml generates: run `npm run generate` in sdk/ and commit it');
    process.exitCode = 1;
  } else {
    console.log('sdk/src/schema.d.ts matches openapi.yaml');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
