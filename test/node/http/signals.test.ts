/**
 * `npm start`'s process on SIGTERM and SIGINT (README.md, "Health checks"): an in-flight request is answered
 * with `Connection: close`, and the process exits with status 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pgliteCopy } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal}: in-flight answered, exit 0`, async (t) => {
    const dataDir = await pgliteCopy();
    const home = mkdtempSync(join(tmpdir(), 'vexil-signal-'));
    t.teardown(() => {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    });
    const node = await spawnNode(t, { cwd: home, env: { VEXIL_DATA_DIR: dataDir } });
    const exited = node.exited.then((e) => e.code);
    const url = node.url;
    const u = new URL(url);
    const sock = connect(Number(u.port), u.hostname);
    await new Promise((r) => sock.once('connect', r));
    let answer = '';
    const answered = new Promise<void>((r) => {
      sock.on('data', (d) => {
        answer += d.toString();
        if (/\r\n\r\n\{.*\}$/s.test(answer)) r();
      });
      sock.on('close', () => r());
    });
    // Headers and half the body now; the rest after the signal.
    sock.write('POST /flags/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{');
    await new Promise((r) => setTimeout(r, 200));
    node.child.kill(signal);
    await new Promise((r) => setTimeout(r, 200));
    sock.write('}');
    await answered;
    t.match(answer, /^HTTP\/1\.1 401 /, 'the request that was in flight is answered (401: it carried no key)');
    t.match(answer, /connection: close/i, 'with Connection: close');
    t.equal(await exited, 0, 'the process exits with status 0');
  });
}
