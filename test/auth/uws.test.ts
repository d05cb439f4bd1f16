/** uWebSockets.js fallback detection: refuse the slow JavaScript shim unless explicitly allowed. */
import t from 'tap';
import { assertNativeUws, isNativeUws, uws } from '../../src/http/uws.js';

t.test('isNativeUws tells native code from a JavaScript function', async (t) => {
  t.notOk(isNativeUws({ App: function App() {} }), 'a plain function');
  t.notOk(isNativeUws({ App: () => ({}) }), 'an arrow function');
  t.notOk(isNativeUws({ App: class App {} }), 'a class');
  t.notOk(isNativeUws({ App: function App() { return '{ [native code] }'; } }), 'a function whose body merely mentions native code');
  t.notOk(isNativeUws({ App: undefined }), 'missing');
  t.notOk(isNativeUws({ App: 'App' }), 'not a function');
  t.ok(isNativeUws({ App: Math.max }), 'a native function');
  t.ok(isNativeUws({ App: Math.max.bind(null) }), 'a bound native function');
  t.ok(isNativeUws(), 'the installed uWebSockets.js is native here');
  t.equal(typeof uws.App, 'function');
});

t.test('assertNativeUws refuses the fallback unless allowed', async (t) => {
  const fake = { App: function App() {} };
  t.throws(() => assertNativeUws(false, fake), /VEXIL_ALLOW_UWS_FALLBACK=1/, 'refused, naming the switch');
  t.doesNotThrow(() => assertNativeUws(true, fake), 'allowed explicitly');
  t.doesNotThrow(() => assertNativeUws(false, { App: Math.max }), 'native passes');
  t.doesNotThrow(() => assertNativeUws(false), 'the real module passes');
});
