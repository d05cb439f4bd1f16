/**
 * Snapshot build benchmark: how long `buildSnapshot` (dist/src/engine) takes for N flags and
 * how much memory the finished snapshot holds. Run with --expose-gc, alone in its process:
 *
 *   node --expose-gc dist/bench/snapshot-build.js [--flags 100000] [--runs 3]
 *
 * The input is what the snapshot registry passes at start-up: one `Flag` per flag and a
 * Map<name, FlagConfig[]>, built here as the storage layer builds them from rows (fresh objects and
 * strings for every flag, no sharing). Each flag is the benchmark flag of bench/seed.ts: boolean,
 * variants on/off, environments development+production, one `production` configuration with one
 * rule (country == "NL" → 100 % on).
 *
 * Timing: `runs` builds from the same input; the first is cold (the engine's code not yet
 * optimised, as at a service start), the others warm.
 * Memory (heapUsed after two forced GCs, and RSS):
 *   before     nothing allocated
 *   input      the Flag/FlagConfig objects and the arrays/Map holding them
 *   snapshot   the snapshot alone, referenced, after the input arrays/Map were dropped; the Flag and
 *              FlagConfig objects stay alive because the snapshot references them, as in the service
 * Prints one JSON line (SnapshotBuildResult) on stdout.
 */
import { pathToFileURL } from 'node:url';
import type { Flag, FlagConfig, Organization } from '../src/domain/types.js';
import { buildSnapshot, type OrgSnapshot } from '../src/engine/index.js';

export interface SnapshotBuildResult {
  flags: number;
  /** Wall time of each build; `cpu*` is this process's CPU time over the same builds (wall ≫ CPU: the machine was busy). */
  buildMs: { cold: number; warm: number[]; warmMedian: number | null; coldCpu: number; warmCpu: number[] };
  heapMiB: { before: number; withInput: number; input: number; withSnapshot: number; snapshot: number };
  rssMiB: { before: number; withInput: number; withSnapshot: number; snapshot: number };
  /** Flags in the snapshot (sanity check). */
  snapshotFlags: number;
  node: string;
}

const MiB = 1024 * 1024;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error('run with node --expose-gc');
  g();
  g();
}

const mem = (): { heap: number; rss: number } => {
  const m = process.memoryUsage();
  return { heap: m.heapUsed / MiB, rss: m.rss / MiB };
};

/** The one organization of the synthetic snapshots (also bench/snapshot-memory.ts). */
export function syntheticOrg(): Organization {
  return {
    id: '00000000-0000-4000-8000-000000000000',
    name: 'default',
    subscriptionActive: true,
    environments: ['development', 'production'],
    applications: ['default'],
    killSwitch: [],
    version: 2,
  };
}

/** Flag `bench-flag-${i}`: boolean, one production configuration with one rule. */
export function syntheticFlag(i: number, stamp: string): { flag: Flag; configs: FlagConfig[] } {
  return {
    flag: {
      name: `bench-flag-${i}`,
      project: 'default',
      type: 'boolean',
      description: 'benchmark flag',
      tags: ['bench'],
      isArchived: false,
      variants: [
        { key: 'on', value: true, valueType: 'boolean' },
        { key: 'off', value: false, valueType: 'boolean' },
      ],
      environments: ['development', 'production'],
      dependencies: [],
      createdAt: stamp,
      updatedAt: stamp,
    },
    configs: [
      {
        stage: 'production',
        clientId: null,
        enabled: true,
        defaultVariantKey: 'off',
        rolloutPercentage: 100,
        rules: [
          {
            id: `r_bench${i}`,
            priority: 1,
            conditions: [{ field: 'country', operator: '==', value: 'NL' }],
            allocations: [{ variantKey: 'on', percentage: 100 }],
          },
        ],
        activeFrom: null,
        activeUntil: null,
        enrollmentCutoff: null,
      },
    ],
  };
}

/** `buildSnapshot`'s input for `n` synthetic flags (`syntheticFlag`) of `syntheticOrg` (also bench/insights-engine.ts). */
export function syntheticInput(n: number): { org: Organization; flags: Flag[]; configs: Map<string, FlagConfig[]> } {
  const flags: Flag[] = new Array(n);
  const configs = new Map<string, FlagConfig[]>();
  const t = Date.now();
  for (let i = 0; i < n; i++) {
    // Fresh strings per row, as a database driver returns them.
    const f = syntheticFlag(i, new Date(t + i).toISOString());
    flags[i] = f.flag;
    configs.set(f.flag.name, f.configs);
  }
  return { org: syntheticOrg(), flags, configs };
}

export function run(n: number, runs: number): SnapshotBuildResult {
  gc();
  const before = mem();
  let input: ReturnType<typeof syntheticInput> | undefined = syntheticInput(n);
  gc();
  const withInput = mem();

  const times: number[] = [];
  const cpu: number[] = [];
  let snap: OrgSnapshot | undefined;
  for (let r = 0; r < Math.max(1, runs); r++) {
    snap = undefined;
    if (r > 0) gc(); // each build starts from the same heap state, without the previous snapshot
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    snap = buildSnapshot(input.org, input.flags, input.configs);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  // Keep the last snapshot, drop what only the input held (its arrays and Map).
  const kept = snap!;
  input = undefined;
  gc();
  const withSnapshot = mem();
  const warm = times.slice(1).sort((a, b) => a - b);
  const result: SnapshotBuildResult = {
    flags: n,
    buildMs: {
      cold: times[0],
      warm: times.slice(1),
      warmMedian: warm.length === 0 ? null : warm[Math.floor((warm.length - 1) / 2)],
      coldCpu: cpu[0],
      warmCpu: cpu.slice(1),
    },
    heapMiB: {
      before: before.heap,
      withInput: withInput.heap,
      input: withInput.heap - before.heap,
      withSnapshot: withSnapshot.heap,
      snapshot: withSnapshot.heap - before.heap,
    },
    rssMiB: { before: before.rss, withInput: withInput.rss, withSnapshot: withSnapshot.rss, snapshot: withSnapshot.rss - before.rss },
    snapshotFlags: kept.flags.size,
    node: process.version,
  };
  return result;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const args = process.argv.slice(2);
    const get = (name: string, dflt: string): string => {
      const i = args.indexOf(name);
      return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
    };
    const n = Number(get('--flags', '100000'));
    const runs = Number(get('--runs', '3'));
    if (!Number.isInteger(n) || n < 1 || !Number.isInteger(runs) || runs < 1) throw new Error('--flags and --runs need integers >= 1');
    process.stdout.write(`${JSON.stringify(run(n, runs))}\n`);
    process.exit(0);
  } catch (err) {
    process.stderr.write(`snapshot-build: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
