/**
 * The one guard of protected environments (CONTRACT 17; docs/change-requests.md, "What protection
 * covers"). Every service's write calls `guardWrite` inside its own transaction (after `writeOrg`
 * has locked the organization), with what the write changes (`WriteEffect`, domain/protection.ts).
 * The guard reads the policies in that transaction, so a concurrent policy change is either
 * committed before (and seen) or waits on the organization's lock: no race.
 *
 * - No protected environment affected: the write goes on.
 * - `{ viaChangeRequest: true }`: a change request's apply (its approvals are the review): goes on.
 * - A request bypass (`x-vexil-bypass-review`, bypass.ts) from an Admin key where every protected
 *   environment affected allows bypass: goes on, and its audit event records `bypass: {reason}`.
 * - A bypass from a key without Admin: 403 FORBIDDEN.
 * - Otherwise: 409 CONFLICT, `reason: "review_required"`, naming the environments (`reviewRequired`).
 */
import { has, type Principal } from '../../auth/permissions.js';
import { forbidden, reviewRequired } from '../../domain/errors.js';
import { affectedStages, decideProtection, type WriteEffect } from '../../domain/protection.js';
import type { Organization } from '../../domain/types.js';
import type { Queryable } from '../../storage/database.js';
import * as flagStore from '../flags/store.js';
import { bypassContext } from './bypass.js';
import { anyProtected, configStagesOfFlags, configStagesUsingSegment, readPolicies } from './store.js';

export type { WriteEffect } from '../../domain/protection.js';

export interface GuardOptions {
  /** The write is part of an approved change request's apply: the guard lets it through. */
  viaChangeRequest?: boolean;
}

/**
 * Refuses the write unless no protected environment is affected (see the module comment).
 * `effect` may be a function: it is then called only when the organization protects an
 * environment at all, so unprotected organizations pay one indexed read per write.
 * `p`: the writing key (null: the operator API or a schedule's runner, never Admin for bypass).
 */
export async function guardWrite(
  tx: Queryable,
  org: Organization,
  p: Principal | null,
  effect: WriteEffect | (() => Promise<WriteEffect>),
  opts: GuardOptions = {},
): Promise<void> {
  if (opts.viaChangeRequest === true) return;
  if (!(await anyProtected(tx, org.id))) return;
  const e = typeof effect === 'function' ? await effect() : effect;
  const stages = affectedStages(e, org.environments);
  if (stages.length === 0) return;
  const bypass = bypassContext.getStore();
  const decision = decideProtection(stages, await readPolicies(tx, org.id), {
    viaChangeRequest: false,
    bypassReason: bypass?.reason ?? null,
    isAdmin: p !== null && has(p, 'Admin'),
  });
  switch (decision.kind) {
    case 'allow':
      return;
    case 'bypass':
      bypass!.usedInTransaction = true;
      return;
    case 'bypass_forbidden':
      throw forbidden(`Bypassing the review of ${decision.environments.map((s) => `'${s}'`).join(', ')} needs an Admin key`);
    case 'review_required':
      throw reviewRequired(decision.environments);
  }
}

/** The effect of a write to flag `name`'s own fields: the stages where it or a flag depending on it has a configuration. */
export async function flagEffect(tx: Queryable, orgId: string, name: string, fields: readonly string[] | null): Promise<WriteEffect> {
  const seen = new Set<string>([name]);
  const queue = [name];
  while (queue.length > 0) {
    for (const child of await flagStore.flagsDependingOn(tx, orgId, queue.pop()!)) {
      if (!seen.has(child.name)) {
        seen.add(child.name);
        queue.push(child.name);
      }
    }
  }
  return { kind: 'flag', usedIn: await configStagesOfFlags(tx, orgId, [...seen]), fields };
}

/** The effect of a write to segment `name`: the stages of the configurations that use it. */
export async function segmentEffect(tx: Queryable, orgId: string, name: string): Promise<WriteEffect> {
  return { kind: 'segment', usedIn: await configStagesUsingSegment(tx, orgId, name) };
}
