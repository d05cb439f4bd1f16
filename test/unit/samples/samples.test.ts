/**
 * Sampled contexts for previews (VEXIL_CONTEXT_SAMPLE; docs/change-requests.md, "Sampled contexts"):
 * a thread's rings (samples/sampler.ts) and the actor's store (samples/store.ts), directly.
 */
import t from 'tap';
import { ConfigError, loadConfig } from '../../../src/config.js';
import type { Evaluation, EvaluationRequest } from '../../../src/domain/types.js';
import type { CompiledFlag, OrgSnapshot } from '../../../src/engine/index.js';
import { EvalCounts } from '../../../src/ops/eval-counts.js';
import { ContextSampler, MAX_SAMPLE_CONTEXT_CHARS, SAMPLE_STRIDE } from '../../../src/samples/sampler.js';
import { ENTRY_OVERHEAD, SampleStore } from '../../../src/samples/store.js';

const snap = { org: { id: 'org-1' } } as unknown as OrgSnapshot;
const flag = (name: string) => ({ flag: { name } }) as unknown as CompiledFlag;
const req = (userId: string, stage = 'production', context: Record<string, unknown> | null = { n: userId }, clientId: string | null = null): EvaluationRequest => ({ userId, stage, clientId, context });
const users = (rows: string[]) => {
  const out: string[] = [];
  for (let i = 0; i < rows.length; i += SAMPLE_STRIDE) out.push(`${rows[i + 1]}/${rows[i + 2]}/${rows[i + 3]}`);
  return out;
};

t.test('a thread keeps the last N requests per flag and stage, and a drain empties it', async (t) => {
  const s = new ContextSampler(3);
  const f = flag('f');
  const g = flag('g');
  for (let i = 1; i <= 5; i++) s.keep(snap, f, req(`u${i}`));
  s.keep(snap, f, req('d1', 'development'));
  s.keep(snap, g, req('x'));
  t.ok(s.pending);
  const rows = s.drain();
  t.same(users(rows), ['f/production/u3', 'f/production/u4', 'f/production/u5', 'f/development/d1', 'g/production/x'], 'the last three of f in production, oldest first; each flag and stage apart');
  t.same(rows.slice(0, SAMPLE_STRIDE), ['org-1', 'f', 'production', 'u3', '', '{"n":"u3"}'], 'a row: organization, flag, stage, userId, clientId, context JSON');
  t.notOk(s.pending, 'nothing waits after a drain');
  t.same(s.drain(), [], 'and a second drain is empty');
  s.keep(snap, f, req('u6', 'production', null, 'ios'));
  t.same(s.drain(), ['org-1', 'f', 'production', 'u6', 'ios', ''], 'the ring starts again; no context is an empty string');
});

t.test('a context too long to keep is left out', async (t) => {
  const s = new ContextSampler(2);
  s.keep(snap, flag('f'), req('big', 'production', { s: 'x'.repeat(MAX_SAMPLE_CONTEXT_CHARS) }));
  s.keep(snap, flag('f'), req('small'));
  t.same(users(s.drain()), ['f/production/small']);
});

t.test('EvalCounts has no sampler when VEXIL_CONTEXT_SAMPLE is 0', async (t) => {
  t.equal(new EvalCounts(undefined, true).samples, null, 'default: off');
  t.equal(new EvalCounts(undefined, true, 0).samples, null);
  t.equal(new EvalCounts(undefined, false, 4).samples?.perStage, 4);
  // What evaluation calls (evaluation/run.ts): off, the compiled flag gets no rings; on, the request is kept.
  const ev = { reason: { code: 'default' } } as unknown as Evaluation;
  const off = flag('f');
  new EvalCounts(undefined, false, 0).evaluated(snap, off, req('u1'), ev);
  t.equal(off.samples, undefined, 'off: evaluated() leaves the flag without rings');
  const on = new EvalCounts(undefined, false, 2);
  on.evaluated(snap, flag('f'), req('u1'), ev);
  t.same(users(on.samples!.drain()), ['f/production/u1'], 'on: evaluated() keeps the request');
});

t.test('the store keeps the N most recent distinct contexts per flag and stage', async (t) => {
  const st = new SampleStore(3, 1 << 20);
  const row = (fl: string, stage: string, u: string, client = '', ctx = '') => ['org-1', fl, stage, u, client, ctx];
  st.add([...row('f', 'production', 'a', '', '{"k":1}'), ...row('f', 'production', 'b'), ...row('f', 'Production', 'c', 'ios')]);
  st.add([...row('f', 'production', 'a', '', '{"k":2}'), ...row('f', 'production', 'd')]);
  t.same(
    st.contexts('org-1', 'f', 'PRODUCTION'),
    [
      { userId: 'c', clientId: 'ios', context: null },
      { userId: 'a', clientId: null, context: { k: 2 } },
      { userId: 'd', clientId: null, context: null },
    ],
    'a user seen again replaces its sample and is the most recent; b, the oldest, went; stages match ignoring case',
  );
  t.same(st.contexts('org-1', 'f', 'development'), [], 'another stage: none');
  t.same(st.contexts('org-2', 'f', 'production'), [], 'another organization: none');
  t.equal(st.size, 3);
});

t.test('the store holds at most maxBytes, dropping the oldest samples of the node first', async (t) => {
  const ctx = JSON.stringify({ s: 'y'.repeat(1000) });
  const one = 1 + ctx.length + ENTRY_OVERHEAD;
  const st = new SampleStore(1000, one * 10);
  for (let i = 0; i < 25; i++) st.add(['org-1', `f${i % 3}`, 'production', String.fromCharCode(97 + (i % 26)), '', ctx]);
  t.equal(st.size, 10, 'ten fit');
  t.ok(st.bytes <= one * 10, `bytes ${st.bytes} within the cap`);
  const kept = ['f0', 'f1', 'f2'].flatMap((f) => st.contexts('org-1', f, 'production').map((c) => c.userId)).sort();
  t.same(kept, ['p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y'], 'the ten most recent');
});

t.test('the store drains the actor’s own sampler before it answers', async (t) => {
  const own = new ContextSampler(2);
  const st = new SampleStore(2, 1 << 20, own);
  own.keep(snap, flag('f'), req('mine'));
  t.same(st.contexts('org-1', 'f', 'production').map((c) => c.userId), ['mine']);
});

t.test('VEXIL_CONTEXT_SAMPLE and its byte cap are checked at start-up', async (t) => {
  t.equal(loadConfig({}).contextSample, 0, 'off by default');
  t.equal(loadConfig({ VEXIL_CONTEXT_SAMPLE: '100' }).contextSample, 100);
  t.equal(loadConfig({}).contextSampleMaxBytes, 64 * 1024 * 1024);
  const refusal = (env: Record<string, string>): unknown => {
    try {
      loadConfig(env);
      return null;
    } catch (err) {
      return err;
    }
  };
  for (const bad of ['-1', '1001', 'many', '2.5']) {
    const err = refusal({ VEXIL_CONTEXT_SAMPLE: bad });
    t.ok(err instanceof ConfigError, `${bad}: a ConfigError`);
    t.match((err as Error).message, /Invalid setting VEXIL_CONTEXT_SAMPLE\b/, `${bad} is refused naming the setting`);
  }
  t.match((refusal({ VEXIL_CONTEXT_SAMPLE_MAX_BYTES: '1000' }) as Error).message, /VEXIL_CONTEXT_SAMPLE_MAX_BYTES/, 'under 1 MiB is refused');
});
