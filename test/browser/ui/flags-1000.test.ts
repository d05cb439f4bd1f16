/**
 * The flags page with 1,000 flags (README.md, "Web UI"): the page of flags renders in under a
 * second in Chromium, measured in the browser from the click on "Flags" to the page's rows in the
 * document and the next frame; the total is shown; walking every page with "Next page" shows each
 * of the 1,000 flags exactly once, in the server's order; a search typed quickly goes to the server
 * once it pauses (debounced) and shows its own total; filters go to the server; back from a flag
 * returns to the same page of the list. (flags-100k.test.ts does the same at 100,000 flags.)
 */
import type { Test } from 'tap';
import { startTestNode } from '../../helpers/node.js';
import { appears, browserTest, holdGraphql, openBrowser } from '../../helpers/browser.js';

browserTest('1,000 flags: a page renders in under a second; paging, search and filters on the server', run);

const PAGE = 50;

async function run(t: Test) {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '1000' } });
  const b = await openBrowser();
  t.teardown(() => b.close());
  const page = b.page;
  const signIn = async (key: string) => {
    await page.goto(n.url + '/ui/');
    await page.getByLabel('Management key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  const names: string[] = [];
  for (let i = 0; i < 1000; i++) names.push(`bulk-${String(i).padStart(4, '0')}`);
  for (let i = 0; i < names.length; i += 20) {
    const doc = names.slice(i, i + 20).map((nm, j) => `f${j}: createFlag(input: {name: "${nm}", project: "default", type: "boolean", tags: ["bulk"], variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { name }`);
    const r = await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: `mutation { ${doc.join(' ')} }` } });
    if (r.body.errors) throw new Error(JSON.stringify(r.body.errors[0]));
  }
  // The flag-list requests the page sends (GraphQL flagConnection), with their variables.
  const listRequests: { search: string | null; after: string | null }[] = [];
  page.on('request', (req) => {
    const body = req.postData();
    if (req.url().endsWith('/api/graphql') && body?.includes('flagConnection(first: $first')) {
      const v = (JSON.parse(body) as { variables: { search: string | null; after: string | null } }).variables;
      listRequests.push({ search: v.search, after: v.after });
    }
  });
  const rowNames = () => page.locator('table.flags tbody th a').allInnerTexts();
  const count = () => page.locator('.count').innerText();

  await signIn(n.adminKey);
  await page.getByRole('row', { name: /bulk-0049/ }).waitFor();
  t.same(await rowNames(), names.slice(0, PAGE), `the first page: the first ${PAGE} flags by name`);
  t.equal(await count(), `1,000 flags, showing 1–${PAGE}`, 'the total is shown');

  // From the click on "Flags" to the page's rows in the document and the next frame: fetch, render,
  // style and layout. The machine is shared, so the best of five navigations counts.
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    runs.push((await page.evaluate(`new Promise((resolve) => {
      const start = performance.now();
      const done = () => document.querySelectorAll('table.flags tbody tr').length >= ${PAGE};
      const obs = new MutationObserver(() => { if (done()) { obs.disconnect(); requestAnimationFrame(() => resolve(performance.now() - start)); } });
      obs.observe(document.body, { childList: true, subtree: true });
      [...document.querySelectorAll('nav a')].find((a) => a.textContent === 'Flags').click();
    })`)) as number);
  }
  const best = Math.min(...runs);
  console.log(`# flags page (${PAGE} of ${names.length} flags) rendered in ${best.toFixed(0)} ms (best of ${runs.map((x) => x.toFixed(0)).join(', ')} ms)`);
  t.ok(best < 1000, `a page of the 1,000 flags rendered in ${best.toFixed(0)} ms (< 1000 ms)`);

  await t.test('every page, in order, each flag once', async (t) => {
    const seen: string[] = [];
    const pager = page.getByRole('navigation', { name: 'Pages of flags', exact: true });
    const below = page.getByRole('navigation', { name: 'Pages of flags, below the list', exact: true });
    for (let p = 1; p <= 20; p++) {
      await page.getByText(`showing ${((p - 1) * PAGE + 1).toLocaleString('en-GB')}–${(p * PAGE).toLocaleString('en-GB')}`).waitFor();
      t.match(await pager.innerText(), new RegExp(`Page ${p} of 20`), `page ${p} of 20`);
      t.match(await below.innerText(), new RegExp(`Page ${p} of 20`), `page ${p} of 20, below the list too`);
      seen.push(...(await rowNames()));
      // Above the list on odd pages, below it on even ones.
      if (p < 20) await (p % 2 === 1 ? pager : below).getByRole('button', { name: 'Next page' }).click();
    }
    t.same(seen, names, 'the 20 pages hold the 1,000 flags in order, each once');
    t.ok(await pager.getByRole('button', { name: 'Next page' }).isDisabled(), 'no next page after the last');
    await pager.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('showing 901–950').waitFor();
    t.same(await rowNames(), names.slice(900, 950), 'Previous page goes back one page');
    t.ok(listRequests.every((r) => r.search === null), 'paging sent no search');
  });

  await t.test('while the next page is on its way, the list says it is updating', async (t) => {
    const release = await holdGraphql(page, 'flagConnection(first: $first');
    await page.getByRole('navigation', { name: 'Pages of flags', exact: true }).getByRole('button', { name: 'Previous page' }).click();
    t.ok(await appears(page.locator('table.flags[aria-busy="true"]')), 'the table is aria-busy');
    t.ok(await appears(page.getByText('(updating…)')), '"updating" beside the count');
    t.same(await rowNames(), names.slice(900, 950), 'the rows shown stay until the new page comes');
    await release();
    await page.getByText('showing 851–900').waitFor();
    t.equal(await page.locator('table.flags[aria-busy]').count(), 0, 'answered: no longer busy');
    t.same(await rowNames(), names.slice(850, 900), 'the new page');
    await page.getByRole('navigation', { name: 'Pages of flags', exact: true }).getByRole('button', { name: 'Next page' }).click();
    await page.getByText('showing 901–950').waitFor();
  });

  await t.test('back from a flag returns to the same page', async (t) => {
    await page.getByRole('link', { name: 'bulk-0901', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'bulk-0901' }).waitFor();
    await page.goBack();
    await page.getByText('showing 901–950').waitFor();
    t.same(await rowNames(), names.slice(900, 950), 'page 19 again');
    await page.getByRole('navigation', { name: 'Pages of flags, below the list', exact: true }).getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('showing 851–900').waitFor();
    t.pass('and Previous page still works (the cursors came back too)');
    const top = (await page.evaluate("document.querySelector('.list-head').getBoundingClientRect().top")) as number;
    t.ok(top > -1 && top < 200, `the pager below the list brought the list's top into view (at ${Math.round(top)} px)`);
    await page.getByRole('link', { name: 'Flags', exact: true }).click();
    await page.getByText(`showing 1–${PAGE}`).waitFor();
    t.same(await rowNames(), names.slice(0, PAGE), 'the "Flags" link starts at the first page');
  });

  await t.test('search: debounced, on the server, with its own total', async (t) => {
    const before = listRequests.length;
    await page.getByRole('searchbox', { name: 'Search flags' }).pressSequentially('bulk-099', { delay: 25 });
    await page.getByText('10 of 1,000 flags').waitFor();
    t.same(await rowNames(), names.slice(990, 1000), 'bulk-0990 … bulk-0999');
    const sent = listRequests.slice(before);
    t.equal(sent[sent.length - 1]?.search, 'bulk-099', 'the search went to the server');
    t.ok(sent.length < 'bulk-099'.length, `typing 8 characters quickly sent ${sent.length} request(s), not one per keystroke`);
    t.equal(await page.getByRole('navigation', { name: /^Pages of flags/ }).count(), 0, 'one page of results: no pager');
    await page.getByRole('searchbox', { name: 'Search flags' }).fill('BULK-0001');
    await page.getByText('1 of 1,000 flags').waitFor();
    t.same(await rowNames(), ['bulk-0001'], 'case-insensitive');
    await page.getByRole('searchbox', { name: 'Search flags' }).fill('');
    await page.getByText(`1,000 flags, showing 1–${PAGE}`).waitFor();
  });

  await t.test('filters go to the server', async (t) => {
    await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: 'mutation { archiveFlag(name: "bulk-0500") { name } }' } });
    await page.getByRole('combobox', { name: 'Show' }).selectOption('archived');
    await page.getByText('1 flag', { exact: true }).waitFor();
    t.same(await rowNames(), ['bulk-0500'], 'the archived flag alone');
    await page.getByRole('combobox', { name: 'Filter by type' }).selectOption('string');
    await page.getByText('0 of 1 flag').waitFor();
    t.ok(await appears(page.getByText('No flag matches.')), 'no string flag: said so');
    await page.getByRole('combobox', { name: 'Filter by type' }).selectOption('');
    await page.getByRole('combobox', { name: 'Show' }).selectOption('active');
    await page.getByText(`999 flags, showing 1–${PAGE}`).waitFor();
    t.pass('999 active flags');
  });

  t.same(b.problems, [], 'no error in the page');
}
