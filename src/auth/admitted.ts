/**
 * In the management actor: who the front admitted a forwarded request as (auth/admission.ts,
 * management/boundary.ts), with this actor's snapshot of its organization.
 */
import type { Incoming } from '../http/handler.js';
import { VexilError } from '../domain/errors.js';
import type { ActorRuntime } from '../runtime.js';
import type { Authenticated } from './authenticate.js';

/** The key the front admitted; the actor has loaded its organization at least at the version the front held (actor.ts). */
export function admittedKey(rt: ActorRuntime, inc: Incoming): Authenticated {
  const a = inc.admission;
  if (a === undefined || a.kind !== 'key') throw new VexilError('INTERNAL', 'A management request arrived without its admitted key');
  const snapshot = rt.snapshots.peek(a.principal.orgId);
  if (snapshot === undefined) throw new VexilError('UNAVAILABLE', 'The organization is not loaded yet; try again');
  return { principal: a.principal, snapshot };
}
