/**
 * `@vexil/openfeature-provider` as a user gets it (packages/openfeature-provider/README.md): `npm
 * pack` makes a tarball holding the bundle, its declarations and the README, and no source; it
 * installs into a fresh project offline (the SDK and its core packed from this repository's
 * node_modules, so no registry is needed) and, imported by name from plain ESM, evaluates against a
 * running node.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';
import { createOrg, evalKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';

const run = promisify(execFile);
const ROOT = projectPath();

/** `npm pack <dir>` into `dest`; the tarball's path and its file list. */
async function pack(dir: string, dest: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', dir, '--pack-destination', dest, '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 16 << 20 });
  const [info] = JSON.parse(stdout);
  return { tarball: join(dest, info.filename), files: info.files.map((f: { path: string }) => f.path).sort() };
}

t.test('the packed provider installs offline and evaluates against a node', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-provider-install-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const provider = await pack(join(ROOT, 'packages/openfeature-provider'), dir);
  t.same(provider.files, ['README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json'], 'the tarball: the bundle, its declarations, the README');
  const sdk = await pack(join(ROOT, 'node_modules/@openfeature/server-sdk'), dir);
  const core = await pack(join(ROOT, 'node_modules/@openfeature/core'), dir);

  const app = join(dir, 'app');
  rmSync(app, { recursive: true, force: true });
  await run('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'provider-install-check',
      private: true,
      type: 'module',
      dependencies: { '@vexil/openfeature-provider': `file:${provider.tarball}`, '@openfeature/server-sdk': `file:${sdk.tarball}`, '@openfeature/core': `file:${core.tarball}` },
    }),
  );
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: app, env: { ...process.env, npm_config_cache: join(dir, 'npm-cache') } });
  t.same(readdirSync(join(app, 'node_modules/@vexil/openfeature-provider')).sort(), ['README.md', 'dist', 'package.json'], 'installed');

  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web']);
  must(t, await postFlag(n, org.adminKey, 'checkout'), 201, 'flag');
  must(t, await postConfig(n, org.adminKey, 'checkout', { rules: [{ id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'config');
  const key = await evalKey(n, org.adminKey, 'web');

  writeFileSync(
    join(app, 'check.mjs'),
    `import { OpenFeature } from '@openfeature/server-sdk';
import { VexilProvider } from '@vexil/openfeature-provider';
await OpenFeature.setProviderAndWait(new VexilProvider({ url: process.env.VEXIL_URL, key: process.env.VEXIL_KEY, stage: 'production' }));
const client = OpenFeature.getClient();
const nl = await client.getBooleanDetails('checkout', false, { targetingKey: 'user-1', country: 'NL' });
const de = await client.getBooleanDetails('checkout', true, { targetingKey: 'user-1', country: 'DE' });
const missing = await client.getBooleanDetails('nope', true, { targetingKey: 'user-1' });
console.log(JSON.stringify({ nl, de, missing, status: client.providerStatus }));
await OpenFeature.close();
`,
  );
  const { stdout } = await run('node', ['check.mjs'], { cwd: app, env: { ...process.env, VEXIL_URL: n.url, VEXIL_KEY: key }, timeout: 20_000 });
  const out = JSON.parse(stdout);
  t.equal(out.status, 'READY');
  t.match(out.nl, { value: true, variant: 'on', reason: 'TARGETING_MATCH', flagMetadata: { reasonCode: 'rule_matched' } }, 'a rule match');
  t.match(out.de, { value: false, variant: 'off', reason: 'STATIC', flagMetadata: { reasonCode: 'default' } }, 'the default');
  t.match(out.missing, { value: true, errorCode: 'FLAG_NOT_FOUND' }, 'a missing flag');

  // The declarations type-check a consumer's code.
  writeFileSync(
    join(app, 'check.ts'),
    `import { VexilProvider, type VexilProviderOptions } from '@vexil/openfeature-provider';
const options: VexilProviderOptions = { url: 'http://x', key: 'k', stage: 'production', cacheFile: '/tmp/f.json' };
const p: VexilProvider = new VexilProvider(options);
const v: boolean = p.resolve('f', false, { targetingKey: 'u' }, 'boolean').value;
export const out = v;
`,
  );
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const typed = await run('node', [tsc, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', 'check.ts'], { cwd: app }).then(
    () => '',
    (err) => String(err.stdout),
  );
  t.equal(typed, '', 'a TypeScript consumer compiles against dist/index.d.ts');
});
