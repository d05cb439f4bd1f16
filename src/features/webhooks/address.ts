/**
 * Where a webhook may be sent (docs/webhooks.md, "Safety"): `https` only unless
 * VEXIL_WEBHOOK_ALLOW_HTTP=1, and never to an address in a loopback, private, link-local (cloud
 * metadata, 169.254.169.254, included), unique-local, shared (CGNAT), multicast or otherwise
 * special range unless VEXIL_WEBHOOK_ALLOW_PRIVATE=1.
 *
 * The check is made on the address actually connected to: the sender (send.ts) resolves the host
 * through `guardedLookup`, which refuses a blocked answer, and checks the connected socket's
 * remote address again, so a name that resolves to a public address when the endpoint is saved
 * and to 127.0.0.1 when a message is sent (DNS rebinding) reaches nothing.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { badRequest } from '../../domain/errors.js';

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) BLOCKED.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address an IPv6 address embeds (IPv4-mapped, IPv4-compatible, NAT64), or null. */
function embeddedV4(address: string): string | null {
  const a = address.toLowerCase();
  const m = /^(?:::ffff:|::ffff:0:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (m !== null) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (hex !== null) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** Whether a connection to `address` (an IP literal) is refused without VEXIL_WEBHOOK_ALLOW_PRIVATE. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return true;
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  const v4 = embeddedV4(bare);
  if (v4 !== null) return BLOCKED.check(v4, 'ipv4');
  return BLOCKED.check(bare, 'ipv6');
}

export interface AddressRules {
  allowHttp: boolean;
  allowPrivate: boolean;
}

/** A resolver like `dns.lookup(host, {all: true})`: every address of `host`. Tests inject their own. */
export type Resolve = (host: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

export const MAX_URL_LENGTH = 2048;

/**
 * Checks an endpoint URL when it is saved (400 with the reason): absolute http(s), no credentials,
 * https unless allowed, and no blocked IP literal or `localhost`. Names are checked again, on the
 * address connected to, at every attempt.
 */
export function checkEndpointUrl(raw: string, rules: AddressRules): string {
  if (raw.length > MAX_URL_LENGTH) throw badRequest(`url must be at most ${MAX_URL_LENGTH} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest('url must be an absolute URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw badRequest('url must be https');
  if (u.protocol === 'http:' && !rules.allowHttp) throw badRequest('url must be https (VEXIL_WEBHOOK_ALLOW_HTTP=1 allows http)');
  if (u.username !== '' || u.password !== '') throw badRequest('url must not carry credentials');
  if (u.hash !== '') throw badRequest('url must not have a fragment');
  if (!rules.allowPrivate) {
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && isBlockedAddress(host))) {
      throw badRequest('url must not point to a loopback, private, link-local or otherwise special address (VEXIL_WEBHOOK_ALLOW_PRIVATE=1 allows it)');
    }
  }
  return u.toString();
}

/** The error an attempt ends with when the address it would connect to is refused. */
export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request / net.connect that resolves with `resolve` and refuses (unless
 * `allowPrivate`) when any answer is a blocked address.
 */
export function guardedLookup(resolve: Resolve, allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number | string } | number, callback: LookupCallback): void => {
    const all = typeof options === 'object' && options.all === true;
    resolve(hostname).then(
      (answers) => {
        const wanted = typeof options === 'object' && (options.family === 4 || options.family === 6) ? answers.filter((a) => a.family === options.family) : answers;
        if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), all ? [] : '', 0);
        if (!allowPrivate) {
          const bad = wanted.find((a) => isBlockedAddress(a.address));
          if (bad !== undefined) return callback(new BlockedAddressError(`${hostname} resolves to a refused address (${bad.address})`), all ? [] : '', 0);
        }
        if (all) callback(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, all ? [] : '', 0),
    );
  };
}
