/**
 * Logging: pino, JSON lines on stderr. The rest of the code keeps the `log.info(msg, fields)` call
 * shape through this thin adapter; levels, serialisation, error serialisation (`err`), child
 * bindings and redaction are pino's.
 *
 * Never pass key values, tokens or evaluation contexts to a logger. As a second line of defence the
 * paths in REDACT (the credential headers, and fields named like a key value) are censored by pino.
 */
import { pino, type DestinationStream, type Logger as Pino } from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger for one component: its lines carry `bindings` (for example `{component: 'http'}`). */
  child(bindings: Record<string, unknown>): Logger;
  /** True when debug lines are written (guards building per-request fields on the hot path). */
  readonly debugEnabled: boolean;
}

const SECRET_FIELDS = ['x-management-key', 'authorization', 'x-api-key', 'x-operator-token', 'key', 'adminKey', 'token', 'managementKey', 'operatorToken', 'apiKey'];

/** Censored at the top level, one level down (`headers.authorization`) and two (`req.headers.…`). */
export const REDACT: string[] = SECRET_FIELDS.flatMap((f) => {
  const p = /^[A-Za-z_$][\w$]*$/.test(f) ? f : `["${f}"]`;
  const sep = p.startsWith('[') ? '' : '.';
  return [p, `*${sep}${p}`, `*.*${sep}${p}`];
});

class PinoAdapter implements Logger {
  readonly debugEnabled: boolean;

  constructor(private readonly p: Pino) {
    this.debugEnabled = p.isLevelEnabled('debug');
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    if (fields === undefined) this.p.debug(msg);
    else this.p.debug(fields, msg);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    if (fields === undefined) this.p.info(msg);
    else this.p.info(fields, msg);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    if (fields === undefined) this.p.warn(msg);
    else this.p.warn(fields, msg);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    if (fields === undefined) this.p.error(msg);
    else this.p.error(fields, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new PinoAdapter(this.p.child(bindings));
  }
}

/**
 * A logger at `level` with `base` fields on every line. `out` receives each line without its
 * newline (tests); by default lines go to stderr (file descriptor 2).
 */
export function createLogger(level: Level, base: Record<string, unknown> = {}, out?: (line: string) => void): Logger {
  const dest: DestinationStream =
    out === undefined ? pino.destination({ dest: 2, sync: true }) : { write: (s: string) => out(s.endsWith('\n') ? s.slice(0, -1) : s) };
  const p = pino(
    {
      level,
      base,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    dest,
  );
  return new PinoAdapter(p);
}
