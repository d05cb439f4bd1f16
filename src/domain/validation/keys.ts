/** Management Key creation. */
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { PERMISSIONS, type Permission } from '../types.js';
import { KEY_NAME_MAX, name, parseInput } from './common.js';

export interface CreateKeyInput {
  name: string;
  permissions: Permission[];
  application: string | null;
  environment: string | null;
}

export const createKeySchema = z.strictObject({
  name: z.string().trim().min(1).max(KEY_NAME_MAX),
  permissions: z.array(z.enum(PERMISSIONS)).min(1),
  application: name.nullable().optional(),
  environment: name.nullable().optional(),
});

/** `POST /api/keys`, GraphQL `createManagementKey`. Name trimmed; permissions unique. */
export function parseCreateKey(data: unknown): CreateKeyInput {
  const p = parseInput(createKeySchema, data, 'management key');
  const seen = new Set<Permission>();
  p.permissions.forEach((perm, i) => {
    if (seen.has(perm)) throw badRequest(`permissions[${i}]: duplicate permission '${perm}'`);
    seen.add(perm);
  });
  return {
    name: p.name,
    permissions: p.permissions,
    application: p.application ?? null,
    environment: p.environment ?? null,
  };
}
