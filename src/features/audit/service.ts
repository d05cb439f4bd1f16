/**
 * Reading the audit log (docs/audit.md, "Reading the log"), shared by REST `GET /api/audit` and
 * GraphQL `auditLog`. Needs CanRead. A key with an application scope sees only the events of its
 * application (flag and configuration events); other events are left out, not refused. Key events
 * need Admin. Recording is not here: every write records its event in `../write.ts`.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { has, requirePermission } from '../../auth/permissions.js';
import type { AuditEvent } from '../../domain/types.js';
import { parseAuditQuery } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import { listEvents } from './store.js';

/** `raw`: `{target?, type?, limit?, before?}`, as text (query string) or typed (GraphQL). Newest first. */
export function auditLog(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<AuditEvent[]> {
  const p = auth.principal;
  requirePermission(p, 'CanRead');
  const query = parseAuditQuery(raw);
  return listEvents(rt.db, {
    orgId: p.orgId,
    ...query,
    ...(p.application !== null ? { application: p.application } : {}),
    withoutKeys: !has(p, 'Admin'),
  });
}
