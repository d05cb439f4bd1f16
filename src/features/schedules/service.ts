/**
 * Scheduled changes (docs/api.md#scheduled-changes): the functions REST and GraphQL both call.
 * A schedule is created and cancelled through `writeOrg` like any write (audited as
 * `schedule.create` / `schedule.cancel`; the organization's new version tells every node's runner
 * to look again, docs/cluster.md "Scheduled changes"). The change it carries is checked when it is
 * scheduled by the very checks its write runs (flags/service.ts `checkConfigUpsert`,
 * `checkConfigToggle`), and again when it is applied (runner.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import { requireEnvironment, requirePermission } from '../../auth/permissions.js';
import { conflict, notFound } from '../../domain/errors.js';
import type { AuditChange, Flag, Schedule } from '../../domain/types.js';
import { parseSchedule, quotaError } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import * as flags from '../flags/service.js';
import { actorOf, writeOrg } from '../write.js';
import { guardWrite } from '../policies/guard.js';
import * as store from './store.js';

/** A schedule event: its target is the flag, with the schedule's stage and clientId. */
function scheduleChange(action: 'schedule.create' | 'schedule.cancel', flag: Flag, before: Schedule | null, after: Schedule): AuditChange {
  return { action, target: { type: 'flag', name: flag.name, stage: after.stage, clientId: after.clientId }, application: flag.project, before, after };
}

/** A flag's schedules, soonest first (the flag as the key may read it: 404, 403). */
export async function listSchedules(rt: ActorRuntime, auth: Authenticated, name: string): Promise<Schedule[]> {
  flags.getFlag(auth, name);
  return (await store.listSchedules(rt.db, auth.principal.orgId, name)).map(store.publicSchedule);
}

export async function createSchedule(rt: ActorRuntime, auth: Authenticated, name: string, raw: unknown): Promise<Schedule> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  const limits = rt.config.tenancyLimits;
  const input = parseSchedule(raw, rt.now(), limits);
  // Every check an upsert's body gets (the time window's storable range included).
  const config = input.config === null ? null : flags.parseConfigUpsert(rt, input.config);
  return writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx, org) => {
    const target =
      config !== null
        ? await flags.checkConfigUpsert(tx, p, org, name, config, limits)
        : await flags.checkConfigToggle(tx, p, name, input.stage, input.clientId);
    // A schedule for a protected environment is a change to it (policies/guard.ts); when due, the
    // runner's write meets the guard again (a schedule made before the protection fails then).
    await guardWrite(tx, org, p, { kind: 'config', stage: target.stage });
    if ((await store.countPending(tx, p.orgId, name)) >= limits.maxPendingSchedulesPerFlag) throw quotaError(limits, 'maxPendingSchedulesPerFlag');
    if ((await store.countPending(tx, p.orgId, null)) >= limits.maxPendingSchedulesPerOrg) throw quotaError(limits, 'maxPendingSchedulesPerOrg');
    await store.pruneFinished(tx, p.orgId, name);
    const saved = store.publicSchedule(
      await store.insertSchedule(tx, p.orgId, {
        id: randomUUID(),
        flag: target.flag.name,
        at: input.at,
        stage: target.stage,
        clientId: input.clientId,
        enabled: input.enabled,
        config: config === null ? null : flags.toConfig(target.stage, config),
        createdBy: { keyId: p.keyId, keyName: p.keyName },
      }),
    );
    return { result: saved, audit: scheduleChange('schedule.create', target.flag, null, saved) };
  });
}

/** Cancels a pending schedule: 404 when the flag has no such schedule, 409 when it is not pending. */
export async function cancelSchedule(rt: ActorRuntime, auth: Authenticated, name: string, id: string): Promise<void> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  await writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx) => {
    const flag = await flags.loadForWrite(tx, p, name);
    const cur = await store.getSchedule(tx, p.orgId, name, id);
    if (cur === null) throw notFound(`Flag '${name}' has no schedule '${id}'`);
    requireEnvironment(p, cur.stage);
    const cancelled = await store.cancelSchedule(tx, p.orgId, id);
    if (cancelled === null) throw conflict(`Schedule '${id}' is ${cur.status}, not pending`);
    return { result: undefined, audit: scheduleChange('schedule.cancel', flag, store.publicSchedule(cur), store.publicSchedule(cancelled)) };
  });
}
