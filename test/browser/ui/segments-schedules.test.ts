/**
 * The admin UI for segments and scheduled changes (docs/api.md, "Segments" and "Scheduled
 * changes"; README, "Web UI") in a real browser against a real node: the Segments page (create,
 * edit with the condition editor, delete, and a delete refused while a rule uses the segment), a
 * rule choosing a segment and the REST evaluation changing because of it, and a flag's schedules
 * (an on/off change and a whole configuration applied a few seconds later, cancelling, the
 * server's 400, 404 and 409 in words), with axe-core on each page. Screenshots: segments,
 * rule-segment, schedules, schedule-config, flag-schedules.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Locator, Page } from 'playwright-core';
import { projectPath } from '../../../src/util/paths.js';
import { createFlag, createKey, evaluate, upsertConfig, startTestNode, type TestNode } from '../../helpers/node.js';
import { appears, browserTest, expectAccessible, expectExactNames, openBrowser, screenshot, screenshotsOn, type Browser, type Role } from '../../helpers/browser.js';

browserTest('segments and scheduled changes in the admin UI', run);

async function run(t: Test) {
  t.setTimeout(300_000);

  const n: TestNode = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000' } });
  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;
  const admin = { key: n.adminKey };

  const axe = (tt: Test, what: string) => expectAccessible(tt, page, what);
  const exactNames = (tt: Test, controls: [Role, string][], scope: Pick<Page, 'getByRole'> = page) => expectExactNames(tt, scope, controls);
  /** A screenshot of one part of the page into docs/screenshots/, when screenshots are on. */
  const shoot = async (what: Locator, name: string) => {
    if (screenshotsOn) await what.screenshot({ path: join(projectPath('docs', 'screenshots'), `${name}.png`) });
  };
  /** The API's message that `control` is described by (its error, placed beside it). */
  const describedText = async (control: Locator) => {
    const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(' ').filter(Boolean);
    return (await Promise.all(ids.map((id) => page.locator(`#${id}`).innerText()))).join(' ');
  };
  /** A `datetime-local` value `ms` from now (the browser runs in UTC), to the second. */
  const inLocal = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 19);

  // A flag on in production for nobody yet (no rule; default off), a key that evaluates it.
  t.equal((await createFlag(n, 'new-search', { description: 'The new search page' })).status, 201);
  t.equal((await upsertConfig(n, 'new-search', { stage: 'production', enabled: true, defaultVariantKey: 'off' })).status, 200);
  const evalKey = await createKey(n, { name: 'web-eval', permissions: ['CanEvaluate'], application: 'default' });
  const variantFor = async (context: Record<string, unknown>) => {
    const r = await evaluate(n, evalKey, 'new-search', { userId: 'u-1', stage: 'production', context });
    if (r.status !== 200) throw new Error(`evaluate: ${r.status} ${r.text}`);
    return r.body.variant === true ? 'on' : r.body.variant === false ? 'off' : JSON.stringify(r.body);
  };

  await t.test('sign in: a "Segments" link', async (t) => {
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(n.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments', exact: true });
    t.ok(await appears(link), 'navigation link "Segments"');
    await link.click();
    await page.getByRole('heading', { level: 1, name: 'Segments' }).waitFor();
    t.ok(await appears(page.getByText('No segments yet.')), 'none yet: said so');
    t.equal(await link.getAttribute('aria-current'), 'page', 'the link is marked current');
    await axe(t, 'the empty segments page');
  });

  await t.test('create segments, checked before and by the server', async (t) => {
    await page.getByRole('button', { name: 'New segment', exact: true }).click();
    const form = page.getByRole('form', { name: 'New segment' });
    await exactNames(t, [['textbox', 'Name'], ['combobox', 'Application'], ['textbox', 'Description'], ['button', 'Add condition'], ['button', 'Create'], ['button', 'Cancel']], form);
    t.equal(await form.getByRole('combobox', { name: 'Application' }).inputValue(), '', 'organization-wide by default for an unscoped key');
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('beta testers');
    await form.getByRole('button', { name: 'Add condition' }).click();
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    t.match(await describedText(form.getByRole('textbox', { name: 'Name', exact: true })), /must start with a letter or digit/, 'a bad name: said beside Name');
    t.match(await describedText(form.getByRole('textbox', { name: 'Field of condition 1', exact: true })), /Enter a field path/, 'an empty field path: said beside it');
    t.equal((await n.req('GET', '/api/segments', admin)).body.length, 0, 'nothing saved');

    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('beta-testers');
    await form.getByRole('combobox', { name: 'Application' }).selectOption('default');
    await form.getByRole('textbox', { name: 'Description' }).fill('People in the beta programme');
    await form.getByRole('textbox', { name: 'Field of condition 1', exact: true }).fill('plan');
    await form.getByRole('combobox', { name: 'Operator of condition 1', exact: true }).selectOption('in');
    await form.getByRole('textbox', { name: 'Value of condition 1', exact: true }).fill('beta');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    // The server's 400 lands beside the control that caused it.
    const value1 = form.getByRole('textbox', { name: 'Value of condition 1', exact: true });
    await form.locator('[aria-invalid="true"]').first().waitFor();
    t.match(await describedText(value1), /conditions\[0\]\.value: operator 'in' needs an array value|needs an array value/, "the API's message beside Value");
    await form.getByRole('combobox', { name: 'Operator of condition 1', exact: true }).selectOption('==');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('row', { name: /beta-testers/ }).waitFor();
    t.match((await n.req('GET', '/api/segments/beta-testers', admin)).body, {
      name: 'beta-testers',
      application: 'default',
      description: 'People in the beta programme',
      conditions: [{ field: 'plan', operator: '==', value: 'beta' }],
    }, 'saved as entered');

    await page.getByRole('button', { name: 'New segment', exact: true }).click();
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('beta-testers');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    t.match(await form.getByRole('alert').first().innerText(), /already exists/, 'the 409 for a taken name, in words');
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('staff');
    await form.getByRole('textbox', { name: 'Description' }).fill('Our own people');
    await form.getByRole('button', { name: 'Add condition' }).click();
    await form.getByRole('textbox', { name: 'Field of condition 1', exact: true }).fill('email');
    await form.getByRole('combobox', { name: 'Operator of condition 1', exact: true }).selectOption('ends_with');
    await form.getByRole('textbox', { name: 'Value of condition 1', exact: true }).fill('@example.com');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('row', { name: /staff/ }).waitFor();
    t.match((await n.req('GET', '/api/segments/staff', admin)).body, { application: null, conditions: [{ field: 'email', operator: 'ends_with', value: '@example.com' }] }, 'an organization-wide segment');
    await exactNames(t, [['button', 'Edit'], ['button', 'Delete']], page.getByRole('row', { name: /staff/ }));
  });

  await t.test('edit a segment: description and conditions', async (t) => {
    await page.getByRole('row', { name: /beta-testers/ }).getByRole('button', { name: 'Edit' }).click();
    const form = page.getByRole('form', { name: 'Edit beta-testers' });
    await form.waitFor();
    t.equal(await form.getByRole('textbox', { name: 'Field of condition 1', exact: true }).inputValue(), 'plan', 'its conditions are shown');
    t.equal(await form.getByRole('textbox', { name: 'Value of condition 1', exact: true }).inputValue(), 'beta');
    await form.getByRole('textbox', { name: 'Description' }).fill('Beta programme, Benelux');
    await form.getByRole('button', { name: 'Add condition' }).click();
    await form.getByRole('textbox', { name: 'Field of condition 2', exact: true }).fill('country');
    await form.getByRole('combobox', { name: 'Operator of condition 2', exact: true }).selectOption('in');
    await form.getByRole('textbox', { name: 'Value of condition 2', exact: true }).fill('["NL", "BE", "LU"]');
    await axe(t, 'the segment editor');
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Segment beta-testers saved.').waitFor();
    t.match((await n.req('GET', '/api/segments/beta-testers', admin)).body, {
      description: 'Beta programme, Benelux',
      conditions: [{ field: 'plan', operator: '==', value: 'beta' }, { field: 'country', operator: 'in', value: ['NL', 'BE', 'LU'] }],
    }, 'saved');
    // The list reloads after the "saved" message: wait for it (a busy machine is slower than the message).
    const row = page.getByRole('row', { name: /beta-testers/ });
    await row.filter({ hasText: 'country in ["NL","BE","LU"]' }).waitFor({ timeout: 15_000 }).catch(() => undefined);
    t.match(await row.innerText(), /country in \["NL","BE","LU"\]/, 'the list shows the new condition');
    await screenshot(page, 'segments');
    await axe(t, 'the segments page');
  });

  await t.test('a rule chooses a segment by name; the evaluation changes because of it', async (t) => {
    t.equal(await variantFor({ plan: 'beta', country: 'NL' }), 'off', 'before: off for everyone');
    await page.goto(n.url + '/ui/flags/new-search');
    const prod = page.getByRole('region', { name: 'Configuration production' });
    await prod.waitFor();
    await prod.getByRole('button', { name: 'Add rule' }).click();
    await prod.getByRole('button', { name: 'Remove condition 1 of rule 1', exact: true }).click();
    const chooser = prod.getByRole('combobox', { name: 'Segment for rule 1', exact: true });
    await exactNames(t, [['combobox', 'Segment for rule 1'], ['button', 'Add segment to rule 1']], prod);
    t.same(await chooser.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)), ['beta-testers', 'staff'], "the segments the key can see for this flag's application");
    await chooser.selectOption('beta-testers');
    await prod.getByRole('button', { name: 'Add segment to rule 1' }).click();
    t.ok(await appears(prod.getByRole('list', { name: 'Segments of rule 1' }).getByText('beta-testers')), 'chosen');
    t.same(await chooser.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)), ['staff'], 'a chosen one is not offered again');
    await prod.getByRole('combobox', { name: 'Variant of rule 1, allocation 1' }).selectOption('on');
    await shoot(prod, 'rule-segment');
    await axe(t, 'the rule editor with a segment');
    await prod.getByRole('button', { name: 'Save', exact: true }).click();
    await prod.getByText('production: saved.').waitFor();
    const cfg = (await n.req('GET', '/api/flags/new-search', admin)).body.configs.find((c: { stage: string }) => c.stage === 'production');
    t.match(cfg.rules, [{ conditions: [], segments: ['beta-testers'], allocations: [{ variantKey: 'on', percentage: 100 }] }], 'saved with segments');
    t.equal(await variantFor({ plan: 'beta', country: 'NL' }), 'on', 'in the segment: on');
    t.equal(await variantFor({ plan: 'beta', country: 'DE' }), 'off', 'outside it (country): off');
    t.equal(await variantFor({ plan: 'free', country: 'NL' }), 'off', 'outside it (plan): off');

    await page.reload();
    const list = page.getByRole('region', { name: 'Configuration production' }).getByRole('list', { name: 'Segments of rule 1' });
    t.ok(await appears(list.getByText('beta-testers')), "an existing rule's segments show");
    t.ok(await appears(page.getByRole('button', { name: 'Remove segment beta-testers from rule 1', exact: true })), 'each removable');
  });

  await t.test("a segment in use cannot be deleted: the server's message names the flag", async (t) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments', exact: true }).click();
    const row = page.getByRole('row', { name: /beta-testers/ });
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await row.getByRole('alert').waitFor();
    t.match(await row.getByRole('alert').innerText(), /Segment 'beta-testers' is used by the rules of flag 'new-search'/, 'the 409 in words, naming the flag');
    t.equal((await n.req('GET', '/api/segments/beta-testers', admin)).status, 200, 'still there');
    await axe(t, 'the segments page with a refused delete');

    const staff = page.getByRole('row', { name: /staff/ });
    await staff.getByRole('button', { name: 'Delete', exact: true }).click();
    await staff.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('Segment staff deleted.').waitFor();
    t.equal(await page.getByRole('row', { name: /staff/ }).count(), 0, 'gone from the list');
    t.equal((await n.req('GET', '/api/segments/staff', admin)).status, 404, 'deleted');
  });

  await t.test('schedule an on/off change a few seconds ahead: applied, and the page shows it', async (t) => {
    await page.goto(n.url + '/ui/flags/new-search');
    const panel = page.getByRole('region', { name: 'Scheduled changes' });
    t.ok(await appears(panel.getByText('No scheduled changes.')), 'none yet');
    await exactNames(t, [['combobox', 'Stage'], ['textbox', 'Client ID'], ['radio', 'Enable'], ['radio', 'Disable'], ['radio', 'Whole configuration'], ['button', 'Schedule']], panel);
    t.equal(await panel.getByLabel('Time', { exact: true }).count(), 1, 'a field labelled exactly "Time"');
    await axe(t, 'the flag page with the schedules panel');

    // Checked before asking: a time in the past.
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(-60_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    t.match(await describedText(panel.getByLabel('Time', { exact: true })), /in the future/, 'a past time: said beside Time');
    // The server's refusal: enabling a configuration that does not exist.
    await panel.getByRole('combobox', { name: 'Stage' }).selectOption('development');
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(3_600_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    t.match(await panel.getByRole('alert').first().innerText(), /no configuration for stage 'development'/, "the server's message in words");

    await panel.getByRole('combobox', { name: 'Stage' }).selectOption('production');
    await panel.getByRole('radio', { name: 'Disable' }).check();
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(4_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    await panel.getByText(/^Scheduled: production, disable at/).waitFor();
    const listed = (await n.req('GET', '/api/flags/new-search/schedules', admin)).body;
    t.match(listed, [{ stage: 'production', clientId: null, enabled: false, config: null, status: 'pending', createdBy: { keyName: 'admin' } }], 'one pending schedule');
    const item = panel.getByRole('listitem').filter({ hasText: 'Disable' });
    t.match(await item.innerText(), /(pending|applied)[\s\S]*production: Disable[\s\S]*Scheduled by admin/, 'status, what it changes, who scheduled it');
    t.ok(await appears(item.locator('.badge', { hasText: 'applied' }), 15_000), 'the list shows it applied, without a reload');
    const s = (await n.req('GET', '/api/flags/new-search/schedules', admin)).body[0];
    t.equal(s.status, 'applied', 'applied');
    t.ok(s.appliedAt, 'with its time');
    t.equal((await n.req('GET', '/api/flags/new-search', admin)).body.configs.find((c: { stage: string }) => c.stage === 'production').enabled, false, 'the configuration is off');
    const prod = page.getByRole('region', { name: 'Configuration production' });
    await page.waitForFunction(() => {
      const sw = [...document.querySelectorAll('section.config')].find((x) => /production/.test(x.querySelector('h3')?.textContent ?? ''))?.querySelector('input[role="switch"]');
      return sw !== undefined && sw !== null && !(sw as HTMLInputElement).checked;
    });
    t.notOk(await prod.getByRole('switch', { name: 'Enabled' }).isChecked(), "the configuration's switch shows it off");
    t.match(await item.innerText(), /applied/, 'status applied');
  });

  await t.test('schedule a whole configuration a few seconds ahead: the server checks it; applied with its segment', async (t) => {
    const panel = page.getByRole('region', { name: 'Scheduled changes' });
    await panel.getByRole('radio', { name: 'Whole configuration' }).check();
    // The configuration form, started from production as it is now (its rule with the segment).
    t.ok(await appears(panel.getByRole('list', { name: 'Segments of rule 1' }).getByText('beta-testers')), 'the form starts from the current configuration');
    await exactNames(t, [['checkbox', 'Enabled'], ['combobox', 'Default variant'], ['spinbutton', 'Rollout percentage'], ['button', 'Add rule']], panel);
    await panel.getByRole('checkbox', { name: 'Enabled', exact: true }).check();
    await panel.getByRole('spinbutton', { name: 'Rollout percentage' }).fill('50');
    await panel.getByRole('button', { name: 'Add condition to rule 1' }).click();
    await panel.getByRole('textbox', { name: 'Field of rule 1, condition 1', exact: true }).fill('age');
    await panel.getByRole('combobox', { name: 'Operator of rule 1, condition 1', exact: true }).selectOption('>=');
    await panel.getByRole('textbox', { name: 'Value of rule 1, condition 1', exact: true }).fill('eighteen');
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(3_600_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    // The server's 400 (config: rules[0].conditions[0].value: ...) lands beside the value.
    const value = panel.getByRole('textbox', { name: 'Value of rule 1, condition 1', exact: true });
    await panel.locator('[aria-invalid="true"]').first().waitFor();
    t.match(await describedText(value), /needs a number value/, "the API's message beside the value");
    t.equal((await n.req('GET', '/api/flags/new-search/schedules', admin)).body.length, 1, 'nothing scheduled');
    await value.fill('18');
    t.notMatch(await describedText(value), /needs a number value/, 'the message goes once the value is edited');
    t.equal(await panel.locator('[aria-invalid="true"]').count(), 0, 'and nothing is marked invalid');
    await shoot(panel, 'schedule-config');
    await axe(t, 'the schedule form with a whole configuration');
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(4_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    await panel.getByText(/^Scheduled: production, set the whole configuration at/).waitFor();
    const whole = (await n.req('GET', '/api/flags/new-search/schedules', admin)).body.find((x: { config: unknown }) => x.config !== null);
    const rules = [{ conditions: [{ field: 'age', operator: '>=', value: 18 }], segments: ['beta-testers'], allocations: [{ variantKey: 'on', percentage: 100 }] }];
    t.match(whole, { enabled: null, config: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 50, rules } }, 'the whole configuration is scheduled');
    const item = panel.getByRole('listitem').filter({ hasText: 'Set the whole configuration' });
    t.match(await item.innerText(), /on, default variant off, rollout 50%, 1 rule \(segments beta-testers\)/, 'what it sets');
    t.ok(await appears(item.locator('.badge', { hasText: 'applied' }), 15_000), 'applied, shown without a reload');
    t.match((await n.req('GET', '/api/flags/new-search', admin)).body.configs.find((c: { stage: string }) => c.stage === 'production'), { enabled: true, rolloutPercentage: 50, rules }, 'the configuration changed, the segment kept');
    const prod = page.getByRole('region', { name: 'Configuration production' });
    await page.waitForFunction(() => {
      const cfg = [...document.querySelectorAll('section.config')].find((x) => /production/.test(x.querySelector('h3')?.textContent ?? ''));
      return (cfg?.querySelector('input[role="switch"]') as HTMLInputElement | null)?.checked === true;
    });
    t.equal(await prod.getByRole('spinbutton', { name: 'Rollout percentage' }).inputValue(), '50', 'the configuration form shows the applied change');
    t.equal(await prod.getByRole('textbox', { name: 'Value of rule 1, condition 1', exact: true }).inputValue(), '18');
    t.equal(await variantFor({ plan: 'beta', country: 'NL', age: 12 }), 'off', "in the segment, the rule's own condition not met: off");
    t.equal(await variantFor({ plan: 'free', country: 'NL', age: 30 }), 'off', 'outside the segment: still off');
  });

  await t.test('cancel a pending change; soonest first; a 409 in words', async (t) => {
    const panel = page.getByRole('region', { name: 'Scheduled changes' });
    await panel.getByRole('radio', { name: 'Disable' }).check();
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(2 * 3_600_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    await panel.getByText(/^Scheduled: production, disable at/).waitFor();
    await panel.getByRole('radio', { name: 'Enable' }).check();
    await panel.getByLabel('Time', { exact: true }).fill(inLocal(3_600_000));
    await panel.getByRole('button', { name: 'Schedule', exact: true }).click();
    await panel.getByText(/^Scheduled: production, enable at/).waitFor();
    await panel.getByRole('listitem').nth(3).waitFor();
    const texts = await panel.getByRole('listitem').allInnerTexts();
    t.match(texts, [/applied[\s\S]*Disable/, /applied[\s\S]*Set the whole configuration/, /pending[\s\S]*Enable/, /pending[\s\S]*Disable/], 'soonest first, with their status');
    const rest = (await n.req('GET', '/api/flags/new-search/schedules', admin)).body as { id: string; enabled: boolean | null; at: string; status: string }[];
    t.same(rest.map((x) => x.at), [...rest.map((x) => x.at)].sort(), 'as the API orders them');
    await screenshot(page, 'flag-schedules');

    // Soonest first: the third is the enable an hour ahead, the fourth the disable two hours ahead.
    const enable = panel.getByRole('listitem').nth(2);
    t.match(await enable.innerText(), /pending[\s\S]*Enable/);
    await exactNames(t, [['button', 'Cancel schedule']], enable);
    await enable.getByRole('button', { name: 'Cancel schedule' }).click();
    await enable.getByRole('button', { name: 'Keep it' }).click();
    const enableId = rest.find((x) => x.enabled === true)!.id;
    const statusOf = async (id: string) => (await n.req('GET', '/api/flags/new-search/schedules', admin)).body.find((x: { id: string }) => x.id === id).status;
    t.equal(await statusOf(enableId), 'pending', '"Keep it" keeps it');
    await enable.getByRole('button', { name: 'Cancel schedule' }).click();
    await enable.getByRole('button', { name: 'Yes, cancel it' }).click();
    const cancelled = enable;
    await cancelled.locator('.badge', { hasText: 'cancelled' }).waitFor();
    t.equal(await statusOf(enableId), 'cancelled', 'cancelled');
    t.equal(await cancelled.getByRole('button', { name: 'Cancel schedule' }).count(), 0, 'no cancel button on a cancelled change');
    // The README's picture: applied, cancelled and pending changes, no error (the 409 below is tested, not shown).
    await shoot(panel, 'schedules');

    // A change cancelled elsewhere meanwhile: the server's 409 is shown on it.
    const disableId = rest.find((x) => x.enabled === false && x.status === 'pending')!.id;
    t.equal((await n.req('DELETE', `/api/flags/new-search/schedules/${disableId}`, admin)).status, 204, 'cancelled through REST');
    const disable = panel.getByRole('listitem').nth(3);
    t.match(await disable.innerText(), /pending[\s\S]*Disable/, 'still shown pending');
    await disable.getByRole('button', { name: 'Cancel schedule' }).click();
    await disable.getByRole('button', { name: 'Yes, cancel it' }).click();
    const refused = disable;
    await refused.getByRole('alert').waitFor();
    t.match(await refused.getByRole('alert').innerText(), /is cancelled, not pending/, 'the 409 in words');
    t.ok(await appears(refused.locator('.badge', { hasText: 'cancelled' })), 'and the list, read again, shows it cancelled');
    await axe(t, 'the flag page with schedules');
  });

  await t.test('keys that may not write: the controls are hidden', async (t) => {
    const signInAs = async (key: string) => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Management key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
    };
    // A reader: sees segments and schedules, changes nothing.
    await signInAs(await createKey(n, { name: 'reader', permissions: ['CanRead'], application: 'default' }));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments', exact: true }).click();
    await page.getByRole('row', { name: /beta-testers/ }).waitFor();
    t.equal(await page.getByRole('button', { name: 'New segment' }).count(), 0, 'no New segment');
    t.equal(await page.getByRole('button', { name: 'Edit' }).count(), 0, 'no Edit');
    t.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0, 'no Delete');
    await axe(t, 'the segments page for a reader');
    await page.goto(n.url + '/ui/flags/new-search');
    const panel = page.getByRole('region', { name: 'Scheduled changes' });
    await panel.getByRole('listitem').first().waitFor();
    t.equal(await panel.getByRole('listitem').count(), 4, 'the schedules are listed');
    t.equal(await panel.getByRole('button', { name: 'Schedule' }).count(), 0, 'no Schedule');
    t.equal(await panel.getByRole('button', { name: 'Cancel schedule' }).count(), 0, 'no Cancel schedule');
    await axe(t, 'the flag page for a reader');

    // A writer scoped to production: no segment writes (an environment scope), schedules in production only.
    await signInAs(await createKey(n, { name: 'prod-writer', permissions: ['CanRead', 'CanWrite'], environment: 'production' }));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments', exact: true }).click();
    await page.getByRole('row', { name: /beta-testers/ }).waitFor();
    t.equal(await page.getByRole('button', { name: 'New segment' }).count(), 0, 'an environment-scoped key writes no segments');
    await page.goto(n.url + '/ui/flags/new-search');
    const stage = page.getByRole('region', { name: 'Scheduled changes' }).getByRole('combobox', { name: 'Stage' });
    await stage.waitFor();
    t.same(await stage.locator('option').allInnerTexts(), ['production'], 'only its environment can be scheduled');
    await page.getByRole('button', { name: 'Sign out' }).click();
  });

  await t.test('the pages reported no error (CSP violations included)', async (t) => {
    t.same(b.problems, []);
  });
}
