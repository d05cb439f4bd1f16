/**
 * The admin UI's "Change requests" page (docs/change-requests.md) in a real browser against a real
 * node: the list, a request's diff per target, Approve showing the hash reviewed (two approvers),
 * Apply (read back over REST), the history with the reviews, a preview with its transitions, and
 * axe-core on the page. Screenshot: change-requests.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { projectPath } from '../../../src/util/paths.js';
import { createKey, startTestNode, type TestNode } from '../../helpers/node.js';
import { browserTest, expectAccessible, openBrowser, screenshotsOn, type Browser } from '../../helpers/browser.js';
import { propose, toggle } from '../../helpers/change-requests.js';

browserTest('change requests in the admin UI', async (t: Test) => {
  t.setTimeout(180_000);
  const n: TestNode = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000' } });
  const admin = n.adminKey;
  const ok = (r: { status: number; text: string }, s: number, what: string) => t.equal(r.status, s, `${what}: ${r.text.slice(0, 200)}`);
  ok(await n.req('POST', '/api/flags', { key: admin, body: { name: 'checkout', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] } }), 201, 'flag');
  ok(await n.req('POST', '/api/flags/checkout/configs', { key: admin, body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 } }), 200, 'config');
  ok(await n.req('PUT', '/api/environments/production/policy', { key: admin, body: { requiredApprovals: 2 } }), 200, 'protect production');
  const writer = await createKey(n, { name: 'writer', permissions: ['CanRead', 'CanWrite'] });
  const a1 = await createKey(n, { name: 'alice', permissions: ['CanRead', 'CanApprove'] });
  const a2 = await createKey(n, { name: 'bob', permissions: ['CanRead', 'CanApprove'] });
  const cr = (await propose(n, writer, [{ op: 'upsertConfig', flag: 'checkout', input: { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 } }], 'Checkout on in production')).body;

  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;
  const signIn = async (key: string) => {
    await page.goto(n.url + '/ui/');
    // Signed out first: the key lives in sessionStorage.
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Change requests', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Change requests' }).waitFor();
  };
  const review = async (key: string) => {
    await signIn(key);
    await page.getByRole('link', { name: 'Checkout on in production' }).click();
    await page.getByRole('heading', { level: 1, name: 'Checkout on in production' }).waitFor();
    await page.getByText(`You are reviewing revision 1, hash ${cr.hash}.`).waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(`Approved hash ${cr.hash.slice(0, 12)}.`).waitFor();
  };

  await signIn(writer);
  const row = page.getByRole('row', { name: /Checkout on in production/ });
  await row.waitFor({ timeout: 5000 }).catch(async () => t.fail(`the list: ${await page.locator('main').textContent()}`));
  t.match(await row.textContent(), /open, awaiting review/);
  await review(a1);
  await review(a2);

  await signIn(writer);
  await page.getByRole('link', { name: 'Checkout on in production' }).click();
  const diff = page.getByRole('group', { name: 'Change to checkout · production' });
  await diff.waitFor();
  t.match(await diff.textContent(), /"defaultVariantKey": "off"[\s\S]*"defaultVariantKey": "on"/, 'before and after');
  await page.getByText('production: 2 of 2 approvals').waitFor();
  await page.getByRole('button', { name: 'Preview', exact: true }).click();
  await page.getByText('1 of 1 evaluations change.').waitFor();
  const tr = page.getByRole('table', { name: 'Transitions' });
  t.match(await tr.textContent(), /checkout.*production.*off.*on.*1/);
  await expectAccessible(t, page, 'a change request');
  if (screenshotsOn) await page.screenshot({ path: join(projectPath('docs', 'screenshots'), 'change-requests.png'), fullPage: true });
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByText('Applied.').waitFor();
  const flag = await n.req('GET', '/api/flags/checkout', { key: admin });
  t.equal(flag.body.configs[0].defaultVariantKey, 'on', 'applied on the server');
  const reviews = page.getByRole('table', { name: 'Reviews' });
  t.match(await reviews.textContent(), /alice[\s\S]*approve[\s\S]*bob[\s\S]*approve/);

  // In a protected environment a flag page's Save becomes "Propose change": a change request, nothing written.
  await page.goto(n.url + '/ui/flags/checkout');
  const cfg = page.getByRole('region', { name: 'Configuration production' });
  await cfg.getByRole('button', { name: 'Propose change' }).waitFor();
  t.equal(await cfg.getByRole('button', { name: 'Save', exact: true }).count(), 0, 'no direct Save');
  await cfg.getByRole('spinbutton', { name: /Rollout/ }).first().fill('40');
  await cfg.getByRole('button', { name: 'Propose change' }).click();
  await page.getByText('production: proposed as a change request; it applies once reviewed.').waitFor();
  const all = (await n.req('GET', '/api/change-requests?state=open', { key: admin })).body;
  t.equal(all.length, 1, 'one open request');
  t.match(all[0].changes, [{ op: 'upsertConfig', flag: 'checkout', input: { stage: 'production', rolloutPercentage: 40 } }]);
  t.equal((await n.req('GET', '/api/flags/checkout', { key: admin })).body.configs[0].rolloutPercentage, 100, 'nothing written');
  await page.getByRole('link', { name: 'Open the change request' }).click();
  await page.getByRole('heading', { level: 1, name: 'checkout: production' }).waitFor();
});
