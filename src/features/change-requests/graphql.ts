/**
 * Change requests over GraphQL (docs/change-requests.md): the SDL and resolvers, hooked into
 * src/graphql/schema.ts (`changeRequestTypeDefs`, graphql-sdl.ts) and resolvers.ts (`changeRequestResolvers`). The
 * same service functions as REST. A change is given as `ChangeInput` (its `input` the direct
 * write's body as `Any`); `changes` and `diff` answer as `Any` (their JSON as REST shows it).
 */
import type { GraphQLContext, Resolver } from '../../graphql/evaluation-resolvers.js';
import { authFor, withVars } from '../../graphql/evaluation-resolvers.js';
import { VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import * as cr from './service.js';
import { previewRequest } from './preview.js';


function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

/** GraphQL gives omitted optional fields as absent and explicit ones as null: both mean "absent" here. */
function withoutNulls(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== null));
}

function requestBody(input: unknown): unknown {
  const o = withoutNulls(input) as Record<string, unknown>;
  if (Array.isArray(o.changes)) {
    o.changes = o.changes.map((c) => {
      const x = withoutNulls(c) as Record<string, unknown>;
      // clientId null is meaningful for configurations; an absent one is the same.
      return x;
    });
  }
  return o;
}

export const changeRequestResolvers: { Query: Record<string, Resolver>; Mutation: Record<string, Resolver> } = {
  Query: {
    changeRequest: async (_s, a, ctx) => {
      try {
        return await cr.getRequest(services(ctx), authFor(ctx), String(a.id));
      } catch (err) {
        if (err instanceof VexilError && err.code === 'NOT_FOUND') return null;
        throw err;
      }
    },
    changeRequestConnection: async (_s, a, ctx) => {
      const page = await cr.listRequests(services(ctx), authFor(ctx), { state: (a.state as string) ?? null, limit: (a.first as number) ?? null, after: (a.after as string) ?? null });
      const last = page.items[page.items.length - 1];
      return { nodes: page.items, totalCount: page.total, pageInfo: { endCursor: last?.id ?? null, hasNextPage: page.hasMore } };
    },
  },
  Mutation: {
    createChangeRequest: (_s, a, ctx, info) => cr.createRequest(services(ctx), authFor(ctx), requestBody(withVars(a.input, ctx, info))),
    updateChangeRequest: (_s, a, ctx, info) => cr.updateRequest(services(ctx), authFor(ctx), String(a.id), requestBody(withVars(a.input, ctx, info))),
    reviewChangeRequest: (_s, a, ctx) =>
      cr.reviewRequest(services(ctx), authFor(ctx), String(a.id), withoutNulls({ decision: a.decision, hash: a.hash, comment: a.comment ?? null })),
    applyChangeRequest: (_s, a, ctx) => cr.applyRequest(services(ctx), authFor(ctx), String(a.id), { hash: a.hash }),
    scheduleChangeRequest: (_s, a, ctx) => cr.scheduleRequest(services(ctx), authFor(ctx), String(a.id), { at: a.at, hash: a.hash }),
    closeChangeRequest: (_s, a, ctx) => cr.closeRequest(services(ctx), authFor(ctx), String(a.id)),
    revertChangeRequest: (_s, a, ctx) => cr.revertRequest(services(ctx), authFor(ctx), String(a.id)),
    rebaseChangeRequest: (_s, a, ctx) => cr.rebaseRequest(services(ctx), authFor(ctx), String(a.id)),
    previewChangeRequest: (_s, a, ctx, info) => {
      const contexts = a.contexts == null ? undefined : (withVars(a.contexts, ctx, info) as unknown[]).map(withoutNulls);
      return previewRequest(services(ctx), authFor(ctx), String(a.id), withoutNulls({ contexts, sample: a.sample ?? null }));
    },
  },
};
