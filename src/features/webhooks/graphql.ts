/**
 * Webhooks in GraphQL (docs/webhooks.md, "GraphQL"): the resolvers, calling the same services,
 * rules and errors as the REST routes (service.ts); the SDL is graphql-schema.ts's. Hooked into
 * src/graphql/resolvers.ts (`webhookResolvers`) and src/graphql/schema.ts (`webhookTypeDefs`).
 */
import type { WebhookEndpoint } from '../../domain/types.js';
import { VexilError } from '../../domain/errors.js';
import { authFor, withVars, type GraphQLContext, type Resolver } from '../../graphql/evaluation-resolvers.js';
import type { ActorRuntime } from '../../runtime.js';
import * as webhooks from './service.js';


function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

const str = (v: unknown): string => v as string;

export const webhookResolvers: { Query: Record<string, Resolver>; Mutation: Record<string, Resolver>; WebhookEndpoint: Record<string, Resolver<any, WebhookEndpoint>> } = {
  Query: {
    webhooks: (_s, _a, ctx) => webhooks.listWebhooks(services(ctx), authFor(ctx)),
    webhook: (_s, a, ctx) => webhooks.getWebhook(services(ctx), authFor(ctx), str(a.id)),
  },
  Mutation: {
    createWebhook: async (_s, a, ctx, info) => {
      const { secret, ...endpoint } = await webhooks.createWebhook(services(ctx), authFor(ctx), withVars(a.input, ctx, info));
      return { secret, endpoint };
    },
    updateWebhook: (_s, a, ctx, info) => webhooks.updateWebhook(services(ctx), authFor(ctx), str(a.id), withVars(a.input, ctx, info)),
    deleteWebhook: async (_s, a, ctx) => {
      await webhooks.deleteWebhook(services(ctx), authFor(ctx), str(a.id));
      return true;
    },
    rotateWebhookSecret: (_s, a, ctx) => webhooks.rotateWebhookSecret(services(ctx), authFor(ctx), str(a.id)),
    sendWebhookTest: async (_s, a, ctx) => (await webhooks.testWebhook(services(ctx), authFor(ctx), str(a.id))).messageId,
    replayWebhookMessage: async (_s, a, ctx) => (await webhooks.replayMessage(services(ctx), authFor(ctx), str(a.id), str(a.messageId))).messageId,
  },
  WebhookEndpoint: {
    deliveries: async (e, a, ctx) => {
      const q: Record<string, unknown> = {};
      if (a.first !== undefined && a.first !== null) q.limit = a.first;
      if (a.after !== undefined && a.after !== null) q.after = a.after;
      return (await webhooks.listDeliveries(services(ctx), authFor(ctx), e.id, q)).deliveries;
    },
  },
};
