// Fails when openapi.yaml changed without `npm run generate`: regenerates the client's types into
// a temporary file and compares it with the committed src/api/schema.d.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const committed = join(here, 'src/api/schema.d.ts');
const dir = mkdtempSync(join(tmpdir(), 'console-schema-'));
const fresh = join(dir, 'schema.d.ts');
try {
  execFileSync(
    join(here, 'node_modules/.bin/openapi-typescript'),
    [join(here, '../openapi.yaml'), '-o', fresh],
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
    console.error(
      'console/src/api/schema.d.ts is not what openapi.yaml generates: run `npm run generate` in console/ and commit it',
    );
    process.exitCode = 1;
  } else {
    console.log('console/src/api/schema.d.ts matches openapi.yaml');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
