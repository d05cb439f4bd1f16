/**
 * The options of `npm run bench` (bench/run.ts): `usage()` lists them, `parseArgs` reads and
 * checks them once, before anything runs, so a bad value stops the run at once instead of in the
 * middle of a scenario.
 */
import path from 'node:path';
import { ROOT, log } from './harness.js';
import { ALL_SCENARIOS, type AnyScenario } from './registry.js';
import type { HarnessOptions } from './scenario-types.js';

/** What `npm run bench` runs without --scenario: everything but the legacy `rest-eval` (rest-front/rest-pool cover it). */
const MAX_PAIRS = 1000;

export const DEFAULT_SCENARIOS = ['rest-front', 'rest-pool', 'graphql-eval', 'graphql-batch', 'graphql-batch-front', 'mixed', 'ofrep-eval', 'ofrep-bulk', 'ofrep-304', 'flags-scaling', 'snapshot', 'propagation'];

export interface RunOptions extends HarnessOptions {
  scenarios: AnyScenario[];
  bareOnly: boolean;
  outDir: string;
}

// ----------------------------------------------------------------- options

export function usage(): string {
  return [
    'usage: node dist/bench/run.js [options]',
    '  --duration SEC         measured seconds per load run (5)',
    '  --warmup SEC           unmeasured load before each measurement (2)',
    '  --connections N        concurrent keep-alive connections (50)',
    '  --flags N              boolean flags seeded for the load scenarios (10)',
    '  --scenario LIST        comma-separated names, "default" or "all" (default); a bare name works too (npm run bench -- abuse); known:',
    `                         ${ALL_SCENARIOS.map((s) => s.name).join(', ')}`,
    '  --skip LIST            scenarios to leave out of the selection',
    '  --pipelining N         requests in flight per connection (1)',
    '  --engine lean|autocannon  load generator (lean)',
    '  --paced-fraction F     re-measure REST scenarios at F × their max req/s, fixed rate (0.5; 0 = off)',
    '  --no-paced             same as --paced-fraction 0',
    '  --eval-workers N       VEXIL_EVAL_WORKERS for scenarios that do not fix it (service default when absent)',
    '  --pool-workers N       VEXIL_EVAL_WORKERS of rest-pool (2)',
    '  --batch N              aliased evaluations per graphql-batch request (100)',
    '  --write-rate N         config upserts per second of the mixed scenario (20)',
    '  --scale-flags LIST     flag counts of flags-scaling (10,1000,100000)',
    '  --scaling-workers N    VEXIL_EVAL_WORKERS of flags-scaling and the snapshot start-up (0)',
    '  --rounds N             round-robin rounds of flags-scaling; each row keeps its quietest (2)',
    '  --pairs N              interleaved A/B pairs (rounds) of the paired scenarios: insights, context-sample, paired, rest-vs-bare (5 each),',
    '                         front-threads (3); an integer in [1, 1000]; VEXIL_BENCH_PAIRS=N when not given',
    '  --snapshot-flags N     flags of the snapshot scenario (100000)',
    '  --nodes N              service nodes of the propagation scenario (2)',
    '  --changes N            config changes timed by the propagation scenario (200)',
    '  --no-pin               do not pin server/generator to CPU 0/1',
    '  --bare-only            measure the bare uWebSockets.js baseline only',
    '  --service PATH         service entry point (dist/src/main.js)',
    '  --startup-timeout SEC  how long a service may take to answer (30; 300 for seeded scaling services)',
    '  --quiet-wait SEC       before each measurement, wait up to SEC for the machine to be idle (0)',
    '  --keep-data            keep the services\' temporary data directories',
    '  --verbose              echo the children\'s output (VEXIL_BENCH_SERVER_NODE_ARGS: node flags for the service alone, e.g. --trace-gc)',
    '  --out DIR              results directory (bench/results)',
    'VEXIL_BENCH_IMAGE=<image>: every service in a podman container of that image (bench/container.ts; docs/deploy.md).',
    'propagation needs DATABASE_URL and NATS_URL in the environment (skipped otherwise).',
    'Not in default: rest-eval, rest-node-front, rest-metrics-off, rest-segment, abuse, paired, snapshot-memory, and the two large-organization ones (3-5 minutes each on a busy 2-core VM;',
    '  run together they seed their 100,000 flags once):',
    '  isolation   evaluation p99 with and without an admin loop on a 100,000-flag node, alternating --duration slices;',
    '              VEXIL_BENCH_ISOLATION_SLICES (6) pairs, VEXIL_BENCH_ISOLATION_FRACTION (0.35) of the measured capacity or',
    '              VEXIL_BENCH_ISOLATION_RATE req/s, VEXIL_BENCH_ADMIN_PAUSE_MS (0) between admin requests',
    '  large-org   page, search, full list, GraphQL pages, the refused document (VEXIL_BENCH_LARGE_REPS, 10) and the UI',
    '              figures of bench/results/ui-100k.json (VEXIL_BENCH_UI_JSON); both: VEXIL_BENCH_ORG_FLAGS (100000)',
    '  provider    the in-process OpenFeature provider: evaluations/s on one core (resolve, resolveBooleanEvaluation,',
    '              client.getBooleanValue; median of VEXIL_BENCH_PROVIDER_ROUNDS (9) × VEXIL_BENCH_PROVIDER_SEC (0.5) s) beside REST,',
    '              paired against VEXIL_BENCH_BASE_PROVIDER=<another build\'s provider dist/index.js> when set; initialize on a',
    '              VEXIL_BENCH_ORG_FLAGS-flag feed (VEXIL_BENCH_PROVIDER_LOAD=0: left out)',
    '  insights    the cost of counting evaluations per flag (docs/insights.md): REST, OFREP bulk, 100-alias GraphQL and the provider',
    '              with counting on against off, then the engine work in the runner (insights-engine-bulk, -single); VEXIL_BENCH_INSIGHTS=',
    '              rest,bulk,graphql,provider,engine picks; 2 × --pairs engine pairs of VEXIL_BENCH_ENGINE_SEC (0.5) s a side',
    '  saturation  management on a saturated core without CAP_SYS_NICE (bench/saturation.ts): paged reads, key creation and',
    '              the new key\'s first evaluation, scheduled changes; VEXIL_BENCH_SATURATION_READS (30), _CONNECTIONS (50), _LEAD_MS (5000)',
  ].join('\n');
}

export function select(names: string): AnyScenario[] {
  if (names === 'all') return [...ALL_SCENARIOS];
  const list = names === 'default' ? DEFAULT_SCENARIOS : names.split(',').filter(Boolean);
  return list.flatMap((n) => (n === 'default' ? DEFAULT_SCENARIOS : [n])).map((name) => {
    const s = ALL_SCENARIOS.find((x) => x.name === name);
    if (s === undefined) throw new Error(`unknown scenario ${name}; known: ${ALL_SCENARIOS.map((x) => x.name).join(', ')}`);
    return s;
  });
}

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): RunOptions {
  const o: RunOptions = {
    durationSec: 5,
    connections: 50,
    pipelining: 1,
    flags: 10,
    warmupSec: 2,
    servicePath: path.join(ROOT, 'dist/src/main.js'),
    startupTimeoutSec: 30,
    evalWorkers: undefined,
    pin: true,
    verbose: false,
    keepData: false,
    engine: 'lean',
    quietWaitSec: 0,
    poolWorkers: 2,
    batch: 100,
    writeRate: 20,
    nodes: 2,
    changes: 200,
    pacedFraction: 0.5,
    scaleFlags: [10, 1000, 100_000],
    rounds: 2,
    scalingWorkers: '0',
    snapshotFlags: 100_000,
    pairs: undefined,
    scenarios: select('default'),
    bareOnly: false,
    outDir: path.join(ROOT, 'bench/results'),
  };
  let skip: string[] = [];
  const num = (flag: string, v: string | undefined, min: number, max = Infinity): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min || n > max) throw new Error(`${flag} needs a number in [${min}, ${max}]`);
    return n;
  };
  const count = (flag: string, v: string | undefined, max: number): number => {
    const n = num(flag, v, 1, max);
    if (!Number.isInteger(n)) throw new Error(`${flag} needs a whole number in [1, ${max}]`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--duration': o.durationSec = num(flag, val(), 0.1); break;
      case '--connections': o.connections = Math.floor(num(flag, val(), 1)); break;
      case '--flags': o.flags = Math.floor(num(flag, val(), 1)); break;
      case '--pipelining': o.pipelining = Math.floor(num(flag, val(), 1)); break;
      case '--warmup': o.warmupSec = num(flag, val(), 0); break;
      case '--quiet-wait': o.quietWaitSec = num(flag, val(), 0); break;
      case '--startup-timeout': o.startupTimeoutSec = num(flag, val(), 1); break;
      case '--eval-workers': o.evalWorkers = String(Math.floor(num(flag, val(), 0, 256))); break;
      case '--pool-workers': o.poolWorkers = Math.floor(num(flag, val(), 1, 256)); break;
      case '--scaling-workers': o.scalingWorkers = String(Math.floor(num(flag, val(), 0, 256))); break;
      case '--batch': o.batch = Math.floor(num(flag, val(), 1, 100_000)); break;
      case '--write-rate': o.writeRate = num(flag, val(), 0.1, 1000); break;
      case '--nodes': o.nodes = Math.floor(num(flag, val(), 2, 16)); break;
      case '--changes': o.changes = Math.floor(num(flag, val(), 1)); break;
      case '--rounds': o.rounds = Math.floor(num(flag, val(), 1, 100)); break;
      case '--pairs': o.pairs = count(flag, val(), MAX_PAIRS); break;
      case '--snapshot-flags': o.snapshotFlags = Math.floor(num(flag, val(), 1)); break;
      case '--paced-fraction': o.pacedFraction = num(flag, val(), 0, 1); break;
      case '--no-paced': o.pacedFraction = 0; break;
      case '--scale-flags': {
        const list = (val() ?? '').split(',').filter(Boolean).map((x) => Math.floor(num(flag, x, 1)));
        if (list.length === 0) throw new Error('--scale-flags needs a comma-separated list of flag counts');
        o.scaleFlags = list;
        break;
      }
      case '--service': o.servicePath = path.resolve(val() ?? ''); break;
      case '--out': o.outDir = path.resolve(val() ?? ''); break;
      case '--no-pin': o.pin = false; break;
      case '--bare-only': o.bareOnly = true; break;
      case '--keep-data': o.keepData = true; break;
      case '--verbose': o.verbose = true; break;
      case '--engine': {
        const e = val();
        if (e !== 'lean' && e !== 'autocannon') throw new Error('--engine is lean or autocannon');
        o.engine = e;
        break;
      }
      case '--scenario': o.scenarios = select(val() ?? ''); break;
      case '--skip': skip = (val() ?? '').split(',').filter(Boolean); break;
      case '-h':
      case '--help':
        process.stdout.write(`${usage()}\n`);
        process.exit(0);
        break;
      default:
        // `npm run bench -- abuse`: a bare scenario name (or list) is --scenario.
        if (!a.startsWith('-')) o.scenarios = select(a);
        else throw new Error(`unknown argument ${a}\n${usage()}`);
    }
  }
  // The environment's pair count is checked here too, once, whichever scenario will use it.
  if (o.pairs === undefined && env.VEXIL_BENCH_PAIRS !== undefined && env.VEXIL_BENCH_PAIRS !== '') o.pairs = count('VEXIL_BENCH_PAIRS', env.VEXIL_BENCH_PAIRS, MAX_PAIRS);
  for (const n of skip) if (!ALL_SCENARIOS.some((s) => s.name === n)) throw new Error(`--skip: unknown scenario ${n}`);
  o.scenarios = o.scenarios.filter((s) => !skip.includes(s.name));
  if (o.engine === 'autocannon' && o.pacedFraction > 0) {
    log('the paced (fixed-rate) runs need the lean engine: --paced-fraction set to 0');
    o.pacedFraction = 0;
  }
  return o;
}

