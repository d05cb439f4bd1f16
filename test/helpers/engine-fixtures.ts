/** Builders for evaluation tests (not a test file itself). */
import type { Flag, FlagConfig, Organization, EvaluationRequest, Rule, Evaluation } from '../../src/domain/types.js';
import { buildSnapshot, evaluateFlag, type OrgSnapshot } from '../../src/engine/index.js';

export const NOW = Date.parse('2025-06-01T12:00:00.000Z');

export function org(over: Partial<Organization> = {}): Organization {
  return {
    id: 'org-1',
    name: 'Acme',
    subscriptionActive: true,
    environments: ['development', 'staging', 'production'],
    applications: ['web', 'mobile'],
    killSwitch: [],
    version: 1,
    ...over,
  };
}

export function flag(over: Partial<Flag> = {}): Flag {
  return {
    name: 'checkout',
    project: 'web',
    type: 'string',
    description: null,
    tags: [],
    isArchived: false,
    variants: [
      { key: 'on', value: 'ON', valueType: 'string' },
      { key: 'off', value: 'OFF', valueType: 'string' },
    ],
    environments: ['development', 'staging', 'production'],
    dependencies: [],
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
    ...over,
  };
}

export function config(over: Partial<FlagConfig> = {}): FlagConfig {
  return {
    stage: 'production',
    clientId: null,
    enabled: true,
    defaultVariantKey: 'off',
    rolloutPercentage: 100,
    rules: [],
    activeFrom: null,
    activeUntil: null,
    enrollmentCutoff: null,
    ...over,
  };
}

export function rule(id: string, priority: number, over: Partial<Rule> = {}): Rule {
  return { id, priority, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }], ...over };
}

export function req(over: Partial<EvaluationRequest> = {}): EvaluationRequest {
  return { userId: 'user-1', stage: 'production', clientId: null, context: null, ...over };
}

/** A snapshot of the given flags; `configs` by flag name. */
export function snap(o: Organization, flags: Flag[], configs: Record<string, FlagConfig[]> = {}): OrgSnapshot {
  return buildSnapshot(o, flags, new Map(Object.entries(configs)));
}

/** Evaluates `name` in the snapshot. */
export function evalIn(s: OrgSnapshot, name: string, r: Partial<EvaluationRequest> = {}, now = NOW): Evaluation {
  const f = s.flags.get(name);
  if (f === undefined) throw new Error(`no flag ${name}`);
  return evaluateFlag(s, f, req(r), now);
}

/** One flag, one org: the common case. */
export function evalOne(
  f: Flag,
  configs: FlagConfig[],
  r: Partial<EvaluationRequest> = {},
  o: Organization = org(),
  now = NOW,
): Evaluation {
  return evalIn(snap(o, [f], { [f.name]: configs }), f.name, r, now);
}
