/**
 * `npm run bench -- webhook-burst` (docs/webhooks.md, docs/benchmarks.md "Webhooks"): one node
 * (embedded PGlite) with VEXIL_BENCH_WEBHOOK_ENDPOINTS (10) endpoints subscribed to `*`, all on
 * one local receiver that answers 204 at once; a burst of VEXIL_BENCH_WEBHOOK_WRITES (1,000)
 * flag creations, VEXIL_BENCH_WEBHOOK_CONCURRENCY (8) at a time. Figures: write throughput,
 * deliveries per second on the node (every message of the burst, from the first write's answer to
 * the last delivery), and the outbox lag of each message (its arrival at the receiver minus the
 * answer of its write): p50, p99, max.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { log, percentile, startService, workersLabel, type Measurement } from './harness.js';
import type { CustomScenario } from './custom-scenario.js';

const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};

export const webhookBurst: CustomScenario = {
  name: 'webhook-burst',
  description:
    'One node (PGlite), VEXIL_BENCH_WEBHOOK_ENDPOINTS (10) endpoints subscribed to *, one local receiver answering 204; a burst of ' +
    'VEXIL_BENCH_WEBHOOK_WRITES (1000) flag creations, 8 at a time. Deliveries/s from the first write to the last delivery; outbox ' +
    'lag = arrival at the receiver − the answer of the write.',
  async run(rc) {
    const { opts, adminKey } = rc;
    const endpoints = num('VEXIL_BENCH_WEBHOOK_ENDPOINTS', 10);
    const writes = num('VEXIL_BENCH_WEBHOOK_WRITES', 1000);
    const concurrency = num('VEXIL_BENCH_WEBHOOK_CONCURRENCY', 8);
    const row: Measurement = { name: `webhook-burst-${endpoints}e`, description: this.description, status: 'ok', evalWorkers: workersLabel(opts) };
    // flag name -> arrival times (one per endpoint)
    const arrivals = new Map<string, number[]>();
    let received = 0;
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = performance.now();
        received++;
        try {
          const m = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          if (m.type === 'flag.create') {
            const name = m.data.target.name as string;
            arrivals.set(name, [...(arrivals.get(name) ?? []), at]);
          }
        } catch {
          /* counted, not timed */
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const target = await startService(opts, adminKey, { env: { VEXIL_WEBHOOK_ALLOW_HTTP: '1', VEXIL_WEBHOOK_ALLOW_PRIVATE: '1', VEXIL_LOG_LEVEL: 'warn' }, startupTimeoutSec: Math.max(opts.startupTimeoutSec, 180) });
    try {
      const call = async (method: string, p: string, body: unknown) => {
        const r = await fetch(target.baseUrl + p, { method, headers: { 'x-management-key': adminKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
        return r;
      };
      for (let i = 0; i < endpoints; i++) await call('POST', '/api/webhooks', { url: `${rxUrl}/e${i}`, events: ['*'] });
      const acked = new Map<string, number>();
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          for (;;) {
            const i = next++;
            if (i >= writes) return;
            const name = `wh-burst-${i}`;
            await call('POST', '/api/flags', { name, project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] });
            acked.set(name, performance.now());
          }
        }),
      );
      const writesDone = performance.now();
      const expected = writes * endpoints;
      const deadline = Date.now() + 600_000;
      while ([...arrivals.values()].reduce((s, a) => s + a.length, 0) < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const lags: number[] = [];
      let last = 0;
      for (const [name, ats] of arrivals) {
        const ack = acked.get(name);
        if (ack === undefined) continue;
        for (const at of ats) {
          lags.push(at - ack);
          last = Math.max(last, at);
        }
      }
      lags.sort((a, b) => a - b);
      const delivered = lags.length;
      const seconds = (last - t0) / 1000;
      const figures = {
        endpoints,
        writes,
        writesPerSec: writes / ((writesDone - t0) / 1000),
        delivered,
        expected,
        deliveriesPerSec: delivered / seconds,
        lagP50Ms: percentile(lags, 50),
        lagP99Ms: percentile(lags, 99),
        lagMaxMs: lags[lags.length - 1] ?? 0,
        drainAfterLastWriteMs: last - writesDone,
        received,
      };
      row.extra = figures;
      row.notes = [
        `${writes} writes in ${((writesDone - t0) / 1000).toFixed(1)} s (${figures.writesPerSec.toFixed(0)}/s); ${delivered}/${expected} messages delivered, ` +
          `${figures.deliveriesPerSec.toFixed(0)} deliveries/s; outbox lag p50 ${figures.lagP50Ms.toFixed(0)} ms, p99 ${figures.lagP99Ms.toFixed(0)} ms, ` +
          `max ${figures.lagMaxMs.toFixed(0)} ms; the last delivery ${figures.drainAfterLastWriteMs.toFixed(0)} ms after the last write`,
      ];
      if (delivered < expected) row.status = 'failed';
      log(`${row.name}: ${row.notes[0]}`);
    } catch (err) {
      row.status = 'failed';
      row.error = err instanceof Error ? err.message : String(err);
    } finally {
      await target.stop();
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
    return [row];
  },
};
