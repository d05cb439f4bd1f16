/**
 * Where a request's microseconds go: sums the self time of a `.cpuprofile` (node --cpu-prof) by
 * part of the REST path (issue 28, docs/benchmarks.md "REST against the bare endpoint") and, given
 * the server CPU per request measured in the same run, turns the shares into µs per request.
 *
 *   node dist/bench/cpu-profile-summary.js FILE.cpuprofile [--cpu-us-per-request 29.6] [--top 30] [--last SEC]
 *
 * The profile covers the whole process life (start-up, seeding, idle slices of the paired run);
 * `--last SEC` keeps only the samples of its last SEC seconds (with one pair of rest-vs-bare, the
 * service's slice is the last thing it does before it is stopped), and idle time is left out. Native work of uWebSockets.js (HTTP parsing, epoll, socket writes done outside a JS call)
 * shows as "(program)".
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  startTime: number;
  endTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Parts of the request, first match wins: [label, test on "functionName url"]. */
const PARTS: [string, RegExp][] = [
  ['idle', /^\(idle\) /],
  ['garbage collection', /^\(garbage collector\) /],
  ['key hash (SHA-256, node:crypto)', /node:internal\/crypto|^hash |^digest |^createHash |^update /],
  ['key memo and key format check', /auth\/key-material\.js|input-formats\.js/],
  ['key cache', /auth\/key-cache\.js|util\/clock\.js/],
  ['timers', /node:timers|node:internal\/timers|priority_queue|async_hooks|^(scheduleTimer|toggleTimerRef) /],
  ['admission (authenticate, rate limiter)', /auth\/authenticate\.js|ratelimit\/|auth\/permissions\.js|auth\/client-address\.js/],
  ['JSON.parse of the body', /^parse $|bounded-json|json-depth/],
  ['body read (copy, decode)', /BodyReader|^(push|finish|decode|toString|utf8Slice|concat|slice|isUtf8|fromArrayLike|copyBytesFrom|createUnsafeBuffer) /],
  ['validation of the body', /domain\/validation/],
  ['engine.evaluate', /src\/engine\//],
  ['evaluation glue (evaluate.ts, routes)', /src\/evaluation\/|features\/evaluation\//],
  ['answer serialisation (JSON.stringify)', /^stringify /],
  ['metrics', /src\/ops\//],
  ['exchange and routing (exchange.ts, router.ts, problem.ts)', /src\/http\/(exchange|router|problem|query|status)\.js/],
  ['uWS request/response calls (headers, cork, write, end)', /src\/http\/uws-front\.js|^(getHeader|getParameter|getUrl|getQuery|getMethod|cork|writeStatus|writeHeader|end|endWithoutBody|onData|onAborted|getRemoteAddressAsText) /],
  ['uWS native (HTTP parsing, epoll, socket I/O)', /^\(program\) /],
];

function main(): void {
  const file = process.argv[2];
  if (file === undefined) {
    console.error('usage: cpu-profile-summary FILE.cpuprofile [--cpu-us-per-request N] [--top N]');
    process.exit(2);
  }
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const perRequest = Number(arg('--cpu-us-per-request') ?? NaN);
  const top = Number(arg('--top') ?? 30);
  const lastSec = Number(arg('--last') ?? Infinity);
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const from = p.endTime - lastSec * 1e6;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t >= from) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const byFunction = new Map<string, number>();
  const byPart = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const where = f.url === '' ? '' : f.url.replace(/^file:\/\/.*?\/dist\//, '').replace(/^file:\/\/.*?\/node_modules\//, 'node_modules/');
    const name = `${f.functionName || '(anonymous)'} ${where}${where ? `:${f.lineNumber + 1}` : ''}`;
    const part = PARTS.find(([, re]) => re.test(`${f.functionName} ${where}`))?.[0] ?? 'other JavaScript';
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byPart.set(part, (byPart.get(part) ?? 0) + us);
    if (part !== 'idle') busy += us;
  }
  const row = (label: string, us: number): string => {
    const share = us / busy;
    const cells = [label, `${(share * 100).toFixed(1)} %`];
    if (Number.isFinite(perRequest)) cells.push((share * perRequest).toFixed(2));
    return `| ${cells.join(' | ')} |`;
  };
  const head = Number.isFinite(perRequest) ? '| part | share of busy CPU | µs per request |\n|---|---:|---:|' : '| part | share of busy CPU |\n|---|---:|';
  console.log(`busy CPU in the profile: ${(busy / 1e6).toFixed(2)} s (idle ${(((byPart.get('idle') ?? 0)) / 1e6).toFixed(2)} s)\n`);
  console.log(head);
  for (const [part, us] of [...byPart].filter(([k]) => k !== 'idle').sort((a, b) => b[1] - a[1])) console.log(row(part, us));
  console.log(`\ntop ${top} functions by self time:\n`);
  console.log(head.replace('part', 'function'));
  for (const [fn, us] of [...byFunction].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(row(fn, us));
}

main();
