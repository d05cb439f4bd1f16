/**
 * Segment scenarios (docs/evaluation.md, "Segments"; docs/benchmarks.md): evaluations of a flag
 * whose rule names a segment with a 20,000-id `in` list, measured against rest-front's single
 * `==` condition (bench/paired.ts `paired-segment-rest`). The request is rest-front's, with the
 * same user and context; only the flag differs.
 */
import { BOOLEAN_VARIANTS, createEvalKey, restEvalRequest, seedBooleanFlags } from './scenarios.js';
import type { Scenario } from './scenario-types.js';

/** Ids of the segment's list: the benchmark's user (`u1`) is the last one. */
export const SEGMENT_IDS = 20_000;

export const SEGMENT_SCENARIOS: Scenario[] = [
  {
    name: 'rest-segment',
    description:
      `POST /flags/bench-segment-flag: rest-front's request (user u1, country NL) against a flag whose single rule names ` +
      `segment bench-audience, a userId \`in\` list of ${SEGMENT_IDS} ids with u1 last; answer {"variant":true,"key":"on"}. ` +
      'VEXIL_EVAL_WORKERS=0: compare with rest-front (paired-segment-rest).',
    env: { VEXIL_EVAL_WORKERS: '0' },
    paced: true,
    async setup(ctx) {
      ctx.state.evalKey = await createEvalKey(ctx);
      await seedBooleanFlags(ctx, ctx.opts.flags);
      const ids = Array.from({ length: SEGMENT_IDS - 1 }, (_, i) => `bench-user-${i}`);
      ids.push('u1');
      await ctx.api('POST', '/api/segments', { name: 'bench-audience', conditions: [{ field: 'userId', operator: 'in', value: ids }] }, { expect: 201 });
      await ctx.api('POST', '/api/flags', { name: 'bench-segment-flag', project: 'default', type: 'boolean', variants: BOOLEAN_VARIANTS }, { expect: 201 });
      await ctx.api('POST', '/api/flags/bench-segment-flag/configs', {
        stage: 'production',
        enabled: true,
        defaultVariantKey: 'off',
        rolloutPercentage: 100,
        rules: [{ priority: 1, conditions: [], segments: ['bench-audience'], allocations: [{ variantKey: 'on', percentage: 100 }] }],
      }, { expect: 200 });
    },
    request: (ctx) => restEvalRequest(String(ctx.state.evalKey), 'bench-segment-flag'),
  },
];
