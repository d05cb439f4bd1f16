/**
 * How the management actor's mailbox (mailbox.ts) travels: the two ends of the channel between the
 * front and the actor, a child process (`child_process.fork`, V8 serialisation over its IPC pipe).
 * Its threads, V8's garbage collection helpers included, are its own and all run at a lower
 * priority (VEXIL_MANAGEMENT_NICE, 15 by default: a bounded share of a busy core that no capability
 * is needed to keep; priority.ts); it shares no memory map and no helper with the front, so nothing
 * the front waits for runs at the actor's priority (docs/cluster.md, "Management never starves").
 * It ends itself when the front's process goes away.
 *
 * The pieces of large answers cross through PIECE_SLOTS slots of PIECE_BYTES (mailbox.ts) outside
 * the messages, so that the front receives no new buffer per piece: the actor writes into a file
 * the front opened, unlinked and handed to it as a file descriptor (in /dev/shm where there is
 * one, so in memory), and the front reads each piece into its own slot buffer, made once (25 µs
 * per 256 KiB piece, measured here). Carried inside IPC messages instead, each piece cost the front
 * three copies and three new buffers (pipe reads, their concatenation, V8 deserialisation).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectPath } from '../util/paths.js';
import { yieldHelperThreads } from '../util/thread-priority.js';
import { PIECE_BYTES, PIECE_SLOTS, type FromActor, type ToActor } from './mailbox.js';

/** The front's end: posts to the actor, hears from it and from its end. */
export interface ActorLink {
  /** The actor's process id (null only if the fork failed to start it). */
  readonly pid: number | null;
  /** The actor's file descriptor of the pieces file (its `init` message carries it). */
  readonly piecesFd: number;
  /** The first `length` bytes of a piece slot, valid until the slot is given back to the actor. */
  piece(slot: number, length: number): Uint8Array;
  post(m: ToActor): void;
  onMessage(fn: (m: FromActor) => void): void;
  offMessage(fn: (m: FromActor) => void): void;
  /** Once, when the actor has ended (code null: ended by a signal). */
  onExit(fn: (code: number | null) => void): void;
  onError(fn: (err: Error) => void): void;
  /** Ends the actor at once (its database is not closed). */
  kill(): void;
}

/** The actor's end. */
export interface ActorPort {
  post(m: FromActor): void;
  onMessage(fn: (m: ToActor) => void): void;
  /** Once, when the front is gone without a `close` (its process died): the actor closes. */
  onLost(fn: () => void): void;
}

/**
 * Nice value of every thread of the actor's process (Linux: per thread) when the node names none
 * (VEXIL_MANAGEMENT_NICE): the front, at nice 0, wins a shared core. Raising a nice value needs no
 * capability; nothing here ever lowers it again (that would need CAP_SYS_NICE). Why 10, not 15
 * as before: docs/cluster.md, "Nice 10, with the front's helper threads at the front's priority".
 */
export const ACTOR_NICE = 10;

/** How long an actor whose front is gone gets to close its database before it exits anyway. */
const LOST_EXIT_MS = 5000;

/** The actor's code bundled into one file (scripts/bundle-actor.mjs: loading tsc's output cost every start about 0.5 s of CPU more). */
const ACTOR_FILE = (): string => projectPath('dist', 'workers', 'management.bundle.js');

/** Starts an actor (workers/management.ts, bundled) in a process of its own, every thread of it at `nice`. */
export function spawnActor(nice: number = ACTOR_NICE): ActorLink {
  return processLink(nice);
}

/** The actor process's file descriptor for the pieces file (its stdio index). */
const PIECES_FD = 4;
const PIECES_SIZE = PIECE_SLOTS * PIECE_BYTES;

/** A file for the pieces, in memory where /dev/shm is, already unlinked: it goes when its descriptors close. */
function openPiecesFile(): number {
  let base = tmpdir();
  try {
    if (statSync('/dev/shm').isDirectory()) base = '/dev/shm';
  } catch {
    // No /dev/shm: the page cache of the temporary directory holds it as well.
  }
  const dir = mkdtempSync(join(base, 'vexil-pieces-'));
  try {
    const fd = openSync(join(dir, 'pieces'), 'w+', 0o600);
    ftruncateSync(fd, PIECES_SIZE);
    return fd;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function forkActor(piecesFd: number, nice: number): ChildProcess {
  // The nice value is its argument: the actor lowers its threads before it reads any message.
  return fork(ACTOR_FILE(), [String(nice)], {
    execArgv: actorExecArgv(process.execArgv),
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc', piecesFd],
  });
}

/**
 * V8 flags of the actor's process, after the node's own: its garbage collection runs on its main
 * thread alone. With V8's default, four helper threads scavenge and mark in parallel; in the
 * isolation bench (100,000 flags, the node on one core) they took more of that core than the
 * actor's JavaScript (4 × 77 ms per second against 216) and kept five runnable threads beside the
 * front: the front waited 84 ms per second for its core and evaluation p99 beside the admin loop
 * was ×2.1-2.5 its quiet p99. Single-threaded, the actor did more admin work in the same slices
 * and the front waited 19 ms per second (docs/cluster.md, "The actor's garbage collection").
 */
export const ACTOR_V8_FLAGS: readonly string[] = ['--single-threaded-gc'];

/**
 * The node's own flags for the actor's process (heap sizes, for one), but neither an inspector's
 * (its port is the front's) nor preloaded modules (`--import`, `--require`, `--loader`: they were
 * meant for the program the node runs, and a test runner's loaders cost every actor a slow start);
 * then ACTOR_V8_FLAGS (once). A flag's value may be the next argument (`--require x`) or after `=`.
 */
export function actorExecArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (/^--(inspect|debug)/.test(a)) continue;
    const m = /^(--import|--require|-r|--loader|--experimental-loader)(=.*)?$/.exec(a);
    if (m === null) out.push(a);
    else if (m[2] === undefined) i += 1;
  }
  for (const f of ACTOR_V8_FLAGS) if (!out.includes(f)) out.push(f);
  return out;
}

function processLink(nice: number): ActorLink {
  const fd = openPiecesFile();
  let child: ChildProcess;
  try {
    child = forkActor(fd, nice);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let connected = true;
  let open = true;
  child.once('exit', () => {
    connected = false;
    open = false;
    closeSync(fd);
  });
  child.once('disconnect', () => (connected = false));
  // The front's copy of the slots: a piece is read into its slot and written to the client from there.
  const slots = Buffer.allocUnsafeSlow(PIECES_SIZE);
  return {
    pid: child.pid ?? null,
    piecesFd: PIECES_FD,
    piece: (slot, length) => {
      // Its descriptor is closed (and its number may be another file's by now): nothing to read.
      if (!open) throw new Error('The management actor stopped');
      const at = slot * PIECE_BYTES;
      readFully(fd, slots, at, length);
      return slots.subarray(at, at + length);
    },
    post: (m) => {
      if (connected) child.send(m);
    },
    onMessage: (fn) => void child.on('message', fn as (m: unknown) => void),
    offMessage: (fn) => void child.off('message', fn as (m: unknown) => void),
    onExit: (fn) => void child.once('exit', (code) => fn(code)),
    onError: (fn) => void child.on('error', fn),
    kill: () => void child.kill('SIGKILL'),
  };
}

/** The nice value the front gave the actor (its first argument), ACTOR_NICE when it gave none. */
export function actorNice(arg: string | undefined): number {
  const n = arg !== undefined && /^\d{1,2}$/.test(arg) ? Number(arg) : NaN;
  return n <= 19 ? n : ACTOR_NICE;
}

/** The actor's end, from inside workers/management.ts, and its priority: every thread of its process at `nice`. */
export function actorPort(nice: number = actorNice(process.argv[2])): ActorPort {
  if (process.send === undefined) throw new Error('workers/management.ts runs as a process forked by the node (management/transport.ts)');
  lowerOwnThread(nice);
  yieldHelperThreads(nice);
  const send = process.send.bind(process);
  // Signals meant for the node's process group (a terminal's Ctrl-C) reach the actor too: it ends
  // when the front closes it or goes away, not before the front has finished with it.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {});
  return {
    post: (m) => {
      if (process.connected) send(m);
    },
    onMessage: (fn) => void process.on('message', fn as (m: unknown) => void),
    // The front's process went away (killed, crashed): nothing is left to serve.
    onLost: (fn) =>
      void process.once('disconnect', () => {
        setTimeout(() => process.exit(0), LOST_EXIT_MS).unref();
        fn();
      }),
  };
}

/** The actor's writer into the piece slots of the pieces file (`fd`, from its `init`). */
export function pieceWriter(fd: number): (slot: number, bytes: Uint8Array) => void {
  return (slot, bytes) => {
    for (let done = 0; done < bytes.byteLength; ) done += writeSync(fd, bytes, done, bytes.byteLength - done, slot * PIECE_BYTES + done);
  };
}

function readFully(fd: number, into: Buffer, at: number, length: number): void {
  for (let done = 0; done < length; ) {
    const n = readSync(fd, into, at + done, length - done, at + done);
    if (n === 0) throw new Error('the pieces file is shorter than its slots');
    done += n;
  }
}

function lowerOwnThread(nice: number): void {
  try {
    setPriority(0, nice);
  } catch {
    // Not permitted or not supported here: the actor still works, only without yielding.
  }
}
