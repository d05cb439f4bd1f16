/**
 * Bad input over REST (docs/api.md, "Errors", "Request bodies" and "Flags"): validation 400s of create, update and config
 * upsert, unknown fields, wrong JSON types, and transport failures (413, 400 for bodies that are
 * not JSON objects or not UTF-8, 415, 405 with Allow, 404). Every rejected write is followed by
 * reading the flag and the organization's flag state back: nothing may have changed.
 */
import http from 'node:http';
import t from 'tap';
import type { Res, TestNode } from '../../helpers/node.js';
import {
  boolVariants,
  createOrg,
  evalFlag,
  evalKey,
  expectProblem,
  expectRejectedUnchanged,
  getFlag,
  must,
  postConfig,
  postFlag,
  putFlag,
  startNode,
  type TapTest,
} from '../../helpers/flags.js';

const MiB = 1 << 20;

/** A create body that is valid except for `patch` (a field set to undefined is removed). */
function flagBody(name: string, patch: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = { name, project: 'web', type: 'boolean', variants: boolVariants, ...patch };
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

/** A config body that is valid except for `patch`. */
function configBody(patch: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    stage: 'production',
    enabled: true,
    defaultVariantKey: 'off',
    rolloutPercentage: 100,
    rules: [{ id: 'r1', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
    ...patch,
  };
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

const rule = (patch: Record<string, unknown>) => ({
  priority: 1,
  conditions: [],
  allocations: [{ variantKey: 'on', percentage: 100 }],
  ...patch,
});

/**
 * A request with node:http, for what fetch cannot send (chunked bodies without Content-Length).
 * The server may close the connection right after answering 413; a write error after the
 * response arrived is not a failure.
 */
function rawRequest(n: TestNode, method: string, path: string, headers: Record<string, string>, chunks: Buffer[]): Promise<Res> {
  const url = new URL(n.url + path);
  return new Promise((resolve, reject) => {
    let done = false;
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        done = true;
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve({ status: res.statusCode ?? 0, headers: h, body, text });
      });
    });
    req.on('error', (err) => {
      if (!done) reject(err);
    });
    (async () => {
      for (const c of chunks) {
        if (req.destroyed) return;
        if (!req.write(c)) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(() => {});
  });
}

t.test('bad input over REST', async (t) => {
  const n = await startNode(t);

  t.test('create: validation 400s leave nothing behind', async (t) => {
    const org = await createOrg(n);
    const A = org.adminKey;
    must(t, await postFlag(n, A, 'existing'), 201, 'create');
    must(t, await postConfig(n, A, 'existing'), 200, 'config');

    const cases: [string, Record<string, unknown>, RegExp][] = [
      // Flag names: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$
      ['name with a leading hyphen', flagBody('-lead'), /name/],
      ['name with a leading dot', flagBody('.lead'), /name/],
      ['name with a space', flagBody('has space'), /name/],
      ['name with a slash', flagBody('a/b'), /name/],
      ['name with a colon', flagBody('a:b'), /name/],
      ['name with non-ASCII letters', flagBody('ünïcode'), /name/],
      ['empty name', flagBody(''), /name/],
      ['name of 129 characters', flagBody('a'.repeat(129)), /name/],
      ['name missing', flagBody('x', { name: undefined }), /name/],
      ['name a number', flagBody('x', { name: 5 }), /name/],
      // type and valueType values
      ['type not a known type', flagBody('t1', { type: 'bool' }), /type/],
      ['type in another case', flagBody('t2', { type: 'Boolean' }), /type/],
      ['type missing', flagBody('t3', { type: undefined }), /type/],
      ['valueType not a known type', flagBody('t4', { variants: [{ key: 'on', value: true, valueType: 'bool' }] }), /valueType/],
      ['valueType other than the flag type', flagBody('t5', { variants: [{ key: 'on', value: 'yes', valueType: 'string' }] }), /valueType/],
      ['valueType missing', flagBody('t6', { variants: [{ key: 'on', value: true }] }), /valueType/],
      // values must match the valueType
      ['string "true" in a boolean flag', flagBody('v1', { variants: [{ key: 'on', value: 'true', valueType: 'boolean' }] }), /value/],
      ['boolean value missing', flagBody('v2', { variants: [{ key: 'on', valueType: 'boolean' }] }), /value/],
      ['number in a string flag', flagBody('v3', { type: 'string', variants: [{ key: 'a', value: 1, valueType: 'string' }] }), /value/],
      ['numeric string in a number flag', flagBody('v4', { type: 'number', variants: [{ key: 'a', value: '1', valueType: 'number' }] }), /value/],
      ['null in a number flag', flagBody('v5', { type: 'number', variants: [{ key: 'a', value: null, valueType: 'number' }] }), /value/],
      // variant keys
      ['duplicate variant keys', flagBody('k1', { variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'on', value: false, valueType: 'boolean' }] }), /duplicate/],
      ['empty variant key', flagBody('k2', { variants: [{ key: '', value: true, valueType: 'boolean' }] }), /key/],
      ['variant key a number', flagBody('k3', { variants: [{ key: 1, value: true, valueType: 'boolean' }] }), /key/],
      // unknown fields, at every level
      ['unknown top-level field', flagBody('u1', { colour: 'red' }), /colour/],
      ['isArchived is not a create field', flagBody('u2', { isArchived: true }), /isArchived/],
      ['createdAt is not a create field', flagBody('u3', { createdAt: '2024-01-01T00:00:00Z' }), /createdAt/],
      ['unknown variant field', flagBody('u4', { variants: [{ key: 'on', value: true, valueType: 'boolean', label: 'On' }] }), /label/],
      ['unknown dependency field', flagBody('u5', { dependencies: [{ flag: 'existing', required: true }] }), /required/],
      // wrong JSON types
      ['project a number', flagBody('j1', { project: 7 }), /project/],
      ['description a number', flagBody('j2', { description: 5 }), /description/],
      ['tags a string', flagBody('j3', { tags: 'a,b' }), /tags/],
      ['tags with a number', flagBody('j4', { tags: ['a', 1] }), /tags/],
      ['variants an object', flagBody('j5', { variants: { on: true } }), /variants/],
      ['variants missing', flagBody('j6', { variants: undefined }), /variants/],
      ['a variant that is a string', flagBody('j7', { variants: ['on'] }), /variants/],
      ['environments a string', flagBody('j8', { environments: 'production' }), /environments/],
      ['dependencies an object', flagBody('j9', { dependencies: { flag: 'existing' } }), /dependencies/],
      // references the organization does not have
      ['unknown project', flagBody('r1', { project: 'nowhere' }), /nowhere/],
      ['unknown environment', flagBody('r2', { environments: ['production', 'staging'] }), /staging/],
      ['environment listed twice', flagBody('r3', { environments: ['production', 'PRODUCTION'] }), /duplicate/],
      ['dependency on a missing flag', flagBody('r4', { dependencies: [{ flag: 'ghost' }] }), /ghost/],
      ['dependency on itself', flagBody('r5', { dependencies: [{ flag: 'r5' }] }), /itself/],
      ['dependency variant the parent lacks', flagBody('r6', { dependencies: [{ flag: 'existing', variants: ['maybe'] }] }), /maybe/],
      ['description over 4096 characters', flagBody('l1', { description: 'd'.repeat(4097) }), /description/],
      // U+0000 cannot be stored (PostgreSQL text/jsonb): 400, not a database error.
      ['NUL in the description', flagBody('z1', { description: 'a\u0000b' }), /description.*U\+0000/],
      ['NUL in a tag', flagBody('z2', { tags: ['ok', 'a\u0000'] }), /tags\[1\].*U\+0000/],
      ['NUL in a variant key', flagBody('z3', { variants: [{ key: 'o\u0000n', value: true, valueType: 'boolean' }] }), /U\+0000/],
      ['NUL in a string variant value', flagBody('z4', { type: 'string', variants: [{ key: 'a', value: 'x\u0000', valueType: 'string' }] }), /variants\[0\]\.value.*U\+0000/],
      ['NUL in a json variant object key', flagBody('z5', { type: 'json', variants: [{ key: 'a', value: { nested: [{ 'k\u0000': 1 }] }, valueType: 'json' }] }), /U\+0000/],
    ];
    for (const [what, body, detail] of cases) {
      t.test(what, async (t) => {
        const name = typeof body.name === 'string' && body.name !== '' ? body.name : 'existing';
        await expectRejectedUnchanged(t, n, A, name, () => n.req('POST', '/api/flags', { key: A, body }), 400, 'BAD_REQUEST', detail);
      });
    }

    t.test('a non-finite number (1e400) is not a number value', async (t) => {
      const raw = '{"name":"inf","project":"web","type":"number","variants":[{"key":"a","value":1e400,"valueType":"number"}]}';
      await expectRejectedUnchanged(t, n, A, 'inf',
        () => n.req('POST', '/api/flags', { key: A, raw, headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST', /value/);
    });

    t.test('the limits themselves are accepted', async (t) => {
      const long = 'A' + 'b'.repeat(126) + '9';
      const r = await n.req('POST', '/api/flags', { key: A, body: flagBody(long) });
      t.equal(r.status, 201, '128-character name');
      t.equal(r.body.name, long);
      t.equal((await n.req('POST', '/api/flags', { key: A, body: flagBody('9_a.b-C') })).status, 201, 'every allowed character');
      const num = await n.req('POST', '/api/flags', { key: A, body: flagBody('numbers', { type: 'number', variants: [{ key: 'a', value: 0, valueType: 'number' }, { key: 'b', value: -1.5e3, valueType: 'number' }] }) });
      t.equal(num.status, 201);
      t.same(num.body.variants.map((v: { value: number }) => v.value), [0, -1500]);
    });
  });

  t.test('update: validation 400s and unknown fields leave the flag unchanged', async (t) => {
    const org = await createOrg(n);
    const A = org.adminKey;
    must(t, await postFlag(n, A, 'target', { description: 'keep me', tags: ['x'] }), 201, 'create');
    must(t, await postConfig(n, A, 'target'), 200, 'config');
    must(t, await postFlag(n, A, 'other'), 201, 'create other');
    const cases: [string, unknown, RegExp][] = [
      ['name is not updatable', { name: 'renamed' }, /name/],
      ['project is not updatable', { project: 'billing' }, /project/],
      ['environments are not an update field', { environments: ['production'] }, /environments/],
      ['unknown field', { colour: 'red', description: 'changed' }, /colour/],
      ['isArchived a string', { isArchived: 'yes' }, /isArchived/],
      ['isArchived a number', { isArchived: 1 }, /isArchived/],
      ['description a number', { description: 5 }, /description/],
      ['tags a string', { tags: 'x' }, /tags/],
      ['type not a known type', { type: 'integer' }, /type/],
      ['variants an object', { variants: {} }, /variants/],
      ['duplicate variant keys', { variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'on', value: false, valueType: 'boolean' }] }, /duplicate/],
      ['variant value not matching the stored type', { variants: [{ key: 'on', value: 'yes', valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] }, /value/],
      ['variant valueType other than the stored type', { variants: [{ key: 'on', value: 'yes', valueType: 'string' }, { key: 'off', value: 'no', valueType: 'string' }] }, /valueType/],
      ['type and variants that disagree', { type: 'number', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] }, /valueType|value/],
      ['dependencies a string', { dependencies: 'other' }, /dependencies/],
      ['dependency with an unknown field', { dependencies: [{ flag: 'other', when: 'on' }] }, /when/],
      ['dependency on a missing flag', { dependencies: [{ flag: 'ghost' }] }, /ghost/],
      ['NUL in the description', { description: '\u0000' }, /U\+0000/],
      ['NUL in a tag', { tags: ['\u0000'] }, /U\+0000/],
    ];
    for (const [what, body, detail] of cases) {
      t.test(what, async (t) => {
        await expectRejectedUnchanged(t, n, A, 'target', () => putFlag(n, A, 'target', body), 400, 'BAD_REQUEST', detail);
      });
    }
  });

  t.test('config upsert: validation 400s leave the stored configuration unchanged', async (t) => {
    const org = await createOrg(n);
    const A = org.adminKey;
    must(t, await postFlag(n, A, 'target'), 201, 'create');
    must(t, await postConfig(n, A, 'target', configBody({ rolloutPercentage: 40 })), 200, 'config');
    const cond = (field: unknown, operator = '==', value: unknown = 'x') => ({ rules: [rule({ conditions: [{ field, operator, value }] })] });
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['defaultVariantKey not a variant', configBody({ defaultVariantKey: 'purple' }), /purple/],
      ['allocation key not a variant', configBody({ rules: [rule({ allocations: [{ variantKey: 'purple', percentage: 100 }] })] }), /purple/],
      ['allocations summing to 90', configBody({ rules: [rule({ allocations: [{ variantKey: 'on', percentage: 40 }, { variantKey: 'off', percentage: 50 }] })] }), /100/],
      ['allocations summing to 110', configBody({ rules: [rule({ allocations: [{ variantKey: 'on', percentage: 60 }, { variantKey: 'off', percentage: 50 }] })] }), /100/],
      ['no allocations', configBody({ rules: [rule({ allocations: [] })] }), /allocations/],
      ['allocation percentage over 100', configBody({ rules: [rule({ allocations: [{ variantKey: 'on', percentage: 150 }, { variantKey: 'off', percentage: -50 }] })] }), /percentage/],
      ['the same variant allocated twice', configBody({ rules: [rule({ allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'on', percentage: 50 }] })] }), /duplicate/],
      ['condition field with a hyphen', configBody(cond('user-id')), /field/],
      ['condition field with a space', configBody(cond('first name')), /field/],
      ['empty condition field', configBody(cond('')), /field/],
      ['condition field with an empty segment', configBody(cond('a..b')), /field/],
      ['condition field with a leading dot', configBody(cond('.a')), /field/],
      ['condition field with a trailing dot', configBody(cond('a.')), /field/],
      ['condition field a number', configBody(cond(5)), /field/],
      ['unknown operator', configBody(cond('country', 'like')), /operator/],
      ['in with a non-array value', configBody(cond('country', 'in', 'NL')), /array/],
      ['unknown config field', configBody({ colour: 'red' }), /colour/],
      ['unknown rule field', configBody({ rules: [rule({ name: 'r' })] }), /name/],
      ['unknown condition field', configBody({ rules: [rule({ conditions: [{ field: 'a', operator: '==', value: 1, negate: true }] })] }), /negate/],
      ['unknown allocation field', configBody({ rules: [rule({ allocations: [{ variantKey: 'on', percentage: 100, weight: 1 }] })] }), /weight/],
      ['stage missing', configBody({ stage: undefined }), /stage/],
      ['stage a number', configBody({ stage: 5 }), /stage/],
      ['enabled missing', configBody({ enabled: undefined }), /enabled/],
      ['enabled a string', configBody({ enabled: 'true' }), /enabled/],
      ['defaultVariantKey missing', configBody({ defaultVariantKey: undefined }), /defaultVariantKey/],
      ['rolloutPercentage missing', configBody({ rolloutPercentage: undefined }), /rolloutPercentage/],
      ['rolloutPercentage a string', configBody({ rolloutPercentage: '50' }), /rolloutPercentage/],
      ['rolloutPercentage over 100', configBody({ rolloutPercentage: 101 }), /rolloutPercentage/],
      ['rolloutPercentage negative', configBody({ rolloutPercentage: -1 }), /rolloutPercentage/],
      ['enrollmentCutoff over 100', configBody({ enrollmentCutoff: 100.5 }), /enrollmentCutoff/],
      ['rules an object', configBody({ rules: { priority: 1 } }), /rules/],
      ['priority not an integer', configBody({ rules: [rule({ priority: 1.5 })] }), /priority/],
      ['priority a string', configBody({ rules: [rule({ priority: 'high' })] }), /priority/],
      ['priority missing', configBody({ rules: [{ conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), /priority/],
      ['conditions missing', configBody({ rules: [{ priority: 1, allocations: [{ variantKey: 'on', percentage: 100 }] }] }), /conditions/],
      ['duplicate rule ids', configBody({ rules: [rule({ id: 'same' }), rule({ id: 'same', priority: 2 })] }), /duplicate/],
      ['empty rule id', configBody({ rules: [rule({ id: '' })] }), /id/],
      ['empty clientId', configBody({ clientId: '' }), /clientId/],
      ['clientId a number', configBody({ clientId: 3 }), /clientId/],
      ['activeFrom not a date-time', configBody({ activeFrom: 'tomorrow' }), /activeFrom/],
      ['activeFrom without a time zone', configBody({ activeFrom: '2030-01-01T00:00:00' }), /time zone/],
      ['activeFrom an impossible date', configBody({ activeFrom: '2030-02-30T00:00:00Z' }), /activeFrom/],
      ['activeUntil a number', configBody({ activeUntil: 1700000000000 }), /activeUntil/],
      ['activeFrom not before activeUntil', configBody({ activeFrom: '2030-01-02T00:00:00Z', activeUntil: '2030-01-01T00:00:00Z' }), /before/],
      // Years 1-99 would be read back as 19xx/20xx by the database drivers, year 0 does not exist.
      ['activeUntil in the year 50', configBody({ activeUntil: '0050-01-01T00:00:00Z' }), /activeUntil/],
      ['activeFrom in the year 0', configBody({ activeFrom: '0000-06-01T00:00:00Z' }), /activeFrom/],
      ['activeFrom in the year 99 after the offset', configBody({ activeFrom: '0100-01-01T00:30:00+01:00' }), /activeFrom/],
      ['NUL in the clientId', configBody({ clientId: 'web:\u0000' }), /clientId.*U\+0000/],
      ['NUL in a rule id', configBody({ rules: [rule({ id: 'r\u0000' })] }), /rules\[0\]\.id.*U\+0000/],
      ['NUL in a condition value', configBody({ rules: [rule({ conditions: [{ field: 'a', operator: 'in', value: ['x', '\u0000'] }] })] }), /conditions\[0\]\.value\[1\].*U\+0000/],
    ];
    for (const [what, body, detail] of cases) {
      t.test(what, async (t) => {
        await expectRejectedUnchanged(t, n, A, 'target', () => n.req('POST', '/api/flags/target/configs', { key: A, body }), 400, 'BAD_REQUEST', detail);
      });
    }

    t.test('time-window bounds round-trip exactly, from the year 100 to 9999', async (t) => {
      const r = await postConfig(n, A, 'target', configBody({ activeFrom: '0100-01-01T00:00:00Z', activeUntil: '9999-12-31T23:59:59.999Z' }));
      t.equal(r.status, 200);
      t.equal(r.body.activeFrom, '0100-01-01T00:00:00.000Z');
      t.equal(r.body.activeUntil, '9999-12-31T23:59:59.999Z');
      const g = await getFlag(n, A, 'target');
      t.equal(g.body.configs[0].activeFrom, '0100-01-01T00:00:00.000Z', 'read back unchanged');
      const ek = await evalKey(n, A, 'web');
      const ev = await evalFlag(n, ek, 'target', { userId: 'u', stage: 'production' }, true);
      t.equal(ev.body.reason.code, 'default', 'inside the window');
    });

    t.test('a valid dotted field path and fractional allocations summing to 100 are accepted', async (t) => {
      const r = await postConfig(n, A, 'target', configBody({
        rules: [
          { id: 'deep', priority: 1, conditions: [{ field: 'user.address.country_code', operator: '==', value: 'NL' }, { field: 'items.0.sku_2', operator: '==', value: 'X' }], allocations: [{ variantKey: 'on', percentage: 100 }] },
          { id: 'thirds', priority: 2, conditions: [{ field: 'Group_1', operator: '==', value: 'g' }], allocations: [{ variantKey: 'on', percentage: 33.3 }, { variantKey: 'off', percentage: 66.7 }] },
        ],
      }));
      t.equal(r.status, 200);
      t.equal(r.body.rules[0].conditions[0].field, 'user.address.country_code');
      // ...and the path reaches into the context.
      const ek = await evalKey(n, A, 'web');
      const hit = await evalFlag(n, ek, 'target', { userId: 'u', stage: 'production', context: { user: { address: { country_code: 'NL' } }, items: [{ sku_2: 'X' }] } }, true);
      t.equal(hit.status, 200);
      t.equal(hit.body.reason.code, 'rule_matched');
      t.equal(hit.body.reason.ruleId, 'deep');
      const miss = await evalFlag(n, ek, 'target', { userId: 'u', stage: 'production', context: { user: { address: { country_code: 'BE' } }, items: [{ sku_2: 'X' }] } }, true);
      t.equal(miss.body.reason.code, 'default');
    });
  });

  t.test('transport: bodies that are not a JSON object, not UTF-8, not JSON, or too large', async (t) => {
    const org = await createOrg(n);
    const A = org.adminKey;
    must(t, await postFlag(n, A, 'target'), 201, 'create');
    must(t, await postConfig(n, A, 'target'), 200, 'config');
    const ek = await evalKey(n, A, 'web');
    const json = { 'content-type': 'application/json' };
    const endpoints: [string, string, string][] = [
      ['create', 'POST', '/api/flags'],
      ['update', 'PUT', '/api/flags/target'],
      ['config', 'POST', '/api/flags/target/configs'],
    ];
    const bad: [string, string | Buffer, Record<string, string>, number, string][] = [
      ['malformed JSON', '{"name": "x",', json, 400, 'BAD_REQUEST'],
      ['trailing garbage', '{"description":"x"} x', json, 400, 'BAD_REQUEST'],
      ['a JSON array', '[{"name":"x"}]', json, 400, 'BAD_REQUEST'],
      ['a JSON string', '"x"', json, 400, 'BAD_REQUEST'],
      ['JSON null', 'null', json, 400, 'BAD_REQUEST'],
      ['a JSON number', '42', json, 400, 'BAD_REQUEST'],
      ['an empty body', '', json, 400, 'BAD_REQUEST'],
      ['invalid UTF-8 bytes', Buffer.from([0x7b, 0x22, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), json, 400, 'BAD_REQUEST'],
      ['bare 0xff 0xfe', Buffer.from([0xff, 0xfe]), json, 400, 'BAD_REQUEST'],
      ['text/plain with a JSON body', '{"description":"x"}', { 'content-type': 'text/plain' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['form encoding', 'description=x', { 'content-type': 'application/x-www-form-urlencoded' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['no content type', Buffer.from('{"description":"x"}'), {}, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ];
    for (const [ep, method, path] of endpoints) {
      for (const [what, raw, headers, status, code] of bad) {
        t.test(`${ep}: ${what} -> ${status}`, async (t) => {
          await expectRejectedUnchanged(t, n, A, 'target', () => n.req(method, path, { key: A, raw, headers }), status, code);
        });
      }
    }
    t.test('evaluation: the same bodies are rejected', async (t) => {
      for (const [what, raw, headers, status, code] of bad) {
        const r = await n.req('POST', '/flags/target?explain=true', { key: ek, raw, headers });
        t.test(what, async (t) => expectProblem(t, r, status, code));
      }
    });

    t.test('JSON content types with parameters or a +json suffix are accepted', async (t) => {
      const r = await n.req('PUT', '/api/flags/target', { key: A, raw: '{"description":"charset"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
      t.equal(r.status, 200);
      t.equal(r.body.description, 'charset');
      const r2 = await n.req('PUT', '/api/flags/target', { key: A, raw: '{"description":"merge"}', headers: { 'content-type': 'Application/Merge-Patch+JSON' } });
      t.equal(r2.status, 200);
      t.equal(r2.body.description, 'merge');
      const utf8 = await n.req('PUT', '/api/flags/target', { key: A, raw: Buffer.from('{"description":"Grüße ✓ 🚀"}', 'utf8'), headers: json });
      t.equal(utf8.status, 200);
      t.equal(utf8.body.description, 'Grüße ✓ 🚀', 'multi-byte UTF-8 round-trips');
      const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"description":"bom"}')]);
      const r3 = await n.req('PUT', '/api/flags/target', { key: A, raw: bom, headers: json });
      t.equal(r3.status, 200, 'a leading UTF-8 byte order mark is ignored (RFC 8259 8.1)');
      t.equal(r3.body.description, 'bom');
    });

    t.test('body over 1 MiB with Content-Length: 413 PAYLOAD_TOO_LARGE, nothing written', async (t) => {
      const big = JSON.stringify(flagBody('big', { description: 'x'.repeat(MiB + 16) }));
      await expectRejectedUnchanged(t, n, A, 'big', () => n.req('POST', '/api/flags', { key: A, raw: big, headers: json }), 413, 'PAYLOAD_TOO_LARGE');
      expectProblem(t, await getFlag(n, A, 'big'), 404, 'NOT_FOUND');
      const bigUpdate = JSON.stringify({ description: 'y'.repeat(MiB + 1) });
      await expectRejectedUnchanged(t, n, A, 'target', () => n.req('PUT', '/api/flags/target', { key: A, raw: bigUpdate, headers: json }), 413, 'PAYLOAD_TOO_LARGE');
      const bigConfig = JSON.stringify(configBody({ rules: [rule({ conditions: [{ field: 'a', operator: '==', value: 'z'.repeat(MiB) }] })] }));
      await expectRejectedUnchanged(t, n, A, 'target', () => n.req('POST', '/api/flags/target/configs', { key: A, raw: bigConfig, headers: json }), 413, 'PAYLOAD_TOO_LARGE');
      const bigEval = JSON.stringify({ userId: 'u', stage: 'production', context: { pad: 'p'.repeat(MiB) } });
      expectProblem(t, await n.req('POST', '/flags/target', { key: ek, raw: bigEval, headers: json }), 413, 'PAYLOAD_TOO_LARGE');
      // The node still answers afterwards.
      t.equal((await getFlag(n, A, 'target')).status, 200);
    });

    t.test('body over 1 MiB sent chunked (no Content-Length): 413, nothing written', async (t) => {
      const big = Buffer.from(JSON.stringify(flagBody('chunky', { description: 'c'.repeat(MiB + 1024) })));
      const chunks: Buffer[] = [];
      for (let i = 0; i < big.length; i += 64 * 1024) chunks.push(big.subarray(i, i + 64 * 1024));
      await expectRejectedUnchanged(t, n, A, 'chunky',
        () => rawRequest(n, 'POST', '/api/flags', { 'x-management-key': A, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, chunks),
        413, 'PAYLOAD_TOO_LARGE');
      expectProblem(t, await getFlag(n, A, 'chunky'), 404, 'NOT_FOUND');
      // A small chunked body is read normally.
      const small = Buffer.from(JSON.stringify(flagBody('chunked-ok')));
      const ok = await rawRequest(n, 'POST', '/api/flags', { 'x-management-key': A, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, [small.subarray(0, 10), small.subarray(10)]);
      t.equal(ok.status, 201);
      t.equal(ok.body?.name, 'chunked-ok');
    });

    t.test('a body of exactly 1 MiB is read (and then validated)', async (t) => {
      const base = JSON.stringify({ description: '' });
      const exact = JSON.stringify({ description: 'x'.repeat(MiB - base.length) });
      t.equal(Buffer.byteLength(exact), MiB);
      const r = await n.req('PUT', '/api/flags/target', { key: A, raw: exact, headers: json });
      expectProblem(t, r, 400, 'BAD_REQUEST', /description/);
    });
  });

  t.test('transport: wrong method 405 with Allow, unknown path 404, malformed URL 400', async (t) => {
    const org = await createOrg(n);
    const A = org.adminKey;
    must(t, await postFlag(n, A, 'target'), 201, 'create');
    const cases: [string, string, string[]][] = [
      ['PATCH', '/api/flags/target', ['GET', 'PUT', 'DELETE']],
      ['POST', '/api/flags/target', ['GET', 'PUT', 'DELETE']],
      ['DELETE', '/api/flags', ['GET', 'POST']],
      ['PUT', '/api/flags', ['GET', 'POST']],
      ['GET', '/flags/target', ['POST']],
      ['DELETE', '/flags/target', ['POST']],
      ['GET', '/api/flags/target/configs', ['POST']],
      ['PUT', '/api/flags/target/configs', ['POST']],
    ];
    for (const [method, path, allow] of cases) {
      t.test(`${method} ${path}`, async (t) => {
        await expectRejectedUnchanged(t, n, A, 'target',
          () => n.req(method, path, { key: A, body: method === 'GET' ? undefined : { isArchived: true, description: 'nope', stage: 'production', userId: 'u' } }), 405, 'METHOD_NOT_ALLOWED');
        const r = await n.req(method, path, { key: A });
        t.equal(r.status, 405);
        const got = (r.headers.get('allow') ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort();
        t.same(got, [...allow].sort(), `Allow: ${allow.join(', ')}`);
      });
    }
    t.test('/ redirects to the web UI; other methods there are 405', async (t) => {
      const r = await fetch(`${n.url}/`, { redirect: 'manual' });
      t.equal(r.status, 302);
      t.equal(r.headers.get('location'), '/ui/');
      const post = await n.req('POST', '/', { key: A, body: {} });
      expectProblem(t, post, 405, 'METHOD_NOT_ALLOWED');
      t.equal(post.headers.get('allow'), 'GET');
    });
    for (const path of ['/api/flagz', '/api/flags/target/rules', '/api/flags/target/configs/production', '/nope', '/flags', '/api']) {
      t.test(`unknown path ${path}`, async (t) => {
        expectProblem(t, await n.req('GET', path, { key: A }), 404, 'NOT_FOUND');
        expectProblem(t, await n.req('POST', path, { key: A, body: {} }), 404, 'NOT_FOUND');
        expectProblem(t, await n.req('DELETE', path, { key: A }), 404, 'NOT_FOUND');
      });
    }
    t.test('malformed percent-encoding in the flag name', async (t) => {
      expectProblem(t, await n.req('GET', '/api/flags/%E0%A4%A', { key: A }), 400, 'BAD_REQUEST');
      await expectRejectedUnchanged(t, n, A, 'target', () => n.req('DELETE', '/api/flags/%ZZ', { key: A }), 400, 'BAD_REQUEST');
    });
  });
});
