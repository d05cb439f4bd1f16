/**
 * The audit event and its change commit together (docs/audit.md): when the transaction fails
 * after the audit insert, or the audit insert itself fails, neither the change nor the event is
 * stored. The failures are real database errors, raised by triggers installed in the node's own
 * database: a deferred constraint trigger fails at commit, after every statement of the write,
 * and only when the write's audit event is already in the transaction. Each writing path is
 * covered: writeOrg (flags), writeOrgKeys (keys) and the operator's organization creation.
 */
import t from 'tap';
import {
  boolVariants,
  expectProblem,
  operatorRequest,
  skipWithoutPostgres,
  startTestNode,
  type TestNode,
} from '../../helpers/node.js';
import { gql } from '../../helpers/graphql.js';
import { AUDIT_ENV, readLog } from '../../helpers/audit.js';

t.setTimeout(300_000);

const env = AUDIT_ENV;

/**
 * At commit, for rows named 'doomed…': fail if the transaction already holds the audit event of
 * that target (so the failure comes after the audit insert); otherwise let the row through, which
 * the test would notice as a stored change. (A key's target name is its id.)
 */
const DOOM_AT_COMMIT = `
create function vexil_test_doom() returns trigger language plpgsql as $$
declare
  row jsonb := to_jsonb(new);
begin
  -- Other transactions' uncommitted events are invisible here, and no committed event names a
  -- doomed target: a match is this transaction's own audit insert.
  if row->>'name' like 'doomed%'
     and exists (select 1 from audit_events where target_name in (row->>'name', row->>'id')) then
    raise exception 'failing after the audit insert of %', row->>'name';
  end if;
  return new;
end $$;
create constraint trigger vexil_test_doom_flags after insert or update on flags
  deferrable initially deferred for each row execute function vexil_test_doom();
create constraint trigger vexil_test_doom_keys after insert or update on management_keys
  deferrable initially deferred for each row execute function vexil_test_doom();
create constraint trigger vexil_test_doom_orgs after insert or update on organizations
  deferrable initially deferred for each row execute function vexil_test_doom();
`;

/** The audit insert itself fails for targets named 'refused'. */
const REFUSE_AUDIT = `
create function vexil_test_refuse() returns trigger language plpgsql as $$
begin
  if new.target_name = 'refused' then raise exception 'audit insert refused'; end if;
  return new;
end $$;
create trigger vexil_test_refuse before insert on audit_events for each row execute function vexil_test_refuse();
`;

async function scenario(t: typeof import('tap').default, n: TestNode): Promise<void> {
  const A = n.adminKey;
  await n.node.db.exec(DOOM_AT_COMMIT + REFUSE_AUDIT);
  const flag = (name: string) => ({ name, project: 'default', type: 'boolean', variants: boolVariants });

  // A control write passes both triggers and records its event.
  t.equal((await n.req('POST', '/api/flags', { key: A, body: flag('fine') })).status, 201, 'an ordinary write succeeds');
  const log = await readLog(t, n, A);
  t.equal(log.length, 1, 'and records one event');

  // writeOrg: the flag insert and its event are rolled back together at commit.
  expectProblem(t, await n.req('POST', '/api/flags', { key: A, body: flag('doomed') }), 500, 'INTERNAL', 'REST create failing at commit');
  expectProblem(t, await n.req('GET', '/api/flags/doomed', { key: A }), 404, 'NOT_FOUND', 'the flag was not stored');
  const g = await gql(n, A, 'mutation { createFlag(input: {name: "doomed-too", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name } }');
  t.equal(g.body.errors?.[0]?.extensions.code, 'INTERNAL', 'GraphQL create failing at commit: INTERNAL');
  expectProblem(t, await n.req('GET', '/api/flags/doomed-too', { key: A }), 404, 'NOT_FOUND', 'nor the GraphQL one');

  // writeOrgKeys: the key insert and its event.
  expectProblem(t, await n.req('POST', '/api/keys', { key: A, body: { name: 'doomed-key', permissions: ['CanRead'] } }), 500, 'INTERNAL', 'key creation failing at commit');
  const keys = (await n.req('GET', '/api/keys', { key: A })).body as any[];
  t.same(keys.map((k) => k.name), ['admin'], 'the key was not stored');

  // auditedTransaction: the operator's organization and its event.
  expectProblem(t, await operatorRequest(n, 'POST', '/organizations', { name: 'doomed-org', environments: ['e'], applications: ['a'] }), 500, 'INTERNAL', 'organization creation failing at commit');
  const retry = await operatorRequest(n, 'POST', '/organizations', { name: 'doomed-org', environments: ['e'], applications: ['a'] });
  expectProblem(t, retry, 500, 'INTERNAL', 'no organization was left behind (a second try is not a 409)');
  const orgEvents = await n.node.db.query<{ n: number }>(`select count(*)::int as n from audit_events where target_name = 'doomed-org'`);
  t.equal(Number(orgEvents[0].n), 0, 'no event of the failed organization anywhere in the table');

  // The audit insert fails: the change is not stored either.
  expectProblem(t, await n.req('POST', '/api/flags', { key: A, body: flag('refused') }), 500, 'INTERNAL', 'the audit insert fails');
  expectProblem(t, await n.req('GET', '/api/flags/refused', { key: A }), 404, 'NOT_FOUND', 'so the flag was not stored');
  const list = (await n.req('GET', '/api/flags', { key: A })).body as any[];
  t.same(list.map((f) => f.name), ['fine'], 'only the control flag exists');

  t.same(await readLog(t, n, A), log, 'the log holds only the control write\'s event');

  // The node is healthy afterwards: the next write records as usual.
  t.equal((await n.req('PUT', '/api/flags/fine', { key: A, body: { description: 'after' } })).status, 200, 'a later write succeeds');
  t.same((await readLog(t, n, A)).map((e) => e.action), ['flag.update', 'flag.create'], 'and is recorded');
}

t.test('PGlite', async (t) => {
  await scenario(t, await startTestNode(t, { env }));
});

t.test('PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => {
  await scenario(t, await startTestNode(t, { db: 'postgres', env }));
});
