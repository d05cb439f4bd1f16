/**
 * The deployment files, read as their tools read them (docs/deploy.md; issue 32): compose.yaml
 * (no image of PostgreSQL or NATS can be pulled here, and Debian's podman-compose has no `config`
 * subcommand, so its structure is checked), docs/k8s/vexil.yaml, the Dockerfile and the env file
 * example. No container runtime needed: this file always runs, in about a second.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { projectRoot } from '../../../src/util/paths.js';

const ROOT = projectRoot();
const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');
/** Every setting src/config.ts reads. */
const SETTINGS = new Set([...read('src/config.ts').matchAll(/^\s{2}([A-Z][A-Z0-9_]+): /gm)].map((m) => m[1]));
const IMAGE_GRACE_MS = Number(/VEXIL_SHUTDOWN_GRACE_MS=(\d+)/.exec(read('Dockerfile'))?.[1]);
const seconds = (s: string | number): number => (typeof s === 'number' ? s : Number(/^(\d+)s$/.exec(s)?.[1] ?? NaN));

t.test('compose.yaml: three nodes, PostgreSQL, NATS JetStream; health checks; waits on health; secrets from .env', async (t) => {
  const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, any>; volumes: Record<string, unknown> };
  const services = compose.services;
  t.same(Object.keys(services).sort(), ['nats', 'postgres', 'vexil-1', 'vexil-2', 'vexil-3'], 'the services');
  for (const [name, s] of Object.entries(services)) {
    t.ok(Array.isArray(s.healthcheck?.test) && s.healthcheck.test[0] === 'CMD' && s.healthcheck.test.length > 1, `${name}: a health check`);
    // podman-compose 1.0.3 joins them into a shell command line without quoting them right.
    t.notOk(s.healthcheck?.test.some((a: string) => /['"\s\\$`]/.test(a)), `${name}: no quote, space or shell character in the health check's arguments`);
    t.ok(s.image, `${name}: an image`);
  }
  t.match(services.postgres.image, /postgres:/, 'PostgreSQL');
  t.same(services.postgres.healthcheck.test.slice(0, 2), ['CMD', 'pg_isready'], 'PostgreSQL healthy when pg_isready says so');
  t.match(services.nats.image, /nats:/, 'NATS');
  t.ok(services.nats.command.includes('-js'), 'NATS with JetStream');
  t.match(services.nats.healthcheck.test.join(' '), /healthz\?js-enabled-only=true/, 'NATS healthy once JetStream is');

  const nodes = ['vexil-1', 'vexil-2', 'vexil-3'].map((n) => [n, services[n]] as const);
  const ports = new Set<string>();
  const ids = new Set<string>();
  for (const [name, s] of nodes) {
    t.equal(s.build, '.', `${name}: built from the Dockerfile`);
    t.same(s.depends_on, { postgres: { condition: 'service_healthy' }, nats: { condition: 'service_healthy' } }, `${name}: waits for healthy PostgreSQL and NATS`);
    t.same(s.healthcheck.test, ['CMD', 'node', '/app/healthcheck.mjs'], `${name}: healthy when /readyz is 200 (the image's check)`);
    t.equal(s.env_file, '.env', `${name}: settings from the uncommitted .env`);
    const env = s.environment as Record<string, string>;
    t.match(env.DATABASE_URL, /^postgres:\/\/vexil:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/vexil$/, `${name}: the compose PostgreSQL, its password from .env`);
    t.equal(env.NATS_URL, 'nats://nats:4222', `${name}: the compose NATS`);
    t.match(env.VEXIL_CLUSTER_SECRET, /^\$\{VEXIL_CLUSTER_SECRET:\?/, `${name}: the cluster secret required from .env`);
    t.match(env.VEXIL_BOOTSTRAP_ADMIN_KEY, /^\$\{VEXIL_BOOTSTRAP_ADMIN_KEY:\?/, `${name}: the bootstrap key required from .env`);
    for (const k of Object.keys(env)) if (k.startsWith('VEXIL_') || k === 'DATABASE_URL' || k === 'NATS_URL') t.ok(SETTINGS.has(k), `${name}: ${k} is a setting of src/config.ts`);
    t.equal(env.VEXIL_FRONT_THREADS, String(s.cpus), `${name}: front threads = the CPU limit`);
    t.ok(seconds(s.stop_grace_period) * 1000 > IMAGE_GRACE_MS, `${name}: stop grace ${s.stop_grace_period} > VEXIL_SHUTDOWN_GRACE_MS ${IMAGE_GRACE_MS} ms`);
    ports.add(s.ports[0]);
    ids.add(env.VEXIL_NODE_ID);
  }
  t.equal(ports.size, 3, 'each node its own host port');
  t.equal(ids.size, 3, 'each node its own id');
  t.ok(compose.volumes.pgdata !== undefined && compose.volumes.natsdata !== undefined, 'PostgreSQL and JetStream keep their data in volumes');

  // No secret in the committed files; the example names them, empty.
  const example = read('.env.example');
  for (const k of ['VEXIL_BOOTSTRAP_ADMIN_KEY', 'VEXIL_OPERATOR_TOKEN', 'VEXIL_CLUSTER_SECRET', 'POSTGRES_PASSWORD']) {
    t.match(example, new RegExp(`^${k}=$`, 'm'), `.env.example names ${k}, empty`);
  }
  t.notMatch(read('compose.yaml'), /[0-9a-f]{32}/, 'compose.yaml holds no secret');
  t.match(read('.gitignore'), /^\.env$/m, '.env is never committed');
  t.match(read('.dockerignore'), /^\.env$/m, '.env never enters the build context');
});

t.test('docs/k8s/vexil.yaml: a Deployment and a Service, probes on /readyz and /healthz', async (t) => {
  const docs = parseAllDocuments(read('docs/k8s/vexil.yaml'));
  for (const d of docs) t.same(d.errors, [], 'valid YAML');
  const [deployment, service] = docs.map((d) => d.toJS()) as any[];
  t.equal(deployment.apiVersion, 'apps/v1');
  t.equal(deployment.kind, 'Deployment');
  t.equal(service.apiVersion, 'v1');
  t.equal(service.kind, 'Service');
  const pod = deployment.spec.template.spec;
  const c = pod.containers[0];
  t.same(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels, 'the Deployment selects its pods');
  t.same(service.spec.selector, deployment.spec.template.metadata.labels, 'the Service selects the pods');
  t.equal(c.readinessProbe.httpGet.path, '/readyz', 'readiness on /readyz');
  t.equal(c.livenessProbe.httpGet.path, '/healthz', 'liveness on /healthz');
  const named = c.ports.find((p: any) => p.name === c.readinessProbe.httpGet.port);
  t.equal(named?.containerPort, 8080, 'the probes use the container port the image exposes');
  t.equal(c.livenessProbe.httpGet.port, c.readinessProbe.httpGet.port, 'both probes on that port');
  t.equal(service.spec.ports[0].targetPort, 'http', 'the Service targets it');
  t.ok(pod.terminationGracePeriodSeconds * 1000 > IMAGE_GRACE_MS, 'termination grace longer than the node’s shutdown grace');
  t.equal(pod.securityContext.runAsNonRoot, true, 'non-root');
  t.same(c.securityContext.capabilities.drop, ['ALL'], 'no capability needed (not even CAP_SYS_NICE)');
  t.equal(c.resources.limits.cpu, c.env.find((e: any) => e.name === 'VEXIL_FRONT_THREADS').value, 'front threads = the CPU limit');
  for (const e of c.env) t.ok(SETTINGS.has(e.name), `${e.name} is a setting of src/config.ts`);
});

t.test('Dockerfile: official trixie-slim base, multi-stage, non-root, EXPOSE, HEALTHCHECK, data volume', async (t) => {
  const df = read('Dockerfile');
  t.match(df, /^ARG NODE_IMAGE=docker\.io\/library\/node:(22|24)-trixie-slim$/m, 'an official Node.js LTS image on Debian 13 (glibc 2.41: the native front)');
  t.equal([...df.matchAll(/^FROM /gm)].length, 2, 'two stages');
  t.match(df, /^FROM \$\{NODE_IMAGE\} AS build$/m, 'a build stage');
  const final = df.slice(df.lastIndexOf('\nFROM '));
  t.match(final, /^USER node$/m, 'the final stage runs as node');
  t.match(final, /^EXPOSE 8080$/m, 'EXPOSE 8080');
  t.match(final, /^HEALTHCHECK .*CMD \["node", "\/app\/healthcheck\.mjs"\]$/m, 'HEALTHCHECK runs scripts/healthcheck.mjs');
  t.match(df, /cp -a [^\n]*scripts\/healthcheck\.mjs \/out\//, 'which the image holds at /app/healthcheck.mjs');
  t.match(read('scripts/healthcheck.mjs'), /\/readyz`/, 'the check asks /readyz');
  t.match(read('scripts/healthcheck.mjs'), /r\.status === 200 \? 0 : 1/, 'and passes on 200 only');
  t.match(final, /VEXIL_DATA_DIR=\/data/, 'VEXIL_DATA_DIR=/data');
  t.match(final, /^VOLUME \/data$/m, 'a volume at /data');
  t.notMatch(final, /npm (ci|install)|apt-get/, 'the final stage installs nothing');
  t.notMatch(df, /NODE_EXTRA_CA_CERTS|_proxy|PROXY/, 'nothing of this machine (CA bundle, proxies) in the Dockerfile');
  t.match(df, /^CMD \["node", "dist\/src\/main\.js"\]$/m, 'node is PID 1 (exec form) and gets SIGTERM');
});
