/**
 * How to reach NATS (docs/limits.md, "NATS"): `NATS_URL` is one or more comma-separated server
 * URLs, which may carry credentials (`nats://user:pass@host:port`, `nats://token@host:port`);
 * `tls://` asks for TLS (server certificates are checked against the system CAs and
 * `NODE_EXTRA_CA_CERTS`); `VEXIL_NATS_CREDS` names a `.creds` file (user JWT and NKey seed) read at
 * start.
 *
 * Credentials are lifted out of the URLs into the client's options, and `redacted` is the only
 * form of the URL that is ever logged. Pure apart from reading the creds file.
 */
import { readFileSync } from 'node:fs';
import { credsAuthenticator, type ConnectionOptions } from 'nats';

export interface NatsTarget {
  options: Pick<ConnectionOptions, 'servers' | 'user' | 'pass' | 'token' | 'authenticator' | 'tls'>;
  /** The servers without credentials, for logs. */
  redacted: string;
}

export function natsTarget(url: string, credsFile: string | null, read: (path: string) => Uint8Array = readFileSync): NatsTarget {
  const servers: string[] = [];
  let user: string | undefined;
  let pass: string | undefined;
  let token: string | undefined;
  let tls = false;
  for (const raw of url.split(',')) {
    const u = new URL(raw.trim());
    if (u.username !== '' || u.password !== '') {
      const name = decodeURIComponent(u.username);
      if (u.password !== '') {
        user = name;
        pass = decodeURIComponent(u.password);
      } else {
        token = name;
      }
    }
    if (u.protocol === 'tls:') tls = true;
    const scheme = u.protocol === 'tls:' ? 'nats:' : u.protocol;
    servers.push(`${scheme}//${u.host}`);
  }
  const options: NatsTarget['options'] = { servers };
  if (user !== undefined) Object.assign(options, { user, pass });
  if (token !== undefined) options.token = token;
  if (tls) options.tls = {};
  if (credsFile !== null) options.authenticator = credsAuthenticator(read(credsFile));
  return { options, redacted: servers.join(',') };
}
