/**
 * OFREP routes (docs/ofrep.md): `POST /ofrep/v1/evaluate/flags/{key}` and
 * `POST /ofrep/v1/evaluate/flags`. An adapter over the OFREP service; errors answer in OFREP's
 * shapes (`{key, errorCode, errorDetails}` for 400/404, `{errorDetails}` otherwise), never
 * problem+json.
 */
import { clientAddress } from '../auth/client-address.js';
import { contextTooDeepError, type ContextLimits } from '../domain/validation.js';
import './openapi.js';
import { authenticate, type Authenticated } from '../auth/authenticate.js';
import { hashKey } from '../auth/key-material.js';
import type { Principal } from '../auth/permissions.js';
import { VexilError } from '../domain/errors.js';
import { BodyTooDeepError, jsonObjectBody } from '../http/exchange.js';
import type { Incoming, Reply } from '../http/handler.js';
import { queryParam } from '../http/query.js';
import { CorsPolicy } from '../http/cors.js';
import { withRetryAfter } from '../http/problem.js';
import type { Route } from '../http/router.js';
import type { FrontRuntime } from '../runtime.js';
import { OfrepStreams } from './streams.js';
import { KEY_HEADERS, requestKey } from '../auth/request-key.js';
import { tooManyStreams } from '../evaluation/key-streams.js';
import { OfrepError, ofrepErrorBody } from './errors.js';
import { bulkEtag, etagMatches } from './etag.js';
import { evaluateOne, evaluatePlan, planBulk } from './evaluate.js';
import { authorizeStream, EVENTS_PATH, eventStreams } from './events.js';
import { parseOfrepRequest, type OfrepRequest } from './request.js';

const evalBucket = (_p: Principal) => 'eval' as const;

/** Bulk reads the key (auth/request-key.ts), the ETag to match and the Host of the event-stream URL. */
const BULK_HEADERS = [...KEY_HEADERS, 'if-none-match', 'host'];

const header = (inc: Incoming, name: string): string => inc.headers[name] ?? '';

/**
 * The body as an OFREP request; a body that is not a JSON object is PARSE_ERROR, one the exchange
 * found nested too deep (`BodyTooDeepError`, docs/limits.md) INVALID_CONTEXT, in the words of the
 * context's own limit.
 */
function readRequest(inc: Incoming, flagKey: string | null, limits: ContextLimits): OfrepRequest {
  let body: Record<string, unknown>;
  try {
    body = jsonObjectBody(inc, true);
  } catch (err) {
    if (err instanceof BodyTooDeepError) throw new OfrepError('INVALID_CONTEXT', contextTooDeepError(limits).message, flagKey);
    if ((err as VexilError).code === 'BAD_REQUEST') throw new OfrepError('PARSE_ERROR', (err as Error).message, flagKey);
    throw err;
  }
  return parseOfrepRequest(body, flagKey, limits);
}

/** Every OFREP route's path starts so; each answers its errors in OFREP's shape (`ofrepError`). */
export const OFREP_PREFIX = '/ofrep/';

/** Transport and service errors in OFREP's shape, with their status (domain/errors.ts); 429 keeps Retry-After. */
export function ofrepError(err: VexilError): Reply {
  return { status: err.status, body: ofrepErrorBody(err), headers: withRetryAfter(err, { 'content-type': 'application/json' }) };
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const singleReply = (json: string): Reply => ({ status: 200, raw: json, headers: JSON_HEADERS });

/** What every OFREP evaluation route does first: the key, through admission (auth/authenticate.ts). */
const withKey =
  (rt: FrontRuntime, answer: (auth: Authenticated, inc: Incoming) => Reply | Promise<Reply>) =>
  (inc: Incoming): Reply | Promise<Reply> => {
    const auth = authenticate(rt, requestKey(inc), evalBucket, clientAddress(inc));
    return auth instanceof Promise ? auth.then((a) => answer(a, inc)) : answer(auth, inc);
  };

/**
 * The single-flag evaluation, `POST /ofrep/v1/evaluate/flags/{key}`: a route of its own, since every
 * front thread runs it (docs/threads.md), while the rest of OFREP is the main thread's.
 */
export function ofrepSingleRoute(rt: FrontRuntime): Route {
  const single = (auth: Authenticated, inc: Incoming): Reply | Promise<Reply> => {
    const flagKey = inc.params[0];
    const out = evaluateOne(rt, auth, flagKey, readRequest(inc, flagKey, rt.config.contextLimits));
    return typeof out === 'string' ? singleReply(out) : out.then(singleReply);
  };
  // The body object is one level above its context: anything deeper cannot pass, and is refused
  // by the exchange (jsonObjectBody) before JSON.parse spends time building it (readRequest).
  const maxBodyDepth = rt.config.contextLimits.maxDepth + 1;
  // Browser applications on other origins (VEXIL_CORS_ORIGINS; none by default).
  const cors = new CorsPolicy(rt.config.corsOrigins);
  return { method: 'post', pattern: '/ofrep/v1/evaluate/flags/:key', handler: withKey(rt, single), onError: ofrepError, headers: KEY_HEADERS, maxBodyDepth, cors, lean: true };
}

export function ofrepRoutes(rt: FrontRuntime): Route[] {

  const bulk = (auth: Authenticated, inc: Incoming): Reply | Promise<Reply> => {
    const plan = planBulk(auth, readRequest(inc, null, rt.config.contextLimits));
    const etag = bulkEtag(plan, inc.body, rt.now());
    // A matching ETag answers before anything is evaluated.
    if (etagMatches(header(inc, 'if-none-match'), etag)) return { status: 304, raw: '', headers: { etag } };
    const streams = JSON.stringify(eventStreams(rt, auth, () => hashKey(requestKey(inc)), header(inc, 'host')));
    const reply = (flags: string): Reply => ({ status: 200, raw: `{"flags":[${flags}],"eventStreams":${streams}}`, headers: { 'content-type': 'application/json', etag } });
    const flags = evaluatePlan(rt, plan);
    return typeof flags === 'string' ? reply(flags) : flags.then(reply);
  };

  // The SSE stream: one refetchEvaluation event per change of a flag of the key's application.
  const hub = new OfrepStreams(rt.snapshots, rt.keys, rt.log, { maxPerKey: rt.config.sseMaxStreamsPerKey, recheckMs: rt.config.sseKeyRecheckMs });
  const events = async (inc: Incoming): Promise<Reply> => {
    const grant = await authorizeStream(rt, queryParam(inc.query, 'token'), clientAddress(inc));
    // Past VEXIL_SSE_MAX_STREAMS_PER_KEY: 429 RATE_LIMITED, in OFREP's shape like every error of this
    // route (docs/ofrep.md, "The event stream").
    if (hub.full(grant.keyId)) throw tooManyStreams(rt.config.sseMaxStreamsPerKey);
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-store', 'x-accel-buffering': 'no' },
      stream: (sink) => {
        sink.write(': connected\nretry: 2000\n\n');
        hub.add(sink, grant.orgId, grant.keyId, grant.application, grant.hash);
      },
    };
  };

  const single = ofrepSingleRoute(rt);
  const { maxBodyDepth, cors } = single;
  return [
    single,
    { method: 'post', pattern: '/ofrep/v1/evaluate/flags', handler: withKey(rt, bulk), onError: ofrepError, headers: BULK_HEADERS, maxBodyDepth, cors, lean: true },
    { method: 'get', pattern: EVENTS_PATH, handler: events, onError: ofrepError, cors },
  ];
}
