/**
 * Checks the `context` arguments of a GraphQL document against the context size limits
 * (docs/limits.md, "Evaluation contexts"): the `context` argument of every `evaluate` field,
 * whether an inline literal, a variable, or a literal with variables nested in it, is measured
 * before anything executes, with exactly the counting of src/domain/validation/context-limits.ts
 * (which owns the limits; variables' JSON values are measured by that same function, from the depth
 * where they sit). Iterative; pure.
 */
import { Kind, type OperationDefinitionNode, type ValueNode } from 'graphql';
import { contextLimitError, measureContext, type ContextLimits } from '../domain/validation.js';

/** Default values of the operation's variables, by name. */
export function variableDefaults(op: OperationDefinitionNode): Map<string, ValueNode> {
  const out = new Map<string, ValueNode>();
  for (const d of op.variableDefinitions ?? []) if (d.defaultValue !== undefined) out.set(d.variable.name.value, d.defaultValue);
  return out;
}

/** Whether a value literal mentions a variable anywhere (then it can only be measured per request). */
export function hasVariable(node: ValueNode): boolean {
  const stack: ValueNode[] = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.kind === Kind.VARIABLE) return true;
    if (n.kind === Kind.LIST) stack.push(...n.values);
    else if (n.kind === Kind.OBJECT) for (const f of n.fields) stack.push(f.value);
  }
  return false;
}

/**
 * The message of the first context limit that one of `contexts` exceeds, or null. `variables` are
 * the request's (null: none given), `defaults` the operation's variable defaults.
 */
export function contextViolation(
  contexts: readonly ValueNode[],
  variables: Record<string, unknown> | null,
  defaults: ReadonlyMap<string, ValueNode>,
  limits: ContextLimits,
): string | null {
  for (const root of contexts) {
    let values = 0;
    let depth = 0;
    const nodes: ValueNode[] = [root];
    const depths: number[] = [0];
    while (nodes.length > 0) {
      const n = nodes.pop()!;
      const at = depths.pop()!;
      if (n.kind === Kind.VARIABLE) {
        const name = n.name.value;
        if (variables !== null && Object.prototype.hasOwnProperty.call(variables, name)) {
          const size = measureContext(variables[name], limits, at, values);
          const err = contextLimitError(size, limits);
          if (err !== null) return err.message;
          values = size.values;
          if (size.depth > depth) depth = size.depth;
        } else {
          const d = defaults.get(name);
          if (d !== undefined) {
            nodes.push(d);
            depths.push(at);
          }
        }
        continue;
      }
      if (++values > limits.maxValues) return contextLimitError({ depth, values, exceeded: 'values' }, limits)!.message;
      if (n.kind !== Kind.LIST && n.kind !== Kind.OBJECT) continue;
      const d = at + 1;
      if (d > depth) depth = d;
      if (d > limits.maxDepth) return contextLimitError({ depth, values, exceeded: 'depth' }, limits)!.message;
      if (n.kind === Kind.LIST) {
        for (const v of n.values) {
          nodes.push(v);
          depths.push(d);
        }
      } else {
        for (const f of n.fields) {
          nodes.push(f.value);
          depths.push(d);
        }
      }
    }
  }
  return null;
}
