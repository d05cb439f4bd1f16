/**
 * The review policies on the admin UI's Organization page (docs/change-requests.md, "Protecting an
 * environment") in a real browser against a real node: each environment's policy shown, an Admin
 * key saving one (read back over REST), a key without Admin seeing them read-only, axe-core on the
 * page. Screenshot: policies.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { projectPath } from '../../../src/util/paths.js';
import { createKey, startTestNode, type TestNode } from '../../helpers/node.js';
import { browserTest, expectAccessible, openBrowser, screenshotsOn, type Browser } from '../../helpers/browser.js';

browserTest('review policies in the admin UI', async (t: Test) => {
  t.setTimeout(180_000);
  const n: TestNode = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000' } });
  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;
  const signIn = async (key: string) => {
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Organization', exact: true }).click();
    await page.getByRole('heading', { level: 2, name: 'Review policies' }).waitFor();
  };

  await signIn(n.adminKey);
  const prod = page.getByRole('form', { name: 'Review policy of production' });
  await prod.getByRole('spinbutton', { name: 'Required approvals (production)' }).waitFor();
  t.equal(await prod.getByRole('spinbutton', { name: 'Required approvals (production)' }).inputValue(), '0', 'the default policy');
  await prod.getByRole('spinbutton', { name: 'Required approvals (production)' }).fill('2');
  await prod.getByRole('checkbox', { name: 'Admin may bypass (production)' }).check();
  await prod.getByRole('button', { name: 'Save policy' }).click();
  await page.getByText('Saved the policy of production.').waitFor();
  await page.getByText('Protected: changes need 2 approvals; an Admin may bypass with a reason.').waitFor();
  const r = await n.req('GET', '/api/environments/production/policy', { key: n.adminKey });
  t.same(r.body, { environment: 'production', requiredApprovals: 2, allowSelfApproval: false, allowBypass: true }, 'saved on the server');
  if (screenshotsOn) await page.getByRole('region', { name: 'Review policies' }).screenshot({ path: join(projectPath('docs', 'screenshots'), 'policies.png') });
  // Out of range: said in words, nothing sent.
  await prod.getByRole('spinbutton', { name: 'Required approvals (production)' }).fill('7');
  await prod.getByRole('button', { name: 'Save policy' }).click();
  await page.getByText('Required approvals must be a whole number from 0 to 5.').waitFor();
  t.equal((await n.req('GET', '/api/environments/production/policy', { key: n.adminKey })).body.requiredApprovals, 2);
  await prod.getByRole('spinbutton', { name: 'Required approvals (production)' }).fill('2');
  t.equal(await page.getByText('Required approvals must be a whole number from 0 to 5.').count(), 0, 'the message goes with the edit');
  await expectAccessible(t, page, 'organization page with policies');

  // A writer without Admin sees the policies, read-only.
  const writer = await createKey(n, { permissions: ['CanRead', 'CanWrite'] });
  await page.getByRole('button', { name: /sign out/i }).click().catch(() => undefined);
  await signIn(writer);
  const ro = page.getByRole('form', { name: 'Review policy of production' });
  t.ok(await ro.getByRole('spinbutton', { name: 'Required approvals (production)' }).isDisabled(), 'read-only for a key without Admin');
  t.equal(await ro.getByRole('button', { name: 'Save policy' }).count(), 0, 'no Save');
});
