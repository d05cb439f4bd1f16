/**
 * The admin UI's Webhooks page (docs/webhooks.md) in a real browser against a real node and a
 * real receiver: create an endpoint (a bad URL refused in words, the secret shown once), Send
 * test, the deliveries of the endpoint, Replay, disable and enable, with axe-core. Screenshot:
 * webhooks.
 */
import type { Test } from 'tap';
import { startTestNode, type TestNode } from '../../helpers/node.js';
import { appears, browserTest, expectAccessible, openBrowser, screenshot, type Browser } from '../../helpers/browser.js';
import { Receiver, verify, WEBHOOK_ENV } from '../../helpers/webhooks.js';
import { until } from '../../helpers/cluster.js';

browserTest('webhooks in the admin UI', run);

async function run(t: Test) {
  t.setTimeout(180_000);
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  const n: TestNode = await startTestNode(t, { env: WEBHOOK_ENV });
  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;

  await page.goto(n.url + '/ui/');
  await page.getByLabel('Management key').fill(n.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks', exact: true });
  t.ok(await appears(link), 'navigation link "Webhooks"');
  await link.click();
  await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
  t.ok(await appears(page.getByText('No endpoint yet.')), 'none yet: said so');
  await expectAccessible(t, page, 'the empty webhooks page');

  // A bad URL: the server's 400, in words beside the URL field; nothing saved.
  await page.getByRole('button', { name: 'New endpoint', exact: true }).click();
  const form = page.getByRole('form', { name: 'New endpoint' });
  await form.getByRole('textbox', { name: 'URL' }).fill('ftp://example.com/x');
  await form.getByRole('button', { name: 'Create', exact: true }).click();
  t.ok(await appears(form.getByText(/url must be https/)), 'the refusal is shown');
  t.equal((await n.req('GET', '/api/webhooks', { key: n.adminKey })).body.length, 0, 'nothing saved');

  await form.getByRole('textbox', { name: 'URL' }).fill(`${rx.url}/ui`);
  await form.getByRole('textbox', { name: 'Events' }).fill('flag.*, webhook.test');
  await form.getByRole('textbox', { name: 'Description' }).fill('Team chat');
  await form.getByRole('button', { name: 'Create', exact: true }).click();
  const secretBox = page.getByRole('textbox', { name: 'Signing secret' });
  t.ok(await appears(secretBox), 'the secret is shown once');
  const secret = await secretBox.inputValue();
  t.match(secret, /^whsec_/);
  await page.getByRole('button', { name: 'I have stored it' }).click();
  t.notOk(await page.getByText(secret).count(), 'and gone after');

  const row = page.getByRole('row', { name: new RegExp(`${rx.url}/ui`) });
  await row.getByRole('button', { name: 'Send test' }).click();
  t.ok(await appears(page.getByText(/Test message msg_[0-9a-f]+ queued/)), 'the test is queued');
  await until(async () => rx.at('/ui').length, (c) => c >= 1, 5000);
  t.equal(verify(secret, rx.at('/ui')[0]).type, 'webhook.test', 'the receiver got it, signed with the secret shown');
  // The deliveries (opened by Send test); refresh until the attempt is recorded.
  const deliveries = page.getByRole('region', { name: /Deliveries to/ });
  t.ok(await appears(deliveries), 'the deliveries are shown');
  const attemptRow = deliveries.getByRole('row', { name: /webhook\.test/ });
  for (let i = 0; i < 20 && (await attemptRow.count()) === 0; i++) {
    await deliveries.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForTimeout(250);
  }
  t.ok(await appears(attemptRow), 'the attempt is listed');
  t.ok(await appears(attemptRow.getByText('204')), 'with its status');
  await attemptRow.first().getByRole('button', { name: 'Replay' }).click();
  t.ok(await appears(page.getByText(/queued again/)), 'Replay queues it again');
  await until(async () => rx.at('/ui').length, (c) => c >= 2, 5000);
  t.equal(rx.at('/ui')[1].headers['webhook-id'], rx.at('/ui')[0].headers['webhook-id'], 'the same message');
  await page.waitForTimeout(1200);
  await expectAccessible(t, page, 'the webhooks page with deliveries');
  await screenshot(page, 'webhooks');

  await row.getByRole('button', { name: 'Disable' }).click();
  t.ok(await appears(row.getByText('Disabled')), 'disabled');
  t.equal((await n.req('GET', '/api/webhooks', { key: n.adminKey })).body[0].enabled, false);
  await row.getByRole('button', { name: 'Enable' }).click();
  t.ok(await appears(row.getByText('Enabled')), 'enabled again');
}
