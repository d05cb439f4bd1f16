/**
 * The snapshot feed (docs/feed.md), a protocol adapter beside OFREP and GraphQL for consumers that
 * evaluate in process: `GET /sdk/v1/snapshot?stage=` answers the data to evaluate every flag of the
 * key's application in one stage (feed.ts), `GET /sdk/v1/stream?stage=` the same as a `snapshot`
 * event, then `change` events (stream.ts). Both are admitted through the one admission path
 * (auth/authenticate.ts: 401, 402, 429 on one evaluation token) and then checked as an evaluation
 * (the evaluation stage's step 1, evaluation/check.ts `checkScope`: CanEvaluate with an
 * application scope, the stage against the key's environment scope and the organization's
 * environments). Errors are problem+json.
 */
import './openapi.js';
import { authenticate, type Authenticated } from '../auth/authenticate.js';
import { clientAddress } from '../auth/client-address.js';
import { hashKey } from '../auth/key-material.js';
import { tooManyStreams } from '../evaluation/key-streams.js';
import type { Principal } from '../auth/permissions.js';
import { KEY_HEADERS, requestKey } from '../auth/request-key.js';
import { badRequest } from '../domain/errors.js';
import { parseFeedQuery } from '../domain/validation.js';
import { checkScope, type Scope } from '../evaluation/check.js';
import { etagMatches } from '../http/etag.js';
import type { Incoming, Reply } from '../http/handler.js';
import { queryObject } from '../http/query.js';
import type { Route } from '../http/router.js';
import type { FrontRuntime } from '../runtime.js';
import { feedBody, feedEtag, feedParts } from './feed.js';
import { FeedStreams } from './stream.js';

export const SNAPSHOT_PATH = '/sdk/v1/snapshot';
export const STREAM_PATH = '/sdk/v1/stream';

const evalBucket = (_p: Principal) => 'eval' as const;

/** Which feed a request asks for: the key's application and the stage, both in the organization's spelling. */
function feedScope(auth: Authenticated, inc: Incoming): Scope {
  const query = parseFeedQuery(queryObject(inc.query));
  return checkScope(auth, query.stage ?? auth.principal.environment, noStage);
}

const noStage = () => badRequest('stage is required: give ?stage=, or use a key with an environment scope');

export function feedRoutes(rt: FrontRuntime): Route[] {
  const streams = new FeedStreams(rt.snapshots, rt.keys, rt.log, { maxPerKey: rt.config.sseMaxStreamsPerKey, recheckMs: rt.config.sseKeyRecheckMs });

  const snapshot = (auth: Authenticated, inc: Incoming): Reply => {
    const { application, stage } = feedScope(auth, inc);
    const parts = feedParts(auth.snapshot, application, stage);
    const etag = feedEtag(parts);
    if (etagMatches(inc.headers['if-none-match'] ?? '', etag)) return { status: 304, raw: '', headers: { etag } };
    return { status: 200, raw: feedBody(parts), headers: { 'content-type': 'application/json', etag, 'cache-control': 'no-cache' } };
  };

  const stream = (auth: Authenticated, inc: Incoming): Reply => {
    const { application, stage } = feedScope(auth, inc);
    const p = auth.principal;
    // Past VEXIL_SSE_MAX_STREAMS_PER_KEY on this node: 429 with Retry-After (docs/feed.md, "Limits").
    if (streams.full(p.keyId)) throw tooManyStreams(rt.config.sseMaxStreamsPerKey);
    const target = { orgId: p.orgId, keyId: p.keyId, hash: hashKey(requestKey(inc)), application, stage };
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-store', 'x-accel-buffering': 'no' },
      stream: (sink) => {
        sink.write(': connected\nretry: 2000\n\n');
        // The snapshot as it is when the stream opens (a change may have landed since admission).
        streams.open(sink, target, rt.snapshots.peek(p.orgId) ?? auth.snapshot);
      },
    };
  };

  const withKey =
    (answer: (auth: Authenticated, inc: Incoming) => Reply) =>
    (inc: Incoming): Reply | Promise<Reply> => {
      const auth = authenticate(rt, requestKey(inc), evalBucket, clientAddress(inc));
      return auth instanceof Promise ? auth.then((a) => answer(a, inc)) : answer(auth, inc);
    };

  return [
    { method: 'get', pattern: SNAPSHOT_PATH, handler: withKey(snapshot), headers: [...KEY_HEADERS, 'if-none-match'] },
    { method: 'get', pattern: STREAM_PATH, handler: withKey(stream), headers: KEY_HEADERS },
  ];
}
