/** A small JSON-lines logger. Never pass key values or tokens to it. */
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: Level, base: Record<string, unknown> = {}, out: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  const min = RANK[level];
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const extra: Record<string, unknown> = {};
    if (fields) {
      for (const [k, v] of Object.entries(fields)) extra[k] = v instanceof Error ? { message: v.message, stack: v.stack } : v;
    }
    out(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...extra }));
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}
