/**
 * A minimal server-sent-events reader over fetch, for the OFREP and snapshot-feed stream suites:
 * collects the `data:` payloads of events (and their `event:` names) and tells when the server
 * ends the stream.
 */
export interface SseStream {
  status: number;
  headers: Headers;
  /** The body of a refused connection (error answers). */
  text: string;
  /** Every event's data (joined data lines), in order. */
  events: string[];
  /** Every event's name (`event:`; 'message' without one), in the same order. */
  names: string[];
  /** The next event not yet taken, or null after `timeoutMs`. */
  next(timeoutMs: number): Promise<string | null>;
  /** The same, with the event's name. */
  nextEvent(timeoutMs: number): Promise<{ name: string; data: string } | null>;
  /** Resolves when the server ends the stream (or the connection drops). */
  ended: Promise<void>;
  readonly isEnded: boolean;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal, headers: { accept: 'text/event-stream', ...headers } });
  const events: string[] = [];
  const names: string[] = [];
  let taken = 0;
  let wake: (() => void) | null = null;
  let isEnded = false;
  if (res.status !== 200 || res.body === null) {
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, events, names, next: async () => null, nextEvent: async () => null, ended: Promise.resolve(), isEnded: true, close: () => {} };
  }
  const reader = res.body.getReader();
  const ended = (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const lines = block.split('\n');
          const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart());
          if (data.length > 0) {
            names.push(lines.find((l) => l.startsWith('event:'))?.slice(6).trim() ?? 'message');
            events.push(data.join('\n'));
            wake?.();
          }
        }
      }
    } catch {
      /* aborted or dropped */
    }
    isEnded = true;
    wake?.();
  })();
  const next = async (timeoutMs: number): Promise<number | null> => {
    const deadline = Date.now() + timeoutMs;
    while (taken >= events.length && !isEnded && Date.now() < deadline) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, Math.max(0, deadline - Date.now()));
      });
      wake = null;
    }
    return taken < events.length ? taken++ : null;
  };
  return {
    status: res.status,
    headers: res.headers,
    text: '',
    events,
    names,
    ended,
    get isEnded() {
      return isEnded;
    },
    async next(timeoutMs: number) {
      const i = await next(timeoutMs);
      return i === null ? null : events[i];
    },
    async nextEvent(timeoutMs: number) {
      const i = await next(timeoutMs);
      return i === null ? null : { name: names[i], data: events[i] };
    },
    close: () => ac.abort(),
  };
}

/** Resolves true if `p` settles within `ms`. */
export const within = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
