/**
 * Idempotency-Key (docs/api.md#idempotency-key), in one place: the management actor runs every REST
 * write (POST, PUT, PATCH, DELETE of the management, key and operator APIs) through
 * `withIdempotency`.
 *
 * - The header: 1–255 visible ASCII characters, else 400. Scoped to the calling key (`key:<id>`)
 *   or to the operator (`operator`).
 * - A repeat within 24 hours (any node, any restart: the record is in the database) gets the
 *   first answer's status, headers and body again, and writes nothing. The same key with another
 *   method, path or body is 409 CONFLICT.
 * - The record is claimed inside the write's transaction (src/features/idempotency.ts), so it
 *   commits with the write or not at all; the answer is filled in right after. Only a write that
 *   committed leaves a record: a request that failed changed nothing, and its repeat runs again.
 * - An answer that carried a key value (a new or rotated key, a new organization's admin key) or a
 *   webhook signing secret is never stored: the record keeps the key's (endpoint's) id, and a
 *   repeat is 409 CONFLICT naming it.
 */
import { createHash } from 'node:crypto';
import { hashKey } from '../auth/key-material.js';
import { VexilError } from '../domain/errors.js';
import { IDEMPOTENCY_TTL, IdempotencyRace, idempotencyContext, type IdempotencyClaim } from '../features/idempotency.js';
import { findKeyByHash } from '../features/keys/store.js';
import type { Incoming, Reply } from '../http/handler.js';
import { asVexilError, errorReply } from '../http/problem.js';
import type { ActorRuntime } from '../runtime.js';
import { IDEMPOTENCY_HEADER } from './boundary.js';
import type { Admission } from './mailbox.js';

const VALID = /^[\x21-\x7e]{1,255}$/;
/** How long a repeat waits for the first request's answer to be recorded before it answers 409. */
const IN_PROGRESS_WAIT_MS = 2000;
/** Expired records are deleted at most this often (per actor). */
const CLEANUP_EVERY_MS = 10 * 60_000;

interface RecordRow {
  fingerprint: string;
  status: number | null;
  headers: Record<string, string> | string | null;
  body: string | null;
  key_id: string | null;
  /** How long ago the record was claimed (its write's commit), in ms. */
  age_ms: number;
}

let lastCleanup = 0;

const conflict = (detail: string): Reply => errorReply(new VexilError('CONFLICT', detail));

export async function withIdempotency(rt: ActorRuntime, inc: Incoming, admission: Admission, run: () => Promise<Reply>): Promise<Reply> {
  const key = inc.headers[IDEMPOTENCY_HEADER] ?? '';
  if (key === '') return run();
  if (!VALID.test(key)) {
    return errorReply(new VexilError('BAD_REQUEST', 'Idempotency-Key must be 1-255 visible ASCII characters'));
  }
  const scope = admission.kind === 'key' ? `key:${admission.principal.keyId}` : admission.kind === 'operator' ? 'operator' : null;
  if (scope === null) return run();
  const fingerprint = createHash('sha256')
    .update(`${inc.method.toUpperCase()}\n${inc.path}\n`)
    .update(inc.body)
    .digest('hex');
  cleanup(rt);

  const earlier = await answerFromRecord(rt, scope, key, fingerprint, false);
  if (earlier !== null) return earlier;

  const claim: IdempotencyClaim = { scope, key, fingerprint, inTransaction: false, committed: false };
  let reply: Reply;
  try {
    reply = await idempotencyContext.run(claim, run);
  } catch (err) {
    if (err instanceof IdempotencyRace) return (await answerFromRecord(rt, scope, key, fingerprint, true))!;
    if (!claim.committed) throw err;
    // The write committed, and something after it failed: that is its answer.
    reply = errorReply(asVexilError(err));
  }
  if (claim.committed) await record(rt, claim, reply);
  return reply;
}

/** The recorded answer for (scope, key), or null when there is none (a fresh start). */
async function answerFromRecord(rt: ActorRuntime, scope: string, key: string, fingerprint: string, mustExist: boolean): Promise<Reply | null> {
  const until = Date.now() + IN_PROGRESS_WAIT_MS;
  for (;;) {
    const rows = await rt.db.query<RecordRow>(
      `select fingerprint, status, headers, body, key_id,
              (extract(epoch from (now() - created_at)) * 1000)::float8 as age_ms
       from idempotency_keys
       where scope = $1 and idem_key = $2 and created_at > now() - ${IDEMPOTENCY_TTL}`,
      [scope, key],
    );
    const row = rows[0];
    if (row === undefined) {
      if (!mustExist) return null;
      // The record we raced was rolled back meanwhile: the client may simply try again.
      return errorReply(new VexilError('CONFLICT', 'A request with this Idempotency-Key did not complete; try again'));
    }
    if (row.fingerprint !== fingerprint) {
      return conflict('This Idempotency-Key was used for another request (method, path or body)');
    }
    if (row.key_id !== null) {
      return conflict(`The request with this Idempotency-Key created key ${row.key_id}; its value was shown once and is not kept`);
    }
    if (row.status !== null) {
      const headers = typeof row.headers === 'string' ? (JSON.parse(row.headers) as Record<string, string>) : (row.headers ?? {});
      return { status: row.status, headers: { ...headers, 'idempotent-replayed': 'true' }, ...(row.body === null ? {} : { raw: row.body }) };
    }
    // Committed, answer not recorded yet: the first request is finishing, or its node stopped in between.
    if (row.age_ms > 2 * rt.config.dbStatementTimeoutMs + IN_PROGRESS_WAIT_MS) {
      // Long past any statement's end: its node stopped between the commit and the record. The write
      // happened, once; what it answered is lost. Never run it again.
      return conflict('The request with this Idempotency-Key was written, but its node stopped before recording the answer: read the resource for the outcome; it will not be written again');
    }
    if (Date.now() >= until) return conflict('A request with this Idempotency-Key is still in progress; try again later');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The id of the key whose value `reply` carries, or null when it carries none. */
async function carriedKeyId(rt: ActorRuntime, reply: Reply): Promise<string | null> {
  const body = reply.body as Record<string, unknown> | null | undefined;
  if (body === null || typeof body !== 'object') return null;
  // A webhook signing secret (created or rotated, docs/webhooks.md) is never stored either: its endpoint's id is.
  if (typeof body.secret === 'string' && body.secret.startsWith('whsec_') && typeof body.id === 'string') return body.id;
  const value = typeof body.key === 'string' ? body.key : typeof body.adminKey === 'string' ? body.adminKey : null;
  if (value === null) return null;
  if (typeof body.key === 'string' && typeof body.id === 'string') return body.id;
  return (await findKeyByHash(rt.db, hashKey(value)))?.id ?? 'unknown';
}

async function record(rt: ActorRuntime, claim: IdempotencyClaim, reply: Reply): Promise<void> {
  try {
    const keyId = await carriedKeyId(rt, reply);
    const body =
      keyId !== null || reply.status === 204 || reply.status === 304
        ? null
        : reply.raw !== undefined
          ? reply.raw.toString()
          : JSON.stringify(reply.body ?? null);
    await rt.db.query(
      `update idempotency_keys set status = $3, headers = $4::json, body = $5, key_id = $6
       where scope = $1 and idem_key = $2 and fingerprint = $7 and status is null and key_id is null`,
      [claim.scope, claim.key, reply.status, JSON.stringify(reply.headers ?? {}), body, keyId, claim.fingerprint],
    );
  } catch (err) {
    // The write is committed and answered; a repeat finds the record without an answer (409).
    rt.log.warn('recording an Idempotency-Key answer failed', { err: err as Error });
  }
}

function cleanup(rt: ActorRuntime): void {
  const now = Date.now();
  if (now - lastCleanup < CLEANUP_EVERY_MS) return;
  lastCleanup = now;
  rt.db
    .query(`delete from idempotency_keys where created_at < now() - ${IDEMPOTENCY_TTL}`)
    .catch((err) => rt.log.warn('deleting expired Idempotency-Key records failed', { err: err as Error }));
}
