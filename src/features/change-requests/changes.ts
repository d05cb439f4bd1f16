/**
 * Change requests as data (docs/change-requests.md): the `Change` union, the request body, and the
 * pure functions a request is built and judged with: each change's target, canonical JSON and the
 * revision's hash, the diff, the targets that moved since their base, and the approval state. No
 * I/O here; the service (service.ts) reads the states these functions compare.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { badRequest } from '../../domain/errors.js';
import { DESCRIPTION_MAX, flagName, isPlainObject, name, parseInput } from '../../domain/validation/common.js';

/** Changes per request (docs/limits.md, "Change requests"). */
export const MAX_CHANGES = 100;
/** Open requests (open, rejected, scheduled) per organization (docs/limits.md). */
export const MAX_OPEN_REQUESTS = 500;
export const TITLE_MAX = 200;

/** One write a request makes, with its target; each `input` is the direct write's body. */
export type Change =
  | { op: 'upsertConfig'; flag: string; input: Record<string, unknown> }
  | { op: 'setConfigEnabled'; flag: string; stage: string; clientId: string | null; enabled: boolean }
  | { op: 'deleteConfig'; flag: string; stage: string; clientId: string | null }
  | { op: 'updateFlag'; flag: string; input: Record<string, unknown> }
  | { op: 'upsertSegment'; segment: string; input: Record<string, unknown> }
  | { op: 'deleteSegment'; segment: string }
  | { op: 'setKillSwitch'; input: unknown[] };

const object = z.record(z.string(), z.unknown());
const clientId = z.string().min(1).max(200).nullable().optional();
const changeSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('upsertConfig'), flag: flagName, input: object }),
  z.strictObject({ op: z.literal('setConfigEnabled'), flag: flagName, stage: name, clientId, enabled: z.boolean() }),
  z.strictObject({ op: z.literal('deleteConfig'), flag: flagName, stage: name, clientId }),
  z.strictObject({ op: z.literal('updateFlag'), flag: flagName, input: object }),
  z.strictObject({ op: z.literal('upsertSegment'), segment: flagName, input: object }),
  z.strictObject({ op: z.literal('deleteSegment'), segment: flagName }),
  z.strictObject({ op: z.literal('setKillSwitch'), input: z.array(z.unknown()) }),
]);
const changesSchema = z.array(changeSchema).min(1, { error: `changes: between 1 and ${MAX_CHANGES} changes` }).max(MAX_CHANGES, {
  error: `changes: at most ${MAX_CHANGES} changes per request (docs/limits.md)`,
});

export interface RequestBody {
  title: string;
  description: string | null;
  changes: Change[];
}

const createSchema = z.strictObject({
  title: z.string().trim().min(1).max(TITLE_MAX),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  changes: changesSchema,
});
const updateSchema = z.strictObject({
  title: z.string().trim().min(1).max(TITLE_MAX).optional(),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  changes: changesSchema,
});

/** A change as stored and hashed: optional fields present (null), so equal changes hash alike. */
export function normaliseChange(c: z.infer<typeof changeSchema>): Change {
  switch (c.op) {
    case 'setConfigEnabled':
      return { op: c.op, flag: c.flag, stage: c.stage, clientId: c.clientId ?? null, enabled: c.enabled };
    case 'deleteConfig':
      return { op: c.op, flag: c.flag, stage: c.stage, clientId: c.clientId ?? null };
    default:
      return c as Change;
  }
}

/** `POST /api/change-requests`: 400 naming the field. */
export function parseCreateRequest(raw: unknown): RequestBody {
  const p = parseInput(createSchema, raw, 'change request');
  return { title: p.title, description: p.description ?? null, changes: p.changes.map(normaliseChange) };
}

/** `PUT /api/change-requests/{id}`: new changes, and optionally a new title or description. */
export function parseUpdateRequest(raw: unknown): Partial<Omit<RequestBody, 'changes'>> & { changes: Change[] } {
  const p = parseInput(updateSchema, raw, 'change request');
  return {
    changes: p.changes.map(normaliseChange),
    ...(p.title !== undefined ? { title: p.title } : {}),
    ...(p.description !== undefined ? { description: p.description } : {}),
  };
}

export const reviewSchema = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  hash: z.string().regex(/^[0-9a-f]{64}$/, { error: 'a SHA-256 hex hash' }),
  comment: z.string().max(DESCRIPTION_MAX).nullable().optional(),
});
export const parseReview = (raw: unknown) => parseInput(reviewSchema, raw, 'review');
const hashBody = z.strictObject({ hash: z.string().regex(/^[0-9a-f]{64}$/, { error: 'a SHA-256 hex hash' }) });
export const parseHashBody = (raw: unknown): string => parseInput(hashBody, raw, 'body').hash;

// ---- targets --------------------------------------------------------------------------------------

/** What a change writes: a configuration, a flag, a segment, or the organization's kill switch. */
export type Target =
  | { type: 'config'; flag: string; stage: string; clientId: string | null }
  | { type: 'flag'; flag: string }
  | { type: 'segment'; segment: string }
  | { type: 'killSwitch' };

/** A target's identity in `bases` and `diff`: stable text. */
export function targetKey(t: Target): string {
  switch (t.type) {
    case 'config':
      return `config:${t.flag}:${t.stage}:${t.clientId ?? ''}`;
    case 'flag':
      return `flag:${t.flag}`;
    case 'segment':
      return `segment:${t.segment}`;
    default:
      return 'killSwitch';
  }
}

/** How a conflict names a target, for people. */
export function describeTarget(t: Target): string {
  switch (t.type) {
    case 'config':
      return `configuration of flag '${t.flag}' in '${t.stage}'${t.clientId ? ` for clientId '${t.clientId}'` : ''}`;
    case 'flag':
      return `flag '${t.flag}'`;
    case 'segment':
      return `segment '${t.segment}'`;
    default:
      return 'the kill switch';
  }
}

/**
 * A change's target; `stageOf` gives a configuration stage as its flag spells it (the stage as
 * written when the flag is unknown: the write then fails as the direct write would).
 */
export function targetOf(c: Change, stageOf: (flag: string, stage: string) => string): Target {
  switch (c.op) {
    case 'upsertConfig': {
      const stage = typeof c.input.stage === 'string' ? c.input.stage : '';
      const cid = typeof c.input.clientId === 'string' ? c.input.clientId : null;
      return { type: 'config', flag: c.flag, stage: stageOf(c.flag, stage), clientId: cid };
    }
    case 'setConfigEnabled':
    case 'deleteConfig':
      return { type: 'config', flag: c.flag, stage: stageOf(c.flag, c.stage), clientId: c.clientId };
    case 'updateFlag':
      return { type: 'flag', flag: c.flag };
    case 'upsertSegment':
    case 'deleteSegment':
      return { type: 'segment', segment: c.segment };
    default:
      return { type: 'killSwitch' };
  }
}

// ---- canonical JSON, hash, diff, conflicts ---------------------------------------------------------

/** JSON with every object's keys sorted (code-unit order), no whitespace; `undefined` members left out. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') {
    if (v === undefined) return 'null';
    if (typeof v === 'number' && !Number.isFinite(v)) throw badRequest('canonical JSON: a number that is not finite');
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? 'null' : canonicalJson(x))).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
}

/** A revision's hash: SHA-256 (hex) of the canonical JSON of `{changes, bases}`. */
export function revisionHash(changes: readonly Change[], bases: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson({ changes, bases })).digest('hex');
}

export interface DiffEntry {
  target: Target;
  before: unknown;
  after: unknown;
}

/** Each target once (in the order the changes first name it), its base and its state after the request. */
export function diffOf(targets: readonly Target[], bases: Record<string, unknown>, afters: Record<string, unknown>): DiffEntry[] {
  const seen = new Set<string>();
  const out: DiffEntry[] = [];
  for (const t of targets) {
    const k = targetKey(t);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ target: t, before: bases[k] ?? null, after: afters[k] ?? null });
  }
  return out;
}

/** The distinct targets, first naming first. */
export function uniqueTargets(targets: readonly Target[]): Target[] {
  const seen = new Set<string>();
  return targets.filter((t) => {
    const k = targetKey(t);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The targets whose state now differs from their base (compared as canonical JSON). */
export function movedTargets(targets: readonly Target[], bases: Record<string, unknown>, now: Record<string, unknown>): Target[] {
  return uniqueTargets(targets).filter((t) => {
    const k = targetKey(t);
    return canonicalJson(bases[k] ?? null) !== canonicalJson(now[k] ?? null);
  });
}

// ---- reviews and state -------------------------------------------------------------------------------

export interface Policy {
  requiredApprovals: number;
  allowSelfApproval: boolean;
  allowBypass: boolean;
}

export interface ReviewRecord {
  revision: number;
  decision: 'approve' | 'reject';
  reviewerKeyId: string;
  voided: boolean;
}

export interface ApprovalState {
  /** Every protected environment touched has its approvals on the current revision, and nothing rejects it. */
  approved: boolean;
  rejected: boolean;
  /** Per protected environment touched: approvals on the current revision and those required. */
  environments: { stage: string; required: number; approvals: number }[];
}

/**
 * The approval state of a revision: each reviewer's last decision on it counts once; a rejection
 * on it rejects the request; each protected environment touched needs its required approvals.
 */
export function approvalState(revision: number, environments: readonly string[], policyOf: (stage: string) => Policy | undefined, reviews: readonly ReviewRecord[]): ApprovalState {
  const last = new Map<string, 'approve' | 'reject'>();
  for (const r of reviews) if (r.revision === revision && !r.voided) last.set(r.reviewerKeyId, r.decision);
  let approvals = 0;
  let rejected = false;
  for (const d of last.values()) {
    if (d === 'approve') approvals++;
    else rejected = true;
  }
  const envs = environments
    .map((stage) => ({ stage, required: policyOf(stage)?.requiredApprovals ?? 0, approvals }))
    .filter((e) => e.required > 0);
  return { approved: !rejected && envs.every((e) => e.approvals >= e.required), rejected, environments: envs };
}

/** Whether a request's author may review it: every protected environment it touches allows self-approval. */
export function selfReviewAllowed(environments: readonly string[], policyOf: (stage: string) => Policy | undefined): boolean {
  return environments.every((s) => {
    const p = policyOf(s);
    return p === undefined || p.requiredApprovals === 0 || p.allowSelfApproval;
  });
}

export const isObjectInput = isPlainObject;
