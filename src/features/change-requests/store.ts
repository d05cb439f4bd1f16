/** SQL for change requests (sql/008_change_requests.sql; docs/change-requests.md). */
import { iso, json, type Queryable } from '../../storage/database.js';
import type { Change, Target } from './changes.js';

export type RequestState = 'open' | 'rejected' | 'scheduled' | 'applied' | 'closed' | 'failed';
export const REQUEST_STATES: readonly RequestState[] = ['open', 'rejected', 'scheduled', 'applied', 'closed', 'failed'];
/** States that count toward the open-requests limit, and that may still change. */
export const LIVE_STATES: readonly RequestState[] = ['open', 'rejected', 'scheduled'];

export interface KeyRef {
  keyId: string;
  keyName: string;
}

export interface StoredRequest {
  id: string;
  orgId: string;
  title: string;
  description: string | null;
  state: RequestState;
  revision: number;
  hash: string;
  authorKeyId: string;
  author: KeyRef;
  scheduledAt: string | null;
  scheduledBy: string | null;
  error: string | null;
  reverts: string | null;
  createdAt: string;
  updatedAt: string;
  appliedAt: string | null;
  appliedVersion: number | null;
}

/** A revision as read back: what was written (`NewRevision`), its author's key id and its time. */
export interface StoredRevision extends NewRevision {
  authorKeyId: string;
  createdAt: string;
}

export interface StoredReview {
  id: string;
  revision: number;
  hash: string;
  decision: 'approve' | 'reject';
  comment: string | null;
  reviewerKeyId: string;
  reviewer: KeyRef;
  voided: boolean;
  at: string;
}

type Row = Record<string, any>;

const REQ_COLUMNS =
  'id, org_id, title, description, state, revision, hash, author_key_id, author, scheduled_at, scheduled_by, error, reverts, created_at, updated_at, applied_at, applied_version';

const toRequest = (r: Row): StoredRequest => ({
  id: r.id,
  orgId: r.org_id,
  title: r.title,
  description: r.description,
  state: r.state,
  revision: Number(r.revision),
  hash: r.hash,
  authorKeyId: r.author_key_id,
  author: { keyId: r.author.keyId, keyName: r.author.keyName },
  scheduledAt: iso(r.scheduled_at),
  scheduledBy: r.scheduled_by,
  error: r.error,
  reverts: r.reverts,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!,
  appliedAt: iso(r.applied_at),
  appliedVersion: r.applied_version === null ? null : Number(r.applied_version),
});

const toRevision = (r: Row): StoredRevision => ({
  revision: Number(r.revision),
  hash: r.hash,
  authorKeyId: r.author_key_id,
  author: { keyId: r.author.keyId, keyName: r.author.keyName },
  changes: r.changes,
  targets: r.targets,
  bases: r.bases,
  afters: r.afters,
  environments: r.environments,
  createdAt: iso(r.created_at)!,
});

const toReview = (r: Row): StoredReview => ({
  id: String(r.id),
  revision: Number(r.revision),
  hash: r.hash,
  decision: r.decision,
  comment: r.comment,
  reviewerKeyId: r.reviewer_key_id,
  reviewer: { keyId: r.reviewer.keyId, keyName: r.reviewer.keyName },
  voided: r.voided,
  at: iso(r.at)!,
});

export interface NewRequest {
  id: string;
  title: string;
  description: string | null;
  author: KeyRef;
  reverts: string | null;
}

export async function insertRequest(q: Queryable, orgId: string, r: NewRequest, hash: string): Promise<StoredRequest> {
  const rows = await q.query(
    `insert into change_requests (id, org_id, title, description, state, revision, hash, author_key_id, author, reverts, created_at, updated_at)
     values ($1, $2, $3, $4, 'open', 1, $5, $6, $7::text::json, $8, clock_timestamp(), clock_timestamp()) returning ${REQ_COLUMNS}`,
    [r.id, orgId, r.title, r.description, hash, r.author.keyId, json(r.author), r.reverts],
  );
  return toRequest(rows[0]);
}

export interface NewRevision {
  revision: number;
  hash: string;
  author: KeyRef;
  changes: Change[];
  targets: Target[];
  bases: Record<string, unknown>;
  afters: Record<string, unknown>;
  environments: string[];
}

export async function insertRevision(q: Queryable, requestId: string, v: NewRevision): Promise<void> {
  await q.query(
    `insert into change_request_revisions (request_id, revision, hash, author_key_id, author, changes, targets, bases, afters, environments, created_at)
     values ($1, $2, $3, $4, $5::text::json, $6::text::json, $7::text::json, $8::text::json, $9::text::json, $10::text::json, clock_timestamp())`,
    [requestId, v.revision, v.hash, v.author.keyId, json(v.author), json(v.changes), json(v.targets), json(v.bases), json(v.afters), json(v.environments)],
  );
}

/** A new revision becomes the request's current one: open again, any schedule dropped, every review so far void. */
export async function reviseRequest(q: Queryable, id: string, revision: number, hash: string, fields: { title?: string; description?: string | null }): Promise<StoredRequest> {
  await q.query(`update change_request_reviews set voided = true where request_id = $1 and not voided`, [id]);
  const rows = await q.query(
    `update change_requests set revision = $2, hash = $3, state = 'open', scheduled_at = null, scheduled_by = null, error = null,
       title = coalesce($4, title), description = case when $5::boolean then $6 else description end, updated_at = clock_timestamp()
     where id = $1 returning ${REQ_COLUMNS}`,
    [id, revision, hash, fields.title ?? null, fields.description !== undefined, fields.description ?? null],
  );
  return toRequest(rows[0]);
}

export async function getRequest(q: Queryable, orgId: string, id: string, forUpdate = false): Promise<StoredRequest | null> {
  const rows = await q.query(`select ${REQ_COLUMNS} from change_requests where org_id = $1 and id = $2${forUpdate ? ' for update' : ''}`, [orgId, id]);
  return rows.length === 0 ? null : toRequest(rows[0]);
}

export async function getRevision(q: Queryable, id: string, revision: number): Promise<StoredRevision> {
  const rows = await q.query(`select * from change_request_revisions where request_id = $1 and revision = $2`, [id, revision]);
  return toRevision(rows[0]);
}

export async function listRevisions(q: Queryable, id: string): Promise<StoredRevision[]> {
  return (await q.query(`select * from change_request_revisions where request_id = $1 order by revision`, [id])).map(toRevision);
}

export async function listReviews(q: Queryable, id: string): Promise<StoredReview[]> {
  return (await q.query(`select * from change_request_reviews where request_id = $1 order by id`, [id])).map(toReview);
}

export async function revisionAuthors(q: Queryable, id: string): Promise<Set<string>> {
  const rows = await q.query<{ author_key_id: string }>(`select distinct author_key_id from change_request_revisions where request_id = $1`, [id]);
  return new Set(rows.map((r) => r.author_key_id));
}

export async function insertReview(q: Queryable, requestId: string, r: { revision: number; hash: string; decision: string; comment: string | null; reviewer: KeyRef }): Promise<StoredReview> {
  const rows = await q.query(
    `insert into change_request_reviews (request_id, revision, hash, decision, comment, reviewer_key_id, reviewer, at)
     values ($1, $2, $3, $4, $5, $6, $7::text::json, clock_timestamp()) returning *`,
    [requestId, r.revision, r.hash, r.decision, r.comment, r.reviewer.keyId, json(r.reviewer)],
  );
  return toReview(rows[0]);
}

export async function setState(q: Queryable, id: string, state: RequestState, extra: { error?: string | null; scheduledAt?: string | null; scheduledBy?: string | null } = {}): Promise<StoredRequest> {
  const rows = await q.query(
    `update change_requests set state = $2, updated_at = clock_timestamp(),
       error = case when $3::boolean then $4 else error end,
       scheduled_at = case when $5::boolean then $6::timestamptz else scheduled_at end,
       scheduled_by = case when $5::boolean then $7 else scheduled_by end
     where id = $1 returning ${REQ_COLUMNS}`,
    [id, state, extra.error !== undefined, extra.error ?? null, extra.scheduledAt !== undefined, extra.scheduledAt ?? null, extra.scheduledBy ?? null],
  );
  return toRequest(rows[0]);
}

export async function markApplied(q: Queryable, id: string, version: number): Promise<StoredRequest> {
  const rows = await q.query(
    `update change_requests set state = 'applied', applied_at = clock_timestamp(), updated_at = clock_timestamp(), applied_version = $2,
       scheduled_at = null, error = null where id = $1 returning ${REQ_COLUMNS}`,
    [id, version],
  );
  return toRequest(rows[0]);
}

export async function countLive(q: Queryable, orgId: string): Promise<number> {
  const rows = await q.query<{ n: number }>(`select count(*)::int as n from change_requests where org_id = $1 and state in ('open', 'rejected', 'scheduled')`, [orgId]);
  return Number(rows[0].n);
}

/** One page by id (ids sort by creation), optionally of one state, with the total matching. */
export async function listRequests(q: Queryable, orgId: string, state: RequestState | null, after: string | null, limit: number): Promise<{ rows: StoredRequest[]; total: number; hasMore: boolean }> {
  const rows = await q.query(
    `select ${REQ_COLUMNS} from change_requests where org_id = $1 and ($2::text is null or state = $2) and ($3::text is null or id > $3) order by id limit $4`,
    [orgId, state, after, limit + 1],
  );
  const total = await q.query<{ n: number }>(`select count(*)::int as n from change_requests where org_id = $1 and ($2::text is null or state = $2)`, [orgId, state]);
  return { rows: rows.slice(0, limit).map(toRequest), total: Number(total[0].n), hasMore: rows.length > limit };
}

// ---- the schedule runner ------------------------------------------------------------------------------

export async function msToNextScheduled(q: Queryable): Promise<number | null> {
  const rows = await q.query<{ ms: number | string | null }>(
    `select extract(epoch from (min(scheduled_at) - clock_timestamp())) * 1000 as ms from change_requests where state = 'scheduled'`,
  );
  return rows[0].ms === null ? null : Number(rows[0].ms);
}

export async function dueRequests(q: Queryable, limit: number): Promise<StoredRequest[]> {
  return (
    await q.query(`select ${REQ_COLUMNS} from change_requests where state = 'scheduled' and scheduled_at <= clock_timestamp() order by scheduled_at, id limit $1`, [limit])
  ).map(toRequest);
}
