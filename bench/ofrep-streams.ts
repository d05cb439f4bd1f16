/**
 * OFREP event streams at scale: opens N idle SSE streams (default 5,000, all of one key, so the
 * node runs with VEXIL_SSE_MAX_STREAMS_PER_KEY=N) on one node
 * (`node dist/src/main.js`, PGlite) from raw sockets, reports the node's resident memory per
 * stream, then makes one flag change and reports how many streams got `refetchEvaluation` and how
 * fast (first and last, as this process reads them: on a shared machine the reading side dominates). Usage: `npm run build && node dist/bench/ofrep-streams.js [--streams N]`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const argStreams = process.argv.indexOf('--streams');
const STREAMS = argStreams > 0 ? Number(process.argv[argStreams + 1]) : 5000;

const rssBytes = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function main(): Promise<void> {
  const admin = randomBytes(32).toString('hex');
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vexil-streams-'));
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
    env: { ...process.env, DATABASE_URL: '', NATS_URL: '', HOST: '127.0.0.1', PORT: String(port), VEXIL_DATA_DIR: dataDir, VEXIL_BOOTSTRAP_ADMIN_KEY: admin, VEXIL_LOG_LEVEL: 'warn', VEXIL_EVAL_WORKERS: '0', VEXIL_RATE_LIMIT_EVAL: '100000000', VEXIL_SSE_MAX_STREAMS_PER_KEY: String(STREAMS) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/livez`)).ok) break;
      } catch {
        /* not yet */
      }
      if (i > 600) throw new Error('node did not start');
      await sleep(100);
    }
    const api = async (method: string, p: string, body: unknown, key = admin) => {
      const r = await fetch(base + p, { method, headers: { 'content-type': 'application/json', 'x-management-key': key }, body: JSON.stringify(body) });
      const text = await r.text();
      if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
      return JSON.parse(text) as Record<string, any>;
    };
    const variants = [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }];
    await api('POST', '/api/flags', { name: 's1', project: 'default', type: 'boolean', variants });
    const config = (v: string) => ({ stage: 'production', enabled: true, defaultVariantKey: v, rolloutPercentage: 100 });
    await api('POST', '/api/flags/s1/configs', config('on'));
    const key = (await api('POST', '/api/keys', { name: 'streams', permissions: ['CanEvaluate'], application: 'default' })).key as string;
    const bulk = await api('POST', '/ofrep/v1/evaluate/flags', { context: { targetingKey: 'u', stage: 'production' } }, key);
    const url = new URL(bulk.eventStreams[0].url as string);
    const request = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`;

    await sleep(1000);
    const before = rssBytes(child.pid!);
    const sockets: net.Socket[] = [];
    let open = 0;
    let got = 0;
    let lastAt = 0;
    let firstAt = 0;
    let changedAt = 0;
    const opened = new Promise<void>((resolve, reject) => {
      const openOne = () =>
        new Promise<void>((res, rej) => {
          const s = net.connect(port, '127.0.0.1', () => s.write(request));
          let buf = '';
          let headersDone = false;
          s.setEncoding('utf8');
          s.on('data', (d: string) => {
            buf += d;
            if (!headersDone && buf.includes('\r\n\r\n')) {
              headersDone = true;
              if (!buf.startsWith('HTTP/1.1 200')) rej(new Error(buf.slice(0, 200)));
              open++;
              res();
            }
            if (headersDone && changedAt > 0 && buf.includes('refetchEvaluation')) {
              got++;
              lastAt = performance.now();
              if (firstAt === 0) firstAt = lastAt;
              buf = '';
            }
          });
          s.on('error', rej);
          sockets.push(s);
        });
      (async () => {
        for (let i = 0; i < STREAMS; i += 200) {
          await Promise.all(Array.from({ length: Math.min(200, STREAMS - i) }, openOne));
        }
      })().then(resolve, reject);
    });
    await opened;
    await sleep(2000);
    const after = rssBytes(child.pid!);
    changedAt = performance.now();
    await api('POST', '/api/flags/s1/configs', config('off'));
    const writeDone = performance.now();
    const deadline = Date.now() + 5000;
    while (got < open && Date.now() < deadline) await sleep(20);
    const report = {
      streams: open,
      rssBeforeMiB: +(before / 2 ** 20).toFixed(1),
      rssAfterMiB: +(after / 2 ** 20).toFixed(1),
      bytesPerStream: Math.round((after - before) / open),
      eventsReceived: got,
      writeMs: +(writeDone - changedAt).toFixed(1),
      firstEventAfterWriteMs: +(firstAt - writeDone).toFixed(1),
      lastEventAfterWriteMs: +(lastAt - writeDone).toFixed(1),
      lastEventAfterChangeStartMs: +(lastAt - changedAt).toFixed(1),
    };
    console.log(JSON.stringify(report, null, 2));
    for (const s of sockets) s.destroy();
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
