/**
 * Webhooks (CONTRACT.md 19, docs/webhooks.md): the functions REST and GraphQL both call. Admin
 * only. Endpoint changes go through `writeOrgKeys` (the organization locked, no new snapshot
 * version: endpoints are not evaluation data) with their audit event (`webhook.*`, the endpoint
 * without its secret). The secret is answered once, at creation and at each rotation.
 */
import { randomUUID } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import { requireAdmin } from '../../auth/permissions.js';
import { conflict, notFound, quotaExceeded } from '../../domain/errors.js';
import type { WebhookDelivery, WebhookEndpoint } from '../../domain/types.js';
import type { ActorRuntime } from '../../runtime.js';
import { webhookChange } from '../audit/events.js';
import { actorOf, writeOrgKeys } from '../write.js';
import { checkEndpointUrl } from './address.js';
import { wake } from './outbox.js';
import { sealSecret } from './secrets.js';
import { newSecret } from './signature.js';
import * as store from './store.js';
import { parseDeliveriesQuery, parseEndpointInput, type EndpointBody } from './validation.js';

const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const endpointNotFound = (id: string) => notFound(`Webhook endpoint '${id.slice(0, 64)}' not found`);

/** An endpoint just created or rotated, with its secret (shown this once). */
export type WithSecret = WebhookEndpoint & { secret: string };

function parseBody(rt: ActorRuntime, raw: unknown): EndpointBody {
  const input = parseEndpointInput(raw);
  return { ...input, url: checkEndpointUrl(input.url, rt.config.webhooks) };
}

export async function listWebhooks(rt: ActorRuntime, auth: Authenticated): Promise<WebhookEndpoint[]> {
  requireAdmin(auth.principal);
  return (await store.listEndpoints(rt.db, auth.principal.orgId)).map(store.publicEndpoint);
}

async function found(rt: ActorRuntime, auth: Authenticated, id: string): Promise<store.StoredEndpoint> {
  requireAdmin(auth.principal);
  if (!ID_RE.test(id)) throw endpointNotFound(id);
  const e = await store.getEndpoint(rt.db, auth.principal.orgId, id);
  if (e === null) throw endpointNotFound(id);
  return e;
}

export async function getWebhook(rt: ActorRuntime, auth: Authenticated, id: string): Promise<WebhookEndpoint> {
  return store.publicEndpoint(await found(rt, auth, id));
}

export async function createWebhook(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<WithSecret> {
  const p = auth.principal;
  requireAdmin(p);
  const input = parseBody(rt, raw);
  const secret = newSecret();
  const sealed = sealSecret(secret, rt.config.clusterSecret);
  const max = rt.config.webhooks.maxPerOrg;
  const created = await writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    if ((await store.countEndpoints(tx, p.orgId)) >= max) {
      throw quotaExceeded(`An organization may have at most ${max} webhook endpoints (VEXIL_MAX_WEBHOOKS_PER_ORG)`);
    }
    const e = store.publicEndpoint(await store.insertEndpoint(tx, p.orgId, randomUUID(), input, sealed));
    return { result: e, audit: webhookChange('webhook.create', null, e) };
  });
  return { ...created, secret };
}

export async function updateWebhook(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown): Promise<WebhookEndpoint> {
  const p = auth.principal;
  requireAdmin(p);
  const input = parseBody(rt, raw);
  if (!ID_RE.test(id)) throw endpointNotFound(id);
  return writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    const before = await store.getEndpoint(tx, p.orgId, id);
    if (before === null) throw endpointNotFound(id);
    const after = store.publicEndpoint((await store.updateEndpoint(tx, p.orgId, id, input))!);
    return { result: after, audit: webhookChange('webhook.update', store.publicEndpoint(before), after) };
  });
}

export async function deleteWebhook(rt: ActorRuntime, auth: Authenticated, id: string): Promise<void> {
  const p = auth.principal;
  requireAdmin(p);
  if (!ID_RE.test(id)) throw endpointNotFound(id);
  await writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    const before = await store.getEndpoint(tx, p.orgId, id);
    if (before === null) throw endpointNotFound(id);
    await store.deleteEndpoint(tx, p.orgId, id);
    return { result: undefined, audit: webhookChange('webhook.delete', store.publicEndpoint(before), null) };
  });
}

/** A new secret; for VEXIL_WEBHOOK_ROTATION_OVERLAP_MS (24 h) the old one signs beside it. */
export async function rotateWebhookSecret(rt: ActorRuntime, auth: Authenticated, id: string): Promise<{ id: string; secret: string }> {
  const p = auth.principal;
  requireAdmin(p);
  if (!ID_RE.test(id)) throw endpointNotFound(id);
  const secret = newSecret();
  const sealed = sealSecret(secret, rt.config.clusterSecret);
  await writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    const before = await store.getEndpoint(tx, p.orgId, id);
    if (before === null) throw endpointNotFound(id);
    const after = store.publicEndpoint((await store.rotateSecret(tx, p.orgId, id, sealed, new Date(rt.now() + rt.config.webhooks.rotationOverlapMs)))!);
    return { result: undefined, audit: webhookChange('webhook.rotate', store.publicEndpoint(before), after) };
  });
  return { id, secret };
}

/** Queues a `webhook.test` message for the endpoint (409 while it is disabled); its `webhook-id`. */
export async function testWebhook(rt: ActorRuntime, auth: Authenticated, id: string): Promise<{ messageId: string }> {
  const e = await found(rt, auth, id);
  if (!e.enabled) throw conflict(`Webhook endpoint '${id}' is disabled`);
  const orgName = (await rt.db.query<{ name: string }>(`select name from organizations where id = $1`, [e.orgId]))[0]?.name ?? '';
  const messageId = await rt.db.transaction((tx) =>
    store.insertTestMessage(tx, e.orgId, e.id, (msgId) =>
      JSON.stringify({
        type: 'webhook.test',
        timestamp: new Date(rt.now()).toISOString(),
        organization: orgName,
        data: { messageId: msgId, endpointId: e.id, url: e.url },
      }),
    ),
  );
  wake();
  return { messageId };
}

export async function listDeliveries(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown): Promise<{ deliveries: WebhookDelivery[]; next: string | null }> {
  const q = parseDeliveriesQuery(raw);
  const e = await found(rt, auth, id);
  const rows = await store.listDeliveries(rt.db, e.orgId, e.id, q.limit + 1, q.after);
  const more = rows.length > q.limit;
  const deliveries = more ? rows.slice(0, q.limit) : rows;
  return { deliveries, next: more ? deliveries[deliveries.length - 1].id : null };
}

/** Sends a message again (same `webhook-id` and body). */
export async function replayMessage(rt: ActorRuntime, auth: Authenticated, id: string, messageId: string): Promise<{ messageId: string }> {
  const e = await found(rt, auth, id);
  if (!/^msg_[0-9a-f]{32}$/.test(messageId) || !(await store.replayMessage(rt.db, e.orgId, e.id, messageId))) {
    throw notFound(`Webhook endpoint '${id}' has no message '${messageId.slice(0, 64)}'`);
  }
  wake();
  return { messageId };
}
