/** The bytes of a file, or of every file under a folder (symbolic links counted as links). */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function sizeOf(p) {
  const st = lstatSync(p);
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const e of readdirSync(p)) n += sizeOf(join(p, e));
  return n;
}
