/**
 * Fuzz harness (docs/limits.md, "Fuzzing"): generated requests against a real node, several at a time, and the
 * invariants every answer must keep. Case counts scale with VEXIL_FUZZ_SCALE (1 in CI: 20,000+
 * cases in total; `VEXIL_FUZZ_SCALE=50 npx tap test/fuzz` is the 1,000,000-case long run), and
 * VEXIL_FUZZ_SEED replays a run (the seed is printed).
 */
import fc from 'fast-check';
import type { Test } from 'tap';

export const SCALE = Number(process.env.VEXIL_FUZZ_SCALE ?? '1');
/** Cases of a suite at this scale. */
export const scaled = (n: number): number => Math.max(1, Math.round(n * SCALE));
export const SEED = Number(process.env.VEXIL_FUZZ_SEED ?? Date.now() % 2 ** 31);
export const CONCURRENCY = Number(process.env.VEXIL_FUZZ_CONCURRENCY ?? '8');

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Got {
  status: number;
  contentType: string;
  text: string;
  json: any;
}

/** One request with a deadline: a hang fails the case. */
export async function send(base: string, s: Sent, timeoutMs = 15_000): Promise<Got> {
  const res = await fetch(base + s.path, {
    method: s.method,
    headers: s.headers,
    body: s.body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, json };
}

/** The answer's problems, empty when it keeps every invariant (docs/api.md, "Errors"; docs/graphql.md, "Errors"; docs/limits.md). */
export function violations(s: Sent, g: Got, graphql: boolean): string[] {
  const out: string[] = [];
  if (g.status >= 500 && g.status !== 503) out.push(`HTTP ${g.status}`);
  if (g.status === 503 && g.json?.code !== 'UNAVAILABLE') out.push('503 without code UNAVAILABLE');
  if (g.status >= 400 && s.method !== 'HEAD') {
    if (!/^application\/problem\+json/.test(g.contentType)) out.push(`error ${g.status} is not problem+json (${g.contentType})`);
    else if (typeof g.json?.code !== 'string' || g.json?.status !== g.status) out.push(`problem without code/status: ${g.text.slice(0, 200)}`);
  }
  if (graphql && g.status === 200) {
    if (g.json === undefined || typeof g.json !== 'object') out.push('GraphQL 200 without a JSON body');
    else for (const e of g.json.errors ?? []) if (typeof e?.extensions?.code !== 'string') out.push(`GraphQL error without extensions.code: ${JSON.stringify(e).slice(0, 200)}`);
    if (g.json?.errors?.some((e: any) => e?.extensions?.code === 'INTERNAL')) out.push(`INTERNAL error: ${g.text.slice(0, 300)}`);
  }
  return out;
}

/** Runs `cases` generated requests, `CONCURRENCY` at a time; records the first violations. */
export async function fuzz(t: Test, base: string, arb: fc.Arbitrary<Sent>, cases: number, graphql: boolean): Promise<number> {
  const samples = fc.sample(arb, { numRuns: cases, seed: SEED });
  let next = 0;
  let failures = 0;
  const statuses = new Map<number, number>();
  const slow = new Map<string, number>();
  const worker = async () => {
    while (next < samples.length && failures < 5) {
      const s = samples[next++];
      let g: Got;
      const t0 = performance.now();
      try {
        g = await send(base, s);
        const k = `${s.method} ${g.status}`;
        slow.set(k, (slow.get(k) ?? 0) + performance.now() - t0);
      } catch (err) {
        failures++;
        t.fail(`no answer (${(err as Error).message}) for ${JSON.stringify(s).slice(0, 500)}`);
        continue;
      }
      statuses.set(g.status, (statuses.get(g.status) ?? 0) + 1);
      const v = violations(s, g, graphql);
      if (v.length > 0) {
        failures++;
        t.fail(`${v.join('; ')} for ${JSON.stringify(s).slice(0, 500)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  if (process.env.VEXIL_FUZZ_TIMING) t.comment(JSON.stringify([...slow].sort((a, b) => b[1] - a[1]).slice(0, 8)));
  t.comment(`seed ${SEED}: ${samples.length} cases, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  return samples.length;
}

// ---- generators shared by the suites -------------------------------------------------------------

const printable = fc.string({ unit: fc.constantFrom(...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~') });

export const anyJson = fc.jsonValue({ maxDepth: 4 });

/** A value that is sometimes deep or wide (the context limits). */
export const abusiveJson = fc.oneof(
  { weight: 150, arbitrary: anyJson },
  { weight: 1, arbitrary: fc.integer({ min: 30, max: 3000 }).map((d) => JSON.parse('['.repeat(d) + ']'.repeat(d)) as unknown) },
  { weight: 1, arbitrary: fc.integer({ min: 9000, max: 12_000 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))) },
);

export function keyHeader(keys: string[]): fc.Arbitrary<Record<string, string>> {
  // Mostly real keys: an unknown key costs a database lookup, which would dominate the run.
  return fc.oneof(
    { weight: 20, arbitrary: fc.constantFrom(...keys).map((k) => ({ 'x-management-key': k })) },
    fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }).map((k) => ({ 'x-management-key': k })),
    printable.map((k) => ({ 'x-management-key': k })),
    fc.constant({}),
  );
}

export const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ 'content-type': 'application/json' }) },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'application/json; charset=latin1', '').map((c) => (c === '' ? {} : { 'content-type': c })) },
);

export const pathSegment = fc.oneof(
  fc.constantFrom('f', 'g', 'missing', 'x'.repeat(200), '..', '%2e%2e', '%ZZ', '%00', 'é', '%F0%9F%9A%80', ''),
  fc.stringMatching(/^[A-Za-z0-9_.~%-]{0,40}$/),
);

export const queryString = fc.oneof(fc.constant(''), fc.constantFrom('?explain=true', '?explain=1', '?explain', '?limit=0', '?a=%ZZ'), fc.stringMatching(/^\?[A-Za-z0-9=&%._-]{0,40}$/));

export const bodyText = (json: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 8, arbitrary: json.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: printable },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '[]', 'null', '"x"', '{"a":1}{', '\uFEFF{}', '{"__proto__":{"x":1}}') },
  );
