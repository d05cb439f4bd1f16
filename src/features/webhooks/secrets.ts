/**
 * Signing secrets at rest (docs/webhooks.md, "Secrets"). A secret must stay usable for HMAC, so
 * it cannot be only hashed: with VEXIL_CLUSTER_SECRET set it is stored encrypted (AES-256-GCM,
 * the key derived from the cluster secret by HKDF-SHA256), `v1:<iv>:<tag>:<ciphertext>`;
 * without it, as `plain:<secret>` (the database is then its only protection, as docs/webhooks.md
 * says). A secret is never logged, never in the audit log, never answered after its creation or
 * rotation.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const keyFrom = (clusterSecret: string): Buffer => Buffer.from(hkdfSync('sha256', clusterSecret, 'vexil-webhooks', 'webhook signing secrets v1', 32));

export function sealSecret(secret: string, clusterSecret: string | null): string {
  if (clusterSecret === null) return `plain:${secret}`;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFrom(clusterSecret), iv);
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `v1:${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ct.toString('base64')}`;
}

/** The secret, or null when it cannot be read (encrypted under another cluster secret, or none now). */
export function openSecret(stored: string, clusterSecret: string | null): string | null {
  if (stored.startsWith('plain:')) return stored.slice('plain:'.length);
  const parts = stored.split(':');
  if (parts[0] !== 'v1' || parts.length !== 4 || clusterSecret === null) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFrom(clusterSecret), Buffer.from(parts[1], 'base64'));
    decipher.setAuthTag(Buffer.from(parts[2], 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
