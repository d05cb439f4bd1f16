/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, docs/webhooks.md "Verifying"):
 * secrets are `whsec_` + base64 of 32 random bytes; the HMAC key is the decoded bytes; a signature
 * is `v1,` + base64 of HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`. During a
 * rotation every live secret signs, the signatures space-separated.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export const newSecret = (): string => SECRET_PREFIX + randomBytes(32).toString('base64');

const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');

/** `webhook-signature` for `body` sent as message `id` at `timestamp` (seconds), signed by every secret. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  const content = `${id}.${timestamp}.${body}`;
  return secrets.map((s) => `v1,${createHmac('sha256', keyOf(s)).update(content).digest('base64')}`).join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(secrets: readonly string[], id: string, nowMs: number, body: string): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(secrets, id, timestamp, body) };
}
