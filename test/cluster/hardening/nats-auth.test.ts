/**
 * NATS_URL may carry credentials (docs/limits.md, "NATS"). Each case starts a private nats-server on a free
 * port that demands them (`--user/--pass`, `--auth` token); a node with the right credentials joins
 * the bus (`/healthz` says `bus: up`), one with wrong credentials does not, and the credentials
 * never appear in the node's logs. `natsTarget` lifts credentials out of the URL (pure).
 */
import t from 'tap';
import { natsTarget } from '../../../src/cluster/nats-options.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/util/log.js';
import { NATS_BIN, PrivateNats, until } from '../../helpers/cluster.js';
import { startTestNode } from '../../helpers/node.js';

t.test('natsTarget', async (t) => {
  t.same(natsTarget('nats://alice:s3cr%40t@127.0.0.1:4333', null), { options: { servers: ['nats://127.0.0.1:4333'], user: 'alice', pass: 's3cr@t' }, redacted: 'nats://127.0.0.1:4333' });
  t.same(natsTarget('nats://tok123@h:1,nats://tok123@h:2', null).options, { servers: ['nats://h:1', 'nats://h:2'], token: 'tok123' });
  t.same(natsTarget('tls://h:4443', null).options, { servers: ['nats://h:4443'], tls: {} }, 'tls:// asks for TLS');
  t.throws(() => natsTarget('nats://h:1', '/nonexistent/x.creds'), 'a missing creds file fails at start');
  t.throws(() => loadConfig({ NATS_URL: 'http://u:p@h:1' }), { message: /Invalid setting NATS_URL/ });
  t.equal(loadConfig({ NATS_URL: 'tls://h:1', VEXIL_NATS_CREDS: '/x.creds' }).natsCreds, '/x.creds');
});

const skip = NATS_BIN ? false : 'nats-server not installed';

for (const mode of ['user', 'token'] as const) {
  t.test(`a private nats-server with ${mode} authentication`, { skip }, async (t) => {
    const secret = `pw-${Math.random().toString(36).slice(2)}`;
    const nats = await PrivateNats.start(mode === 'user' ? ['--user', 'vexil', '--pass', secret] : ['--auth', secret]);
    t.teardown(() => nats.stop());
    const cred = mode === 'user' ? `vexil:${secret}` : secret;
    const lines: string[] = [];
    const log = createLogger('debug', {}, (line: string) => lines.push(line));
    const good = await startTestNode(t, { env: { NATS_URL: `nats://${cred}@127.0.0.1:${nats.port}`, VEXIL_LOG_LEVEL: 'debug' }, start: { log } });
    const up = await until(() => good.req('GET', '/healthz'), (r) => r.body?.bus === 'up', 5000);
    t.equal(up.body.bus, 'up', 'the right credentials join the bus');
    const wrong = mode === 'user' ? 'vexil:wrong' : 'wrong-token';
    const bad = await startTestNode(t, { env: { NATS_URL: `nats://${wrong}@127.0.0.1:${nats.port}`, VEXIL_LOG_LEVEL: 'debug' }, start: { log } });
    await new Promise((r) => setTimeout(r, 700));
    t.equal((await bad.req('GET', '/healthz')).body.bus, 'down', 'wrong credentials are refused');
    const none = await startTestNode(t, { env: { NATS_URL: nats.url } });
    t.equal((await none.req('GET', '/healthz')).body.bus, 'down', 'no credentials are refused');
    t.ok(lines.length > 0, 'the nodes logged');
    t.notOk(lines.some((l) => l.includes(secret) || l.includes('wrong')), 'no credential in any log line');
    t.ok(lines.some((l) => l.includes(`nats://127.0.0.1:${nats.port}`)), 'the logged URL is the redacted one');
  });
}
