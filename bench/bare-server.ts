/**
 * Bare uWebSockets.js baseline for the benchmark harness.
 *
 * It does the minimum an evaluation server must do for `POST /flags/:name`
 * (docs/api.md#evaluation) and nothing more: read the JSON body (onData/onAborted),
 * JSON.parse it, authenticate the `x-management-key` header by looking up its
 * SHA-256 in a Map, and answer a fixed evaluation result in one corked write.
 * The hash is Vexil's own `hashKey` (src/auth/key-material.ts: the one-shot
 * `crypto.hash` where Node has it), computed on every request, so "look up the
 * key" costs here what it costs a Vexil that hashes every request (issue 28).
 * Every figure of the real service is reported as a ratio against this one.
 *
 * Usage: node dist/bench/bare-server.js [--port N] [--host H] [--key HEX]
 *   env:  PORT, HOST, BENCH_KEY (the accepted management key)
 * Prints `listening <port>` on stdout when ready (port 0 picks a free port).
 */
import { hashKey } from '../src/auth/key-material.js';
import { loadNativeUws, type us_socket } from '../src/http/uws.js';

// The baseline is the native uWebSockets.js that Vexil itself loads; never a fallback.
const loaded = loadNativeUws();
if (!loaded.ok) {
  console.error(`bare-server: no native uWebSockets.js binary loads here (${loaded.reasons.join('; ')}); refusing to measure`);
  process.exit(2);
}
const uWS = loaded.module;

/** The key the harness uses against the bare server when none is given. */
const DEFAULT_BARE_KEY = 'b'.repeat(64);

const RESPONSE_BODY = '{"variant":true,"key":"on"}';
const MAX_BODY = 1024 * 1024;

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function main(): void {
  const port = Number(argValue('--port') ?? process.env.PORT ?? 0);
  const host = argValue('--host') ?? process.env.HOST ?? '127.0.0.1';
  const key = argValue('--key') ?? process.env.BENCH_KEY ?? DEFAULT_BARE_KEY;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`bare-server: invalid port ${String(port)}`);
    process.exit(2);
  }

  // Hash -> key record, as a real server stores only hashes of key values.
  const keys = new Map<string, { id: string; permissions: string[] }>();
  keys.set(hashKey(key), { id: 'bench', permissions: ['CanEvaluate'] });

  const app = uWS.App();

  app.post('/flags/:name', (res, req) => {
    // The request object is only valid synchronously: copy what we need.
    const name = req.getParameter(0);
    const mgmtKey = req.getHeader('x-management-key');
    let aborted = false;
    let chunks: Buffer[] | undefined;
    let size = 0;

    res.onAborted(() => {
      aborted = true;
    });

    res.onData((chunk, isLast) => {
      if (aborted) return;
      size += chunk.byteLength;
      if (size > MAX_BODY) {
        aborted = true;
        res.cork(() => {
          res.writeStatus('413 Payload Too Large').end('', true);
        });
        return;
      }
      // The ArrayBuffer is neutered after return: copy unless it is the last.
      if (!isLast) {
        (chunks ??= []).push(Buffer.from(new Uint8Array(chunk.slice(0))));
        return;
      }
      let raw: Buffer;
      if (chunks === undefined) {
        raw = Buffer.from(chunk);
      } else {
        chunks.push(Buffer.from(chunk));
        raw = Buffer.concat(chunks);
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const record = mgmtKey === '' ? undefined : keys.get(hashKey(mgmtKey));
      res.cork(() => {
        if (record === undefined) {
          res.writeStatus('401 Unauthorized').end();
        } else if (
          typeof body !== 'object' ||
          body === null ||
          typeof (body as { stage?: unknown }).stage !== 'string' ||
          name === ''
        ) {
          res.writeStatus('400 Bad Request').end();
        } else {
          res
            .writeStatus('200 OK')
            .writeHeader('content-type', 'application/json')
            .end(RESPONSE_BODY);
        }
      });
    });
  });

  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });

  app.listen(host, port, (listenSocket) => {
    if (listenSocket === false) {
      console.error(`bare-server: cannot listen on ${host}:${port}`);
      process.exit(1);
    }
    const actual = uWS.us_socket_local_port(listenSocket as unknown as us_socket);
    process.stdout.write(`listening ${actual}\n`);
    const stop = (): void => {
      uWS.us_listen_socket_close(listenSocket);
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

main();
