/**
 * The audit events each kind of write records (docs/audit.md, "Actions"): target, application and
 * before/after, built in one place so that every service describes its changes alike.
 */
import type { AuditAction, AuditChange, Flag, FlagConfig, KeyView, Segment, WebhookEndpoint } from '../../domain/types.js';

type FlagAction = Extract<AuditAction, `flag.${string}`>;
type ConfigAction = Extract<AuditAction, `config.${string}`>;
type KeyAction = Extract<AuditAction, `key.${string}`>;
type OrgAction = Extract<AuditAction, `org.${string}`>;
type SegmentAction = Extract<AuditAction, `segment.${string}`>;

/** A flag event; `before`/`after` are the Flag, null where it did not exist. */
export function flagChange(action: FlagAction, before: Flag | null, after: Flag | null): AuditChange {
  const flag = (after ?? before)!;
  return { action, target: { type: 'flag', name: flag.name }, application: flag.project, before, after };
}

/** A configuration event: its target is the flag, with the configuration's stage and clientId. */
export function configChange(action: ConfigAction, flag: Flag, before: FlagConfig | null, after: FlagConfig | null): AuditChange {
  const config = (after ?? before)!;
  return {
    action,
    target: { type: 'flag', name: flag.name, stage: config.stage, clientId: config.clientId },
    application: flag.project,
    before,
    after,
  };
}

/** A key event: the key record (never its value or hash); the target's name is the key's id. */
export function keyChange(action: KeyAction, before: KeyView | null, after: KeyView | null): AuditChange {
  const key = (after ?? before)!;
  return { action, target: { type: 'key', name: key.id }, application: null, before, after };
}

/** An organization event: `before`/`after` hold only the settings that the write changes. */
export function orgChange(action: OrgAction, orgName: string, before: object | null, after: object | null): AuditChange {
  return { action, target: { type: 'organization', name: orgName }, application: null, before, after };
}

/** A segment event; `before`/`after` are the Segment, null where it did not exist; its application is the segment's. */
export function segmentChange(action: SegmentAction, before: Segment | null, after: Segment | null): AuditChange {
  const segment = (after ?? before)!;
  return { action, target: { type: 'segment', name: segment.name }, application: segment.application, before, after };
}

type WebhookAction = Extract<AuditAction, `webhook.${string}`>;

/** A webhook endpoint event: the endpoint as clients see it (never its secret); the target's name is its id. */
export function webhookChange(action: WebhookAction, before: WebhookEndpoint | null, after: WebhookEndpoint | null): AuditChange {
  const endpoint = (after ?? before)!;
  return { action, target: { type: 'webhook', name: endpoint.id }, application: null, before, after };
}
