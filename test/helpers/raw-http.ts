/**
 * Raw TCP clients for the HTTP fronts' suites: a socket to a node, one raw exchange on it, and a
 * socket that records what it received and when the server closed it (slow-client tests).
 */
import { connect, type Socket } from 'node:net';

export const openSocket = (url: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const u = new URL(url);
    const s = connect(Number(u.port), u.hostname, () => resolve(s));
    s.on('error', reject);
  });

/** One raw HTTP/1.1 exchange on a socket; resolves with the head and body text once the socket ends or `until` matches. */
export function rawRequest(sock: Socket, text: string, until?: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const done = () => resolve(got);
    sock.on('data', (d) => {
      got += d.toString();
      if (until?.test(got)) done();
    });
    sock.on('close', done);
    sock.on('error', done);
    sock.write(text);
  });
}

export interface WatchedSocket {
  socket: Socket;
  /** Everything received so far. */
  readonly received: string;
  /** Resolves with the ms from `watch` until the server closed the connection. */
  closed: Promise<number>;
  readonly isClosed: boolean;
}

/** Reads everything the server sends on `socket` and notes when it closes the connection. */
export function watch(socket: Socket): WatchedSocket {
  const started = performance.now();
  let received = '';
  let isClosed = false;
  socket.on('data', (d) => {
    received += d.toString();
  });
  const closed = new Promise<number>((resolve) => {
    const done = () => {
      isClosed = true;
      resolve(performance.now() - started);
    };
    socket.once('close', done);
    socket.on('error', () => {});
  });
  return {
    socket,
    closed,
    get received() {
      return received;
    },
    get isClosed() {
      return isClosed;
    },
  };
}
