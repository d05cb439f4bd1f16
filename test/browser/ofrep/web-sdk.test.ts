/**
 * OFREP bulk evaluation through the published browser clients (docs/ofrep.md): @openfeature/web-sdk
 * with @openfeature/ofrep-web-provider, bundled with esbuild and run in headless Chromium
 * (playwright-core, Debian's /usr/bin/chromium) against a live node. Initial values, a change
 * picked up through the SSE stream without polling, and a 304 on an unchanged poll. The page is
 * served at the node's own origin (intercepted by the browser), so no CORS is involved; the last
 * test serves it from another origin, which works only with VEXIL_CORS_ORIGINS.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from 'esbuild';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { projectPath } from '../../../src/util/paths.js';
import type { TestNode } from '../../helpers/node.js';
import { until } from '../../helpers/cluster.js';
import { createOrg, evalKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} missing (apt-get install -y chromium): browser suite skipped`;
const BULK = '/ofrep/v1/evaluate/flags';

async function bundle(): Promise<string> {
  const out = await build({
    entryPoints: [projectPath('test', 'browser', 'ofrep', 'web', 'page.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

async function launch(t: Tap): Promise<BrowserContext> {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-chromium-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(async () => {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return ctx;
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const pageHtml = (script: string) => `<!doctype html><html><body><script>${script.replace(/<\/script/gi, '<\\/script')}</script></body></html>`;

/**
 * A page running the bundled SDK, at the node's origin (`script`: the page is intercepted) or at
 * an application origin that serves it (an origin string); every OFREP exchange is recorded.
 */
async function sdkPage(ctx: BrowserContext, n: TestNode, scriptOrOrigin: string) {
  const served = /^https?:\/\//.test(scriptOrOrigin);
  const origin = served ? scriptOrOrigin : n.url;
  const page: Page = await ctx.newPage();
  const exchanges: { method: string; path: string; status: number }[] = [];
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/ofrep/')) exchanges.push({ method: r.request().method(), path: u.pathname, status: r.status() });
  });
  if (!served) {
    await page.route(`${origin}/__sdk__`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: pageHtml(scriptOrOrigin) }),
    );
  }
  await page.goto(`${origin}/__sdk__`);
  return { page, exchanges };
}


t.test('web SDK with the OFREP web provider in Chromium', { skip }, async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['production'], ['web']);
  const admin = org.adminKey;
  must(t, await postFlag(n, admin, 'banner'), 201, 'banner');
  must(t, await postConfig(n, admin, 'banner', {
    rules: [{ priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'gold' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
  }), 200, 'banner config');
  must(t, await postFlag(n, admin, 'theme', { type: 'string', variants: [{ key: 'light', value: 'light', valueType: 'string' }, { key: 'dark', value: 'dark', valueType: 'string' }] }), 201, 'theme');
  must(t, await postConfig(n, admin, 'theme', { defaultVariantKey: 'dark' }), 200, 'theme config');
  const ek = await evalKey(n, admin, 'web');
  const script = await bundle();
  const browser = await launch(t);
  const context = { targetingKey: 'user-7', stage: 'production', plan: 'gold' };

  t.test('initial values, then a change through the SSE stream without polling', async (t) => {
    const { page, exchanges } = await sdkPage(browser, n, script);
    await page.evaluate((s) => (window as any).vexilTest.init(s), { baseUrl: n.url, key: ek, context, changeDetection: 'sse' });
    const details = (flag: string, fallback: boolean | string) => page.evaluate(([f, d]) => (window as any).vexilTest.details(f, d), [flag, fallback] as const);
    t.same(await details('banner', false), { value: true, variant: 'on', reason: 'TARGETING_MATCH', errorCode: null, reasonCode: 'rule_matched' }, 'banner: the rule for plan gold');
    t.same(await details('theme', 'none'), { value: 'dark', variant: 'dark', reason: 'STATIC', errorCode: null, reasonCode: 'default' }, 'theme: the default');
    const missing = await details('nope', 'fallback');
    t.equal(missing.value, 'fallback', 'unknown flag: the code default');
    t.equal(missing.errorCode, 'FLAG_NOT_FOUND');
    const events = await until(async () => exchanges.filter((e) => e.path === '/ofrep/v1/events'), (l) => l.length > 0, 3000);
    t.same(events.map((e) => e.status), [200], 'the provider opened the advertised event stream');
    const bulksBefore = exchanges.filter((e) => e.path === BULK).length;
    t.equal(bulksBefore, 1, 'one bulk request so far');

    must(t, await postConfig(n, admin, 'theme', { defaultVariantKey: 'light' }), 200, 'theme → light');
    const started = Date.now();
    const after = await until(() => details('theme', 'none'), (d) => d.value === 'light', 3000);
    t.equal(after.value, 'light', `the change reached the page after ${Date.now() - started} ms`);
    const changed = await page.evaluate(() => (window as any).vexilTest.changes());
    t.same(changed[changed.length - 1], ['theme'], 'ConfigurationChanged names the changed flag');
    await new Promise((r) => setTimeout(r, 300));
    const bulks = exchanges.filter((e) => e.path === BULK);
    t.equal(bulks.length, bulksBefore + 1, 'exactly one more bulk request: the refetch the stream asked for (no polling)');
    t.equal(bulks[bulks.length - 1].status, 200);
    await page.close();
  });

  t.test('polling: an unchanged poll is a 304', async (t) => {
    const { page, exchanges } = await sdkPage(browser, n, script);
    await page.evaluate((s) => (window as any).vexilTest.init(s), { baseUrl: n.url, key: ek, context, changeDetection: 'polling', pollInterval: 300 });
    const polls = await until(async () => exchanges.filter((e) => e.path === BULK), (l) => l.length >= 3, 5000);
    t.equal(polls[0].status, 200, 'first bulk: 200');
    t.ok(polls.length >= 3, `${polls.length} bulk requests`);
    t.same([...new Set(polls.slice(1).map((p) => p.status))], [304], 'unchanged polls: 304');
    t.equal(exchanges.filter((e) => e.path === '/ofrep/v1/events').length, 0, 'no stream in polling mode');
    must(t, await postConfig(n, admin, 'banner', { defaultVariantKey: 'on', rules: [] }), 200, 'banner change');
    const seen = await until(() => page.evaluate(() => (window as any).vexilTest.details('banner', false)), (d) => d.reason === 'STATIC', 3000);
    t.equal(seen.reasonCode, 'default', 'a change: the next poll is a 200 with the new answer');
    await page.close();
  });
});

t.test('from another origin: the web provider works with VEXIL_CORS_ORIGINS, and only with it', { skip }, async (t) => {
  const browser = await launch(t);
  const script = await bundle();
  // The application's own origin: another port on the loopback address (a public origin calling
  // 127.0.0.1 would meet Chromium's local-network rules, which are not what this tests).
  const app = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(pageHtml(script));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  // Chromium keeps its connections to the page's origin open; close them, or close() waits ~100 s.
  t.teardown(() => new Promise<void>((r) => {
    app.close(() => r());
    app.closeAllConnections();
  }));
  const APP = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  for (const cors of [true, false]) {
    const n = await startNode(t, cors ? { env: { VEXIL_CORS_ORIGINS: APP } } : {});
    const org = await createOrg(n, ['production'], ['web']);
    must(t, await postFlag(n, org.adminKey, 'banner'), 201, 'banner');
    must(t, await postConfig(n, org.adminKey, 'banner', { defaultVariantKey: 'on' }), 200, 'banner config');
    const ek = await evalKey(n, org.adminKey, 'web');
    const { page, exchanges } = await sdkPage(browser, n, APP);
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const init = await page.evaluate(
      (s) => (window as any).vexilTest.init(s).then(() => 'ready', (e: Error) => `failed: ${e?.message ?? e}`),
      { baseUrl: n.url, key: ek, context: { targetingKey: 'u', stage: 'production' }, changeDetection: 'sse' },
    );
    const details = () => page.evaluate(() => (window as any).vexilTest.details('banner', false));
    if (cors) {
      t.equal(init, 'ready', `${APP} → ${n.url}: the provider is ready`);
      t.same((await details()).value, true, 'and evaluates');
      await until(async () => exchanges.filter((e) => e.path === '/ofrep/v1/events'), (l) => l.length > 0, 3000);
      must(t, await postConfig(n, org.adminKey, 'banner', { defaultVariantKey: 'off' }), 200, 'banner → off');
      const after = await until(() => details(), (d) => d.value === false, 3000);
      t.equal(after.variant, 'off', 'a change arrives through the cross-origin event stream');
    } else {
      t.not(init, 'ready', `without VEXIL_CORS_ORIGINS the browser refuses the answers (${init})`);
      t.ok(errors.some((e) => /CORS/i.test(e)), 'Chromium reports a CORS error');
      t.equal((await details()).value, false, 'the code default');
    }
    await page.close();
  }
});
