// tsc emits no .d.ts of its own inputs: put the generated src/schema.d.ts beside dist/index.d.ts,
// which imports its types.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
copyFileSync(join(here, 'src/schema.d.ts'), join(here, 'dist/schema.d.ts'));
