/**
 * The attacker of `npm run bench -- abuse` (bench/abuse.ts), run as its own process so the runner
 * can pin it: `node dist/bench/attacker.js '{"baseUrl":…,"attack":"abuse-keys","keys":{…},"concurrency":16}'`.
 * Sends its attack on `concurrency` raw keep-alive connections, at `rate` requests per second (0:
 * as fast as they are answered), until SIGTERM, then prints one JSON line:
 * `{sent, rate, skipped, statuses, cpuSec}`.
 */
import net from 'node:net';
import { pathToFileURL } from 'node:url';

export interface Attack {
  name: string;
  description: string;
  request(keys: { attacker: string; reader: string }): { path: string; headers: Record<string, string>; body: () => string };
}

const hex64 = (): string => {
  let s = '';
  for (let i = 0; i < 4; i++) s += Math.floor(Math.random() * 2 ** 53).toString(16).padStart(14, '0').slice(0, 16);
  return s.padEnd(64, '0').slice(0, 64);
};

const DEEP = 100_000;
const deepBody = `{"userId":"attacker","stage":"production","context":{"a":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}}`;
// Every document is new (its first alias changes), so the node's cache of refused documents never
// answers for it: each one is checked from scratch, as an attacker varying one character forces.
const aliasTail = JSON.stringify({ query: ` ${Array.from({ length: 5000 }, (_, i) => `a${i}:flags{name}`).join(' ')} }` }).slice('{"query":"'.length);
let aliasSerial = 0;
const aliasDoc = (): string => `{"query":"{ v${aliasSerial++}:__typename${aliasTail}`;

export const ATTACKS: Attack[] = [
  { name: 'abuse-none', description: 'REST evaluation of a valid key, no attack (reference)', request: () => ({ path: '', headers: {}, body: () => '' }) },
  {
    name: 'abuse-keys',
    description: 'the same, while random 64-hex keys flood POST /flags/bench-flag-0',
    request: () => ({ path: '/flags/bench-flag-0', headers: { 'content-type': 'application/json' }, body: () => '{"userId":"x","stage":"production"}' }),
  },
  {
    name: 'abuse-deep',
    description: `the same, while another key sends ${DEEP}-deep contexts to POST /flags/bench-flag-0`,
    request: (k) => ({ path: '/flags/bench-flag-0', headers: { 'content-type': 'application/json', 'x-management-key': k.attacker }, body: () => deepBody }),
  },
  {
    name: 'abuse-aliases',
    description: 'the same, while a CanRead key sends 5,000-alias `flags { name }` GraphQL documents, each one new',
    request: (k) => ({ path: '/api/graphql', headers: { 'content-type': 'application/json', 'x-management-key': k.reader }, body: aliasDoc }),
  },
];


interface Spec {
  baseUrl: string;
  attack: string;
  keys: { attacker: string; reader: string };
  concurrency: number;
  /** Requests per second over all connections; 0: each connection sends again as soon as it is answered. */
  rate: number;
}

/**
 * One keep-alive connection with one request in flight, on a raw socket: a few µs of the
 * attacker's CPU per request where `fetch` spent about a millisecond, so the attacker, pinned with
 * the load generator, no longer starves it. Answers are framed by Content-Length (the node sends
 * no chunked answers to these requests); a closed connection is opened again.
 */
class Conn {
  private sock: net.Socket | null = null;
  private pending: Buffer = Buffer.alloc(0);
  private done: ((status: number | 'error') => void) | null = null;
  busy = false;

  constructor(private readonly host: string, private readonly port: number) {}

  send(bytes: Buffer): Promise<number | 'error'> {
    this.busy = true;
    return new Promise((resolve) => {
      this.done = (st) => {
        this.busy = false;
        this.done = null;
        resolve(st);
      };
      this.socket().write(bytes);
    });
  }

  close(): void {
    this.sock?.destroy();
  }

  private socket(): net.Socket {
    if (this.sock !== null && !this.sock.destroyed) return this.sock;
    const sock = net.connect(this.port, this.host);
    sock.setNoDelay(true);
    this.pending = Buffer.alloc(0);
    sock.on('data', (d: Buffer) => this.onData(d));
    const fail = () => {
      if (this.sock === sock) this.sock = null;
      this.done?.('error');
    };
    sock.on('error', fail);
    sock.on('close', fail);
    this.sock = sock;
    return sock;
  }

  private onData(d: Buffer): void {
    this.pending = this.pending.length === 0 ? d : Buffer.concat([this.pending, d]);
    const end = this.pending.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.pending.toString('latin1', 0, end);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? '0');
    if (this.pending.length < end + 4 + length) return;
    this.pending = this.pending.subarray(end + 4 + length);
    this.done?.(Number(head.slice(9, 12)));
  }
}

function rawRequest(u: URL, path: string, headers: Record<string, string>, body: string): Buffer {
  const b = Buffer.from(body, 'utf8');
  let head = `POST ${path} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Length: ${b.length}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), b]);
}

async function main(spec: Spec): Promise<void> {
  const attack = ATTACKS.find((a) => a.name === spec.attack);
  if (attack === undefined) throw new Error(`unknown attack ${spec.attack}`);
  const u = new URL(spec.baseUrl);
  const statuses: Record<string, number> = {};
  let running = true;
  let sent = 0;
  let skipped = 0;
  const t0 = performance.now();
  const r = attack.request(spec.keys);
  // A fixed request is built once; the key flood builds one per request (a fresh key each time).
  const fixed = attack.name === 'abuse-keys' ? null : rawRequest(u, r.path, r.headers, r.body());
  const next = () => fixed ?? rawRequest(u, r.path, { ...r.headers, 'x-management-key': hex64() }, r.body());
  const conns = Array.from({ length: spec.concurrency }, () => new Conn(u.hostname, Number(u.port)));
  const fire = async (c: Conn): Promise<void> => {
    sent++;
    const st = await c.send(next());
    statuses[st] = (statuses[st] ?? 0) + 1;
  };
  let timer: NodeJS.Timeout | undefined;
  const loops: Promise<void>[] = [];
  if (spec.rate > 0) {
    // Paced: every 10 ms, that tick's share of the rate goes out on idle connections.
    let due = 0;
    timer = setInterval(() => {
      due += spec.rate / 100;
      for (const c of conns) {
        if (due < 1) break;
        if (c.busy) continue;
        due -= 1;
        void fire(c);
      }
      if (due >= 1) {
        skipped += Math.floor(due);
        due -= Math.floor(due);
      }
    }, 10);
  } else {
    for (const c of conns) {
      loops.push((async () => {
        while (running) await fire(c);
      })());
    }
  }
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  running = false;
  clearInterval(timer);
  const rate = sent / ((performance.now() - t0) / 1000);
  await Promise.race([Promise.all(loops), new Promise((r2) => setTimeout(r2, 1000))]);
  for (const c of conns) c.close();
  process.stdout.write(JSON.stringify({ sent, rate, skipped, statuses, cpuSec: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 }) + '\n');
  process.exit(0);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) void main(JSON.parse(process.argv[2] ?? '{}') as Spec);
