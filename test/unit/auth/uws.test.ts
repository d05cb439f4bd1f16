/** Choosing the HTTP front: a native uWebSockets.js binary, newest package first, else node:http. */
import t from 'tap';
import { ExchangeContext } from '../../../src/http/exchange.js';
import { createFront } from '../../../src/http/front.js';
import { isNativeUws, loadNativeUws, type UwsCandidate, UWS_CANDIDATES } from '../../../src/http/uws.js';
import { createLogger } from '../../../src/util/log.js';

const real = (name: string) => UWS_CANDIDATES.find((c) => c.name === name)!;
const failing = (name: string, message: string): UwsCandidate => ({
  name,
  load: () => {
    throw new Error(message);
  },
});

t.test('isNativeUws tells native code from a JavaScript function', async (t) => {
  t.notOk(isNativeUws({ App: function App() {} }), 'a plain function');
  t.notOk(isNativeUws({ App: () => ({}) }), 'an arrow function');
  t.notOk(isNativeUws({ App: class App {} }), 'a class');
  t.notOk(isNativeUws({ App: function App() { return '{ [native code] }'; } }), 'a function whose body merely mentions native code');
  t.notOk(isNativeUws({ App: undefined }), 'missing');
  t.ok(isNativeUws({ App: Math.max }), 'a native function');
});

t.test('candidates are tried newest first; failures are explained', async (t) => {
  const glibc = failing('new', "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required by uws_linux_x64_127.node)");
  const abi = failing('old', "Cannot find module '/x/binaries/uws_linux_x64_127.node'");
  const shim: UwsCandidate = { name: 'shim', load: () => ({ App: function App() {} }) as never };
  const none = loadNativeUws([glibc, abi, shim]);
  t.equal(none.ok, false);
  if (!none.ok) {
    t.match(none.reasons[0], /^new: needs GLIBC_2\.38/, 'names the glibc version needed');
    t.match(none.reasons[1], /^old: no binary for Node v\d+/, 'names the missing ABI');
    t.match(none.reasons[2], /^shim: not native code/, 'a JavaScript shim is never accepted');
  }
  const fake: UwsCandidate = { name: 'fake', load: () => ({ App: Math.max }) as never };
  const picked = loadNativeUws([glibc, fake, abi]);
  t.ok(picked.ok && picked.name === 'fake', 'the first candidate that loads wins');
});

t.test('on Node 20 with glibc 2.36, the trufflesuite binary is the native front', { skip: process.versions.node.split('.')[0] !== '20' && 'Node 20 only' }, async (t) => {
  const loaded = loadNativeUws();
  t.ok(loaded.ok, 'a native binary loads');
  if (loaded.ok) {
    t.ok(['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial'].includes(loaded.name), `loaded ${loaded.name}`);
    t.ok(isNativeUws(loaded.module), 'native');
  }
  t.doesNotThrow(() => real('@trufflesuite/uws-js-unofficial').load(), 'the trufflesuite binary for ABI 115 loads');
});

t.test('without a native binary: node:http with a warning, or refusal when required', async (t) => {
  const lines: string[] = [];
  const log = createLogger('info', {}, (l) => lines.push(l));
  const ctx = new ExchangeContext(log);
  const none = [failing('@btc-vision/uwebsockets.js', "version `GLIBC_2.38' not found")];
  const front = createFront(ctx, [], { requireNative: false, candidates: none }, log);
  t.equal(front.info.kind, 'node');
  t.match(front.info.fallbackReason, /GLIBC_2\.38/);
  const warning = lines.map((l) => JSON.parse(l)).find((l) => l.level === 'warn');
  t.ok(warning, 'a warning is logged');
  t.match(warning.msg, /node:http fallback/, 'it names the fallback');
  t.match(warning.msg, /glibc 2\.38/, 'and the fix');
  t.match(warning.msg, /VEXIL_REQUIRE_NATIVE_HTTP=1/, 'and how to refuse instead');
  t.throws(() => createFront(ctx, [], { requireNative: true, candidates: none }, log), { name: 'NativeHttpRequiredError' }, 'VEXIL_REQUIRE_NATIVE_HTTP=1 refuses');
  t.throws(() => createFront(ctx, [], { requireNative: true, candidates: none }, log), /GLIBC_2\.38.*Node 20/s, 'naming cause and fix');
});
