// The public types of @vexil/openfeature-provider (the code: src/index.ts, bundled into dist/index.js).
import type { EvaluationContext, JsonValue, OpenFeatureEventEmitter, Provider, ResolutionDetails } from '@openfeature/server-sdk';

export interface VexilProviderOptions {
  /** The node's base URL, e.g. `http://vexil:8080`. */
  url: string;
  /** A key with CanEvaluate for one application (sent as `X-API-Key`). */
  key: string;
  /** The stage to evaluate in (the key's environment scope when left out). */
  stage?: string;
  /** A file to keep the last data in, to start from when the node cannot be reached. */
  cacheFile?: string;
  /** Reconnection backoff: the first delay (250 ms) and the cap (30 s); each delay is jittered. */
  minReconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /** How long a snapshot request may take (5 s). */
  requestTimeoutMs?: number;
  /** A stream that sends nothing for this long is reconnected (60 s). */
  idleTimeoutMs?: number;
}

export type FlagType = 'boolean' | 'string' | 'number' | 'object';

export declare class VexilProvider implements Provider {
  constructor(options: VexilProviderOptions);
  readonly metadata: { readonly name: 'vexil' };
  readonly runsOn: 'server';
  readonly events: OpenFeatureEventEmitter;
  /** The data version held (null before any data). */
  readonly version: number | null;
  initialize(): Promise<void>;
  onClose(): Promise<void>;
  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>>;
  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>>;
  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>>;
  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>>;
  /** One evaluation, synchronously, from the held data. */
  resolve<T>(flagKey: string, defaultValue: T, context: EvaluationContext, type: FlagType): ResolutionDetails<T>;
}
