/**
 * The admin web UI in a real browser (Chromium via playwright-core) against a real node: sign-in
 * (and a bad key), a flag created and configured with a rule, evaluated in the panel, toggled,
 * keys created and rotated, an application renamed, a scoped key's limits and a 403 in words,
 * sign-out clearing sessionStorage, and axe-core on every page. (flags-1000.test.ts times the list.)
 */
import type { Test } from 'tap';
import type { Page } from 'playwright-core';
import { createFlag, createKey, evaluate, HEX64, randomKey, startTestNode, type TestNode } from '../../helpers/node.js';
import { appears, browserTest, expectAccessible, expectExactNames, holdGraphql, openBrowser, screenshot, type Browser, type Role } from '../../helpers/browser.js';

browserTest('the admin UI in Chromium', run);

async function run(t: Test) {
  t.setTimeout(300_000);

  const n: TestNode = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000' } });
  const b: Browser = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;

  const axe = (tt: Test, what: string) => expectAccessible(tt, page, what);
  const signIn = async (key: string) => {
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  const text = (p: Page, sel: string) => p.locator(sel).innerText();
  const exactNames = (tt: Test, controls: [Role, string][], scope: Pick<Page, 'getByRole'> = page) => expectExactNames(tt, scope, controls);

  // Some flags for the list (and the screenshots).
  for (const [name, extra] of [
    ['search-v2', { description: 'New search backend', tags: ['search', 'beta'] }],
    ['dark-mode', { description: 'Dark colour scheme', tags: ['web'] }],
    ['pricing-banner', { type: 'string', variants: [{ key: 'a', value: 'Save 10%', valueType: 'string' }, { key: 'b', value: 'Free shipping', valueType: 'string' }], tags: ['marketing'] }],
  ] as const) {
    t.equal((await createFlag(n, name, extra as Record<string, unknown>)).status, 201);
  }
  await n.req('POST', '/api/flags/dark-mode/configs', { key: n.adminKey, body: { stage: 'development', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 } });
  await n.req('POST', '/api/flags/search-v2/configs', { key: n.adminKey, body: { stage: 'production', enabled: false, defaultVariantKey: 'off', rolloutPercentage: 25 } });

  await t.test('a bad key shows an error in words and stores nothing', async (t) => {
    await page.goto(n.url + '/');
    t.match(page.url(), /\/ui\/$/, '/ redirects to /ui/');
    await screenshot(page, 'sign-in');
    await axe(t, 'the sign-in page');
    t.equal(await page.getByLabel('Management key', { exact: true }).count(), 1, 'a field labelled exactly "Management key"');
    await exactNames(t, [['button', 'Sign in']]);
    await page.getByLabel('Management key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(await page.getByRole('alert').innerText(), /64 lowercase hexadecimal characters/, 'a malformed key is refused before asking');
    await page.getByLabel('Management key').fill(randomKey());
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(await page.getByRole('alert').innerText(), /Sign-in failed: this Management Key is unknown or disabled/, 'an unknown key: 401 in words');
    t.equal(await page.evaluate('sessionStorage.length'), 0, 'nothing in sessionStorage');
    await axe(t, 'the sign-in page with an error');
  });

  await t.test('sign in: the key in sessionStorage only', async (t) => {
    await signIn(n.adminKey);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    for (const name of ['Flags', 'Keys', 'Organization', 'Audit log']) {
      t.ok(await appears(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })), `link ${name}`);
    }
    t.ok(await appears(page.getByRole('button', { name: 'Sign out', exact: true })), 'button Sign out');
    t.equal(await page.evaluate('Object.values(sessionStorage).join()'), n.adminKey, 'the key is in sessionStorage');
    t.equal(await page.evaluate('localStorage.length'), 0, 'nothing in localStorage');
    t.same(await b.context.cookies(), [], 'no cookie');
    t.notMatch(page.url(), n.adminKey, 'not in the URL');
    await page.getByRole('row', { name: /search-v2/ }).waitFor();
    await exactNames(t, [['searchbox', 'Search flags'], ['button', 'New flag'], ['link', 'search-v2']]);
    t.equal(await page.locator('.count').innerText(), '3 flags', 'the total');
    await axe(t, 'the flags list');
  });

  await t.test('create a flag; configure production with a rule, validated before saving', async (t) => {
    await page.getByRole('button', { name: 'New flag' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('bad name!');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    t.match(await page.getByRole('alert').first().innerText(), /must start with a letter or digit/, 'a bad name is refused next to the field');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('new-checkout');
    await exactNames(t, [['textbox', 'Name'], ['combobox', 'Application'], ['combobox', 'Type'], ['button', 'Create']]);
    t.equal(await page.getByRole('combobox', { name: 'Application', exact: true }).inputValue(), 'default');
    t.equal(await page.getByRole('combobox', { name: 'Type', exact: true }).inputValue(), 'boolean');
    // While the write is on its way the form is busy: Create cannot be pressed twice.
    const release = await holdGraphql(page, 'createFlag');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    t.ok(await appears(page.getByRole('button', { name: 'Create', exact: true, disabled: true })), 'Create is disabled while the flag is being created');
    await release();
    await page.getByRole('heading', { level: 1, name: 'new-checkout' }).waitFor();
    t.match(page.url(), /\/ui\/flags\/new-checkout$/, 'the flag page');
    const api = await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey });
    t.same(api.body.variants, [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }], 'variants on = true, off = false');

    const prod = page.getByRole('region', { name: 'Configuration production' });
    t.ok(await appears(page.getByRole('region', { name: 'Configuration development' })), 'every environment shows its controls before a configuration exists');
    await exactNames(t, [['switch', 'Enabled'], ['combobox', 'Default variant'], ['spinbutton', 'Rollout percentage'], ['button', 'Save']], page.getByRole('region', { name: 'Configuration development' }));
    await exactNames(t, [['button', 'Archive']]);
    await prod.getByRole('switch', { name: 'Enabled' }).check();
    await prod.getByRole('combobox', { name: 'Default variant' }).selectOption('off');
    t.equal(await prod.getByRole('spinbutton', { name: 'Rollout percentage' }).inputValue(), '100');
    await prod.getByRole('button', { name: 'Add rule' }).click();
    // Validation before saving: an empty field path and allocations that do not add up.
    await prod.getByRole('spinbutton', { name: 'Percentage of rule 1, allocation 1' }).fill('60');
    await prod.getByRole('button', { name: 'Save', exact: true }).click();
    t.match(await prod.getByText(/Enter a field path/).innerText(), /letters, digits/, 'the field path error is beside the field');
    t.match(await prod.getByText(/add up to 60%/).innerText(), /must add up to 100%/, 'the allocation sum error');
    t.equal((await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey })).body.configs.length, 0, 'nothing was saved');
    await prod.getByRole('textbox', { name: 'Field of rule 1, condition 1' }).fill('country');
    await prod.getByRole('textbox', { name: 'Value of rule 1, condition 1' }).fill('NL');
    await prod.getByRole('combobox', { name: 'Variant of rule 1, allocation 1' }).selectOption('on');
    await prod.getByRole('spinbutton', { name: 'Percentage of rule 1, allocation 1' }).fill('100');
    // The API's own refusal (operator 'in' needs an array) lands next to the control that caused it.
    await prod.getByRole('combobox', { name: 'Operator of rule 1, condition 1' }).selectOption('in');
    await prod.getByRole('button', { name: 'Save', exact: true }).click();
    const value = prod.getByRole('textbox', { name: 'Value of rule 1, condition 1' });
    await prod.locator('[aria-invalid="true"]').first().waitFor();
    t.equal(await value.getAttribute('aria-invalid'), 'true', 'the Value control is marked');
    const described = (await value.getAttribute('aria-describedby'))!.split(' ')[0];
    t.match(await page.locator(`#${described}`).innerText(), /operator 'in' needs an array value/, "the API's message beside it");
    t.equal((await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey })).body.configs.length, 0, 'still nothing saved');
    await prod.getByRole('combobox', { name: 'Operator of rule 1, condition 1' }).selectOption('==');
    // An edit clears the last attempt's messages (useConfigDraft): they named a draft that is gone.
    t.equal(await prod.locator('[aria-invalid="true"]').count(), 0, 'the edit clears the marks of the refused attempt');
    t.equal(await page.locator(`#${described}`).count(), 0, "and the API's message");
    await prod.getByRole('button', { name: 'Save', exact: true }).click();
    await prod.getByText('production: saved.').waitFor();
    const cfg = (await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey })).body.configs[0];
    t.match(cfg, { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] }, 'saved as entered');
    await axe(t, 'the flag page');
  });

  await t.test('the evaluation panel shows variant, value and reason; a toggle changes it', async (t) => {
    const panel = page.getByRole('region', { name: 'Try an evaluation' });
    await exactNames(t, [['textbox', 'User ID'], ['combobox', 'Stage'], ['textbox', 'Context (JSON)'], ['button', 'Evaluate']], panel);
    await panel.getByRole('textbox', { name: 'User ID' }).fill('user-42');
    await panel.getByRole('combobox', { name: 'Stage' }).selectOption('production');
    await panel.getByRole('textbox', { name: 'Context (JSON)' }).fill('{"country": ');
    await panel.getByRole('button', { name: 'Evaluate' }).click();
    t.match(await panel.getByRole('alert').innerText(), /not valid JSON/, 'bad JSON is refused beside the context');
    await panel.getByRole('textbox', { name: 'Context (JSON)' }).fill('{"country": "NL"}');
    await panel.getByRole('button', { name: 'Evaluate' }).click();
    await panel.locator('.reason', { hasText: 'rule_matched' }).waitFor();
    const result = await text(page, '.result');
    t.match(result, /Variant\s+on/, 'variant on');
    t.match(result, /Value\s+true/, 'value true');
    t.match(result, /priority 1/, 'the message names the priority');
    await screenshot(page, 'flag');

    const prod = page.getByRole('region', { name: 'Configuration production' });
    await prod.getByRole('switch', { name: 'Enabled' }).uncheck();
    await prod.getByText('production: disabled.').waitFor();
    t.equal((await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey })).body.configs[0].enabled, false, 'one click disabled it');
    await panel.getByRole('button', { name: 'Evaluate' }).click();
    await panel.locator('.reason', { hasText: 'config_disabled' }).waitFor();
    t.match(await text(page, '.result'), /Variant\s+off/, 'now the default variant, reason config_disabled');
    await prod.getByRole('switch', { name: 'Enabled' }).check();
    await prod.getByText('production: enabled.').waitFor();
    await panel.getByRole('button', { name: 'Evaluate' }).click();
    await panel.locator('.reason', { hasText: 'rule_matched' }).waitFor();
    t.pass('enabled again: rule_matched');
    await axe(t, 'the flag page with a result');
  });

  await t.test('the audit log, filtered by the flag', async (t) => {
    await page.getByRole('link', { name: 'Audit log for this flag' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log of new-checkout' }).waitFor();
    const rows = page.locator('table.audit tbody tr');
    await rows.first().waitFor();
    const actions = await page.locator('table.audit tbody td:nth-child(3)').allInnerTexts();
    t.same(actions, ['config.enable', 'config.disable', 'config.upsert', 'flag.create'], 'newest first, only this flag');
    t.match(await rows.first().innerText(), /admin\s+config\.enable\s+new-checkout \(production\)\s+default/, 'who, what, where');
    await rows.nth(2).getByText('Before and after').click();
    t.match(await rows.nth(2).locator('pre').nth(1).innerText(), /"country"/, 'the change itself');
    await screenshot(page, 'audit');
    await axe(t, 'the audit log');
    await page.getByRole('textbox', { name: 'Flag name' }).fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log', exact: true }).waitFor();
    await page.getByText('org.environments').or(page.getByText('search-v2').first()).first().waitFor();
    t.ok((await page.locator('table.audit tbody tr').count()) > 4, 'every event without the filter');
  });

  await t.test('keys: create (value shown once, copy button), rotate', async (t) => {
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('web-eval');
    // A permission checkbox is named by the permission alone, its hint is its description.
    const hints: Record<string, RegExp> = { CanEvaluate: /evaluate flags/, CanRead: /read flags/, CanWrite: /change flags/, Admin: /manage keys/, CanApprove: /review/i };
    for (const [p, hint] of Object.entries(hints)) {
      const box = page.getByRole('checkbox', { name: p, exact: true });
      t.ok(await appears(box), `checkbox named exactly "${p}"`);
      const described = await box.getAttribute('aria-describedby');
      t.match(described ? await page.locator(`#${described}`).innerText() : '', hint, `${p}: its hint is its description`);
    }
    t.same(
      (await page.getByRole('group', { name: 'Permissions' }).ariaSnapshot()).match(/- checkbox .*/g),
      ['- checkbox "CanEvaluate" [checked]', '- checkbox "CanRead"', '- checkbox "CanWrite"', '- checkbox "Admin"', '- checkbox "CanApprove"'],
      'the accessibility tree: the five names alone',
    );
    await exactNames(t, [['textbox', 'Name'], ['combobox', 'Application'], ['combobox', 'Environment'], ['button', 'Create']]);
    t.ok(await page.getByRole('checkbox', { name: 'CanEvaluate', exact: true }).isChecked(), 'CanEvaluate checked by default');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    t.match(await page.getByRole('alert').first().innerText(), /cannot evaluate; choose one/, 'CanEvaluate without an application is explained');
    await page.getByRole('combobox', { name: 'Application', exact: true }).selectOption('default');
    await page.getByRole('combobox', { name: 'Environment', exact: true }).selectOption('production');
    await axe(t, 'the new key form');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const value = await page.getByRole('textbox', { name: 'Key value' }).inputValue();
    t.match(value, HEX64, 'the value is shown');
    t.ok(await appears(page.getByRole('button', { name: 'Copy', exact: true })), 'with a copy button');
    await exactNames(t, [['button', 'Rotate'], ['button', 'Disable'], ['button', 'Delete']], page.getByRole('row', { name: /web-eval/ }));
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: n.url });
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), value, 'copied');
    t.equal((await evaluate(n, value, 'new-checkout', { userId: 'u', stage: 'production' })).status, 200, 'the new key evaluates');
    await screenshot(page, 'keys');
    await axe(t, 'the keys page with a new value');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    t.equal(await page.getByRole('textbox', { name: 'Key value' }).count(), 0, 'the value is gone');

    const row = page.getByRole('row', { name: /web-eval/ });
    await row.getByRole('button', { name: 'Rotate', exact: true }).click();
    await row.getByRole('button', { name: 'Yes, rotate' }).click();
    const rotated = await page.getByRole('textbox', { name: 'Key value' }).inputValue();
    t.match(rotated, HEX64);
    t.not(rotated, value, 'a new value');
    t.equal((await evaluate(n, value, 'new-checkout', { userId: 'u', stage: 'production' })).status, 401, 'the old value stopped working');
    t.equal((await evaluate(n, rotated, 'new-checkout', { userId: 'u', stage: 'production' })).status, 200, 'the new one works');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await row.getByRole('button', { name: 'Disable', exact: true }).click();
    // The disable's own answer (the node applies the key change before it answers), then the list.
    const disabled = page.waitForResponse((r) => r.url().endsWith('/api/graphql') && (r.request().postData() ?? '').includes('disableManagementKey'));
    await row.getByRole('button', { name: 'Yes, disable' }).click();
    await disabled;
    await row.getByText('Disabled').waitFor();
    t.equal((await evaluate(n, rotated, 'new-checkout', { userId: 'u', stage: 'production' })).status, 401, 'disabled');
  });

  await t.test('organization: renaming an application cascades', async (t) => {
    await page.getByRole('link', { name: 'Organization', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Organization' }).waitFor();
    await axe(t, 'the organization page');
    await page.getByRole('button', { name: 'Rename default' }).click();
    await page.getByRole('textbox', { name: 'New name for default' }).fill('web');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('region', { name: 'Applications' }).getByText('web', { exact: true }).waitFor();
    t.same((await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: '{ applications }' } })).body.data.applications, ['web']);
    t.equal((await n.req('GET', '/api/flags/new-checkout', { key: n.adminKey })).body.project, 'web', 'the flag moved with it');
    const keys = (await n.req('GET', '/api/keys', { key: n.adminKey })).body as { name: string; application: string | null }[];
    t.equal(keys.find((k) => k.name === 'web-eval')?.application, 'web', 'and the key scope');
    // The flag is typed, with suggestions searched on the server (no list of every flag).
    const kill = page.getByRole('combobox', { name: 'Kill flag', exact: true });
    await kill.pressSequentially('no-such-flag');
    await page.getByRole('button', { name: 'Add kill-switch rule' }).click();
    await page.getByText('No flag is named no-such-flag.').waitFor();
    const killError = await kill.getAttribute('aria-describedby');
    t.match(killError ?? '', /-err/, 'an unknown flag: said next to the field');
    await kill.fill('');
    await kill.pressSequentially('dark');
    await page.waitForFunction(() => [...document.querySelectorAll('datalist option')].map((o) => (o as HTMLOptionElement).value).join() === 'dark-mode');
    t.pass('typing "dark" suggests dark-mode');
    await kill.fill('dark-mode');
    await page.getByRole('combobox', { name: 'In environment' }).selectOption('development');
    await page.getByRole('button', { name: 'Add kill-switch rule' }).click();
    await page.getByText('Off: flag dark-mode in every application in development').waitFor();
    t.same((await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: '{ killSwitch { flag application environment } }' } })).body.data.killSwitch, [{ flag: 'dark-mode', application: null, environment: 'development' }], 'kill-switch rule saved');
    await screenshot(page, 'organization');
    await axe(t, 'the organization page after changes');
  });

  await t.test('the flags list shows type, application and per-stage state', async (t) => {
    await page.getByRole('link', { name: 'Flags', exact: true }).click();
    const row = page.getByRole('row', { name: /new-checkout/ });
    await row.waitFor();
    t.match(await row.innerText(), /new-checkout\s+web\s+boolean\s+not set\s+On/, 'application web, boolean, development not set, production On');
    /** Waits until the list shows exactly these flags (answered, not updating) and this count. */
    const shows = async (rows: string[], count: string) => {
      await page.waitForFunction(
        ([want, c]) =>
          [...document.querySelectorAll('table.flags tbody th a')].map((a) => a.textContent).join() === want &&
          document.querySelector('.count')?.textContent === c,
        [rows.join(), count] as const,
      );
      t.pass(`the list shows ${rows.join(', ')} (${count})`);
    };
    const search = page.getByRole('searchbox', { name: 'Search flags' });
    await search.fill('search');
    await shows(['search-v2'], '1 of 4 flags');
    await search.fill('MARKETING');
    await shows(['pricing-banner'], '1 of 4 flags'); // a tag matches too, case-insensitively
    await search.fill('colour');
    await shows(['dark-mode'], '1 of 4 flags'); // and a description
    await search.fill('');
    await shows(['dark-mode', 'new-checkout', 'pricing-banner', 'search-v2'], '4 flags');
    await page.getByRole('combobox', { name: 'Filter by type' }).selectOption('string');
    await shows(['pricing-banner'], '1 of 4 flags');
    await page.getByRole('combobox', { name: 'Filter by type' }).selectOption('');
    await page.getByRole('combobox', { name: 'Filter by application' }).selectOption('web');
    await shows(['dark-mode', 'new-checkout', 'pricing-banner', 'search-v2'], '4 of 4 flags');
    await page.getByRole('combobox', { name: 'Filter by application' }).selectOption('');
    await page.getByRole('combobox', { name: 'Show' }).selectOption('archived');
    await shows([], '0 flags');
    t.ok(await appears(page.getByText('No flag matches.')), 'no archived flag: said so');
    await page.getByRole('combobox', { name: 'Show' }).selectOption('active');
    await shows(['dark-mode', 'new-checkout', 'pricing-banner', 'search-v2'], '4 flags');
    t.equal(await page.getByRole('navigation', { name: /^Pages of flags/ }).count(), 0, 'one page: no pager');
    await search.blur();
    await screenshot(page, 'flags');
    await axe(t, 'the flags list');
  });

  await t.test('archive, restore and delete, each confirmed', async (t) => {
    await page.getByRole('link', { name: 'pricing-banner' }).click();
    await page.getByRole('heading', { level: 1, name: 'pricing-banner' }).waitFor();
    await page.getByRole('button', { name: 'Archive', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    t.equal((await n.req('GET', '/api/flags/pricing-banner', { key: n.adminKey })).body.isArchived, false, 'Cancel changes nothing');
    await page.getByRole('button', { name: 'Archive', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, archive' }).click();
    await page.getByRole('button', { name: 'Restore' }).waitFor();
    t.equal((await n.req('GET', '/api/flags/pricing-banner', { key: n.adminKey })).body.isArchived, true, 'archived');
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('button', { name: 'Archive', exact: true }).waitFor();
    t.equal((await n.req('GET', '/api/flags/pricing-banner', { key: n.adminKey })).body.isArchived, false, 'restored');
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('heading', { level: 1, name: 'Flags' }).waitFor();
    t.equal((await n.req('GET', '/api/flags/pricing-banner', { key: n.adminKey })).status, 404, 'deleted');
  });

  await t.test('a dependency: the parent is searched on the server; an unknown one refused in words', async (t) => {
    await page.getByRole('link', { name: 'search-v2', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'search-v2' }).waitFor();
    await page.getByRole('button', { name: 'Add dependency' }).click();
    const parent = page.getByRole('combobox', { name: 'Parent flag 1', exact: true });
    await parent.pressSequentially('checkout');
    await page.waitForFunction(() => [...document.querySelectorAll('datalist option')].map((o) => (o as HTMLOptionElement).value).join() === 'new-checkout');
    t.pass('typing "checkout" suggests new-checkout');
    await parent.fill('no-such-parent');
    await page.getByRole('button', { name: 'Save details' }).click();
    t.match(await page.getByRole('form', { name: 'Details' }).getByRole('alert').innerText(), /no-such-parent/, 'the server refuses an unknown parent: said under the dependencies');
    await parent.fill('new-checkout');
    await page.getByRole('button', { name: 'Save details' }).click();
    let deps: unknown[] = [];
    for (let i = 0; i < 50 && deps.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      deps = (await n.req('GET', '/api/flags/search-v2', { key: n.adminKey })).body.dependencies ?? [];
    }
    t.same(deps, [{ flag: 'new-checkout', variants: null }], 'saved');
    await page.getByRole('combobox', { name: 'Parent flag 1', exact: true }).waitFor();
    t.equal(await page.getByRole('combobox', { name: 'Parent flag 1', exact: true }).inputValue(), 'new-checkout', 'shown after saving');
    await axe(t, 'the flag page with a dependency');
  });

  await t.test('a scoped read key: what it cannot do is hidden; a 403 is shown in words', async (t) => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Management key').waitFor();
    t.equal(await page.evaluate('sessionStorage.length'), 0, 'sessionStorage is empty after signing out');
    await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: 'mutation { replaceApplications(applications: ["web", "mobile"]) }' } });
    t.equal((await createFlag(n, 'ios-only', { project: 'mobile' })).status, 201);
    const reader = await createKey(n, { name: 'web-reader', permissions: ['CanRead'], application: 'web' });
    await signIn(reader);
    await page.getByRole('row', { name: /new-checkout/ }).waitFor();
    t.equal(await page.getByRole('button', { name: 'New flag' }).count(), 0, 'no New flag button');
    t.equal(await page.getByRole('link', { name: 'Keys', exact: true }).count(), 0, 'no Keys link');
    t.equal(await page.getByRole('row', { name: /ios-only/ }).count(), 0, 'flags of other applications are not listed');
    await page.getByRole('link', { name: 'new-checkout' }).click();
    await page.getByRole('heading', { level: 1, name: 'new-checkout' }).waitFor();
    t.equal(await page.getByRole('button', { name: 'Save', exact: true }).count(), 0, 'no Save button');
    t.ok(await page.getByRole('region', { name: 'Configuration production' }).getByRole('switch', { name: 'Enabled' }).isDisabled(), 'the switch is disabled');
    const panel = page.getByRole('region', { name: 'Try an evaluation' });
    await panel.getByRole('textbox', { name: 'Context (JSON)' }).fill('{"country": "NL"}');
    await panel.getByRole('button', { name: 'Evaluate' }).click();
    await panel.locator('.reason', { hasText: 'rule_matched' }).waitFor();
    t.pass('a read key evaluates in the panel');
    await page.goto(n.url + '/ui/flags/ios-only');
    t.match(await page.getByRole('alert').innerText(), /Not allowed \(403\): .*scoped to application 'web'/, 'the 403 in words');
    await axe(t, 'a page with a 403');
    await page.getByRole('button', { name: 'Sign out' }).click();
    t.equal(await page.evaluate('sessionStorage.length'), 0, 'sessionStorage is empty after signing out');
  });

  await t.test('the pages reported no error (CSP violations included)', async (t) => {
    t.same(b.problems, []);
  });
}
