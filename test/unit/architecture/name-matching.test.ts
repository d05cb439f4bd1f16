/**
 * Name matching has one owner, src/domain/name-matching.ts (`sameName`, `findName`, `nameKey`):
 * the evaluation stage, the portable folder, the protocols over them and the provider compare or
 * key environment and application names through it, never with an ad-hoc `toLowerCase()` (whose
 * copies drift: one lower-cases both sides, another one side only). A new one there fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';

const ROOT = projectPath();
const DIRS = ['src/evaluation', 'src/engine', 'src/ofrep', 'src/feed', 'src/graphql', 'packages/openfeature-provider/src', 'workers'];

const tsFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

t.test('no ad-hoc case folding of names on the evaluation path or in the provider', async (t) => {
  const files = DIRS.flatMap(tsFiles);
  t.ok(files.includes('src/engine/engine.ts') && files.includes('packages/openfeature-provider/src/index.ts'), 'the files are read');
  const found: string[] = [];
  for (const file of files) {
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (/\.toLowerCase\(\)|\.toUpperCase\(\)|localeCompare\([^)]*sensitivity/.test(line)) found.push(`${relative(ROOT, join(ROOT, file))}:${i + 1}: ${line.trim()}`);
      });
  }
  t.same(found, [], 'every name comparison goes through src/domain/name-matching.ts');
});
