/** The flags an actor process inherits from its node (src/management/transport.ts, actorExecArgv). */
import t from 'tap';
import { actorExecArgv } from '../../../src/management/transport.js';

t.same(actorExecArgv([]), [], 'no flags, none');
t.same(actorExecArgv(['--max-old-space-size=4096', '--enable-source-maps']), ['--max-old-space-size=4096', '--enable-source-maps'], "the node's own flags are kept");
t.same(actorExecArgv(['--inspect', '--inspect-brk=9229', '--debug-port=1', '--max-old-space-size=8192']), ['--max-old-space-size=8192'], 'no inspector: its port is the front');
t.same(
  actorExecArgv(['--import=file:///x/loader.mjs', '--require', './apm.js', '-r', 'y', '--loader', 'z', '--experimental-loader=w', '--stack-size=2000']),
  ['--stack-size=2000'],
  'preloaded modules are dropped, whether the value follows = or is the next argument',
);
