/**
 * Flag insights in the admin UI (docs/insights.md, "Lifecycle"), in a real browser against a real
 * node: a flag's page shows its status, its evaluations per environment over the last 14 days as
 * a chart and when each environment last evaluated it; the Cleanup page lists the stale and unused
 * flags with their reasons, sorted by last evaluation either way; the purpose is chosen when a
 * flag is created; axe-core on each page. Counts and usage are written into the counting half's
 * tables with the timestamps each case needs. Screenshots: flag-insights, cleanup.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { projectPath } from '../../../src/util/paths.js';
import { createFlag, startTestNode, type TestNode } from '../../helpers/node.js';
import { appears, browserTest, expectAccessible, openBrowser, screenshot, screenshotsOn, type Browser } from '../../helpers/browser.js';

browserTest('flag insights in the admin UI', run);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function run(t: Test) {
  t.setTimeout(300_000);
  const n: TestNode = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000', VEXIL_INSIGHTS_STATUS_MS: '200' } });
  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;
  const db = n.node.db;
  const orgId = (await db.query<{ id: string }>("select id from organizations where name = 'default'"))[0].id;
  const now = Date.now();
  const hourNow = Math.floor(now / HOUR) * HOUR;

  const usage = (flag: string, stage: string, variant: string, first: number, last: number) =>
    db.query(
      `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at) values ($1, $2, $3, $4, $5, $6)
       on conflict (org_id, flag_name, stage, variant) do update set first_at = excluded.first_at, last_at = excluded.last_at`,
      [orgId, flag, stage, variant, new Date(first), new Date(last)],
    );

  // checkout-v2: evaluated hourly for 14 days, a daily cycle in production, a smaller one in development.
  t.equal((await createFlag(n, 'checkout-v2', { description: 'The new checkout', purpose: 'experiment' })).status, 201);
  const values: string[] = [];
  const params: unknown[] = [orgId];
  for (let h = 0; h < 14 * 24; h++) {
    const start = hourNow - h * HOUR;
    const hourOfDay = new Date(start).getUTCHours();
    const prod = Math.round(600 + 500 * Math.sin(((hourOfDay - 6) / 24) * 2 * Math.PI) + (h % 7) * 15);
    const dev = Math.round(60 + 40 * Math.cos((hourOfDay / 24) * 2 * Math.PI));
    for (const [stage, count, variant] of [['production', Math.round(prod * 0.7), 'on'], ['production', prod - Math.round(prod * 0.7), 'off'], ['development', dev, 'on']] as const) {
      params.push(stage, variant, new Date(start), count);
      const k = params.length;
      values.push(`($1, 'checkout-v2', $${k - 3}, 'web', $${k - 2}, 'hour', $${k - 1}, $${k})`);
    }
  }
  await db.query(`insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count) values ${values.join(', ')}`, params);
  await usage('checkout-v2', 'production', 'on', now - 14 * DAY, now - 60_000);
  await usage('checkout-v2', 'production', 'off', now - 14 * DAY, now - 60_000);
  await usage('checkout-v2', 'development', 'on', now - 14 * DAY, now - 3 * HOUR);

  // Cleanup candidates: one variant for 30 days; not evaluated for 10 and for 20 days; one never evaluated (new, not listed).
  t.equal((await createFlag(n, 'old-banner', { description: 'Holiday banner' })).status, 201);
  await usage('old-banner', 'production', 'on', now - 30 * DAY, now - 5 * 60_000);
  t.equal((await createFlag(n, 'legacy-export', { purpose: 'operational' })).status, 201);
  await usage('legacy-export', 'production', 'on', now - 90 * DAY, now - 10 * DAY);
  await usage('legacy-export', 'production', 'off', now - 90 * DAY, now - 12 * DAY);
  t.equal((await createFlag(n, 'beta-reports', { purpose: 'permission' })).status, 201);
  await usage('beta-reports', 'development', 'on', now - 60 * DAY, now - 20 * DAY);
  t.equal((await createFlag(n, 'never-used')).status, 201);

  await t.test('a flag page: status, chart per environment, last evaluations', async (t) => {
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(n.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    await page.goto(n.url + '/ui/flags/checkout-v2');
    const usageCard = page.getByRole('region', { name: 'Usage' });
    t.ok(await appears(usageCard.getByText('Active', { exact: true })), 'status: Active');
    const chart = usageCard.getByRole('img', { name: /Evaluations per hour over the last 14 days/ });
    t.ok(await appears(chart), 'a chart with a text alternative');
    t.equal(await chart.locator('polyline').count(), 2, 'one line per environment');
    t.match(await usageCard.locator('.legend').innerText(), /development: [\d,]+\s+production: [\d,]+/);
    const lastSeen = await usageCard.locator('.last-seen').innerText();
    t.match(lastSeen, /development/);
    t.match(lastSeen, /production/);
    t.notMatch(lastSeen, /never/, 'both environments evaluated it');
    t.match(await usageCard.innerText(), /Purpose\s+experiment/);
    await expectAccessible(t, page, 'flag page with insights');
    if (screenshotsOn) await usageCard.screenshot({ path: join(projectPath('docs', 'screenshots'), 'flag-insights.png') });
    await page.goto(n.url + '/ui/flags/never-used');
    const fresh = page.getByRole('region', { name: 'Usage' });
    t.ok(await appears(fresh.getByText('New: never evaluated')), 'a flag never evaluated: new');
    t.ok(await appears(fresh.getByText('never').first()), 'no environment evaluated it');
    t.ok(await appears(fresh.getByText('No evaluations in the last 14 days.')), 'no evaluation: said in words');
    t.equal(await fresh.getByRole('img').count(), 0, 'no empty chart');
  });

  await t.test('the Cleanup page: stale and unused flags with reasons, sortable by last evaluation', async (t) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cleanup', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Cleanup' }).waitFor();
    const table = page.getByRole('table', { name: 'Stale and unused flags' });
    // Usage stamped days in the past reaches the status job at its next full read (60 rounds of 200 ms here).
    for (let i = 0; i < 30 && !(await appears(table, 1000)); i++) await page.getByRole('button', { name: 'Refresh' }).click();
    t.ok(await appears(table), 'a table of candidates');
    const names = () => table.locator('tbody th[scope="row"]').allInnerTexts();
    t.same(await names(), ['beta-reports', 'legacy-export', 'old-banner'], 'oldest last evaluation first');
    const rows = await table.locator('tbody tr').allInnerTexts();
    t.match(rows[0], /Unused[\s\S]*not evaluated in any environment recently/);
    t.match(rows[2], /Potentially stale[\s\S]*serves one variant to every evaluation/);
    t.match(await page.getByText(/stale, \d+ unused/).innerText(), /1 stale, 2 unused/);
    await page.getByRole('button', { name: /Last evaluated/ }).click();
    t.same(await names(), ['old-banner', 'legacy-export', 'beta-reports'], 'newest first after sorting');
    t.equal(await table.locator('th[aria-sort]').getAttribute('aria-sort'), 'descending');
    await expectAccessible(t, page, 'cleanup page');
    await page.getByRole('button', { name: /Last evaluated/ }).click();
    await screenshot(page, 'cleanup');
  });

  await t.test('a new flag gets its purpose from the form', async (t) => {
    await page.goto(n.url + '/ui/');
    await page.getByRole('button', { name: 'New flag' }).click();
    await page.getByLabel('Name').fill('kill-payments');
    await page.getByLabel('Purpose').selectOption('killSwitch');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { level: 1, name: 'kill-payments' }).waitFor();
    const r = await n.req('GET', '/api/flags/kill-payments', { key: n.adminKey });
    t.equal(r.body.purpose, 'killSwitch');
    t.equal(await page.getByLabel('Purpose').inputValue(), 'killSwitch', 'the details form shows it');
  });

  t.same(b.problems, [], 'no console errors');
}
