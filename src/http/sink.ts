/**
 * What every streamed answer (`StreamSink`, handler.ts) does whatever carries it: writes only while
 * open, ends once, and tells its listeners once when it closes — ended here, by the client going
 * away, or at shutdown. A carrier supplies how a chunk is written and how the answer ends: a
 * uWebSockets.js response, a node:http one, or another front thread's (threads/relay.ts).
 */
import type { StreamSink } from './handler.js';

export abstract class Sink implements StreamSink {
  closed = false;
  private listeners: (() => void)[] = [];

  /** Writes one chunk to the client; called only while open. */
  protected abstract send(chunk: string): void;
  /** Ends the answer; called once, while open. */
  protected abstract close(): void;

  write(chunk: string): void {
    if (!this.closed) this.send(chunk);
  }

  end(): void {
    if (this.closed) return;
    this.close();
    this.finish();
  }

  onClose(cb: () => void): void {
    if (this.closed) cb();
    else this.listeners.push(cb);
  }

  /** The client went away (or the carrier is gone): closed without ending. */
  closedByPeer(): void {
    this.finish();
  }

  /** Called once when the sink closes, before its listeners. */
  protected closing(): void {}

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing();
    const ls = this.listeners;
    this.listeners = [];
    for (const cb of ls) cb();
  }
}
