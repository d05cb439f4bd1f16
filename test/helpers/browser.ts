/**
 * Browser harness for the admin UI suites: Debian's Chromium driven by playwright-core (its own
 * browser download cannot work here), a fresh profile per run, axe-core run inside the page, and
 * screenshots into docs/screenshots/ when VEXIL_SCREENSHOTS=1 (`npm run screenshots`).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page, type Route } from 'playwright-core';
import t, { type Test } from 'tap';
import { projectPath } from '../../src/util/paths.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser suites cannot run here, or null when they can. */
export function browserUnavailable(): string | null {
  if (!existsSync(CHROMIUM)) return `Chromium not found at ${CHROMIUM} (apt-get install -y chromium): browser tests skipped`;
  if (!existsSync(projectPath('dist', 'ui', 'index.html'))) return 'dist/ui is not built (npm run build): browser tests skipped';
  return null;
}

/**
 * One browser suite: skipped, with the reason, where it cannot run; otherwise everything in one
 * subtest (at the top level, tap ends the root test early once Chromium runs).
 */
export function browserTest(name: string, fn: (t: Test) => Promise<void>): void {
  const unavailable = browserUnavailable();
  t.test(name, unavailable === null ? {} : { skip: unavailable }, fn);
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Problems the page reported: console errors (CSP violations included) and uncaught errors. */
  problems: string[];
  close(): Promise<void>;
}

export async function openBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'vexil-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 860 },
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('console', (m) => {
    // The browser logs failed requests (the sign-in with a bad key answers 401 on purpose).
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return {
    context,
    page,
    problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * Runs axe-core on the page as it is now and answers the violations of impact serious or
 * critical. (Evaluated through the DevTools protocol, so the page's CSP, which forbids inline
 * scripts, does not get in the way; the page itself stays under its CSP.)
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(axeSource);
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: AxeViolation[] };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** axe-core on the page as shown: no serious or critical violation. */
export async function expectAccessible(t: Test, page: Page, what: string): Promise<void> {
  const v = await seriousViolations(page);
  t.same(v.map((x) => `${x.id} (${x.impact}): ${x.help} at ${x.nodes.map((nd) => nd.target.join(' ')).join(', ')}`), [], `axe: no serious or critical violation on ${what}`);
}

export type Role = Parameters<Page['getByRole']>[0];

/**
 * Each control has exactly this accessible name (case-sensitive, whole string; a hint belongs in
 * the description, not the name). Waits for each: a row's buttons render after a list reloads.
 */
export async function expectExactNames(t: Test, scope: Pick<Page, 'getByRole'>, controls: [Role, string][]): Promise<void> {
  for (const [role, name] of controls) t.ok(await appears(scope.getByRole(role, { name, exact: true })), `${role} named exactly "${name}"`);
}

/**
 * Holds the page's GraphQL requests whose body contains `marker` until the returned `release` is
 * called, so that a test can look at the page while they are on their way (busy states).
 */
export async function holdGraphql(page: Page, marker: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const passing: Promise<void>[] = [];
  const hold = (route: Route) => {
    const pass = (async () => {
      if ((route.request().postData() ?? '').includes(marker)) await held;
      await route.continue();
    })();
    passing.push(pass);
    return pass;
  };
  await page.route('**/api/graphql', hold);
  return async () => {
    release();
    // Each held request goes on before the handler is removed (a removed handler's routes are taken over).
    await Promise.all(passing);
    await page.unroute('**/api/graphql', hold);
  };
}

/** Whether `locator` becomes visible within `timeoutMs`: `isVisible()` answers at once, before a page's fetches have rendered. */
export async function appears(locator: Locator, timeoutMs = 5000): Promise<boolean> {
  return locator.first().waitFor({ state: 'visible', timeout: timeoutMs }).then(() => true, () => false);
}

export const screenshotsOn = process.env.VEXIL_SCREENSHOTS === '1';

/** A full-page screenshot into docs/screenshots/<name>.png, when screenshots are on. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!screenshotsOn) return;
  const dir = projectPath('docs', 'screenshots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}
