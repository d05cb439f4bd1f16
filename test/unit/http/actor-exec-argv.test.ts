/** The flags an actor process inherits from its node (src/management/transport.ts, actorExecArgv). */
import t from 'tap';
import { ACTOR_V8_FLAGS, actorExecArgv } from '../../../src/management/transport.js';

const GC = [...ACTOR_V8_FLAGS];
t.same(GC, ['--single-threaded-gc'], "the actor's own V8 flags: its garbage collection on its main thread alone");
t.same(actorExecArgv([]), GC, 'no flags of the node: the actor\'s own alone');
t.same(actorExecArgv(['--max-old-space-size=4096', '--enable-source-maps']), ['--max-old-space-size=4096', '--enable-source-maps', ...GC], "the node's own flags are kept, then the actor's");
t.same(actorExecArgv(['--inspect', '--inspect-brk=9229', '--debug-port=1', '--max-old-space-size=8192']), ['--max-old-space-size=8192', ...GC], 'no inspector: its port is the front');
t.same(
  actorExecArgv(['--import=file:///x/loader.mjs', '--require', './apm.js', '-r', 'y', '--loader', 'z', '--experimental-loader=w', '--stack-size=2000']),
  ['--stack-size=2000', ...GC],
  'preloaded modules are dropped, whether the value follows = or is the next argument',
);
t.same(actorExecArgv(['--single-threaded-gc', '--liftoff-only']), ['--single-threaded-gc', '--liftoff-only'], 'a flag the node already has is not repeated');
