/**
 * `VEXIL_BENCH_IMAGE=<image> npm run bench -- <scenario>`: the scenario's service runs in a
 * container of that image instead of as `node dist/src/main.js` (docs/deploy.md, "Measured in the
 * container"). The container is what an SRE runs: the runtime's default capabilities (no
 * CAP_SYS_NICE), the image's user, its embedded-database volume; `--network=host` so that the
 * harness reaches it on the port it chose, and `--cpuset-cpus` for the harness's pinning.
 *
 * Podman (`VEXIL_BENCH_PODMAN`, default `podman --runtime runc --cgroup-manager=cgroupfs`) or
 * Docker (`VEXIL_BENCH_PODMAN=docker`).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export const benchImage = (): string | undefined => process.env.VEXIL_BENCH_IMAGE || undefined;

const runtime = (): string[] => (process.env.VEXIL_BENCH_PODMAN ?? 'podman --runtime runc --cgroup-manager=cgroupfs').split(' ').filter((s) => s !== '');

/** Settings handed into the container (the image's own VEXIL_DATA_DIR is kept: its volume). */
const PASSED = /^(HOST|PORT|DATABASE_URL|NATS_URL|NODE_ENV|VEXIL_(?!BENCH_|DATA_DIR$)[A-Z0-9_]+)$/;

export interface ContainerRun {
  name: string;
  command: [string, ...string[]];
}

/** The `podman run` command line for `image` with the settings of `env`, pinned to `cpus`. */
export function containerCommand(image: string, env: NodeJS.ProcessEnv, cpus: string | undefined): ContainerRun {
  const name = `vexil-bench-${randomBytes(4).toString('hex')}`;
  const [cmd, ...pre] = runtime();
  const args = [...pre, 'run', '--rm', '--name', name, '--network=host', ...(cpus === undefined ? [] : [`--cpuset-cpus=${cpus}`])];
  for (const [k, v] of Object.entries(env)) if (v !== undefined && PASSED.test(k)) args.push('-e', `${k}=${v}`);
  args.push(image);
  return { name, command: [cmd, ...args] };
}

/** The host pid of the container's main process (the node), or undefined. */
export function containerPid(name: string): number | undefined {
  const [cmd, ...pre] = runtime();
  const r = spawnSync(cmd, [...pre, 'inspect', '--format', '{{.State.Pid}}', name], { encoding: 'utf8' });
  const pid = Number(r.stdout?.trim());
  return r.status === 0 && pid > 0 ? pid : undefined;
}

/** Removes the container if it is still there (after its podman process was stopped). */
export function removeContainer(name: string): void {
  const [cmd, ...pre] = runtime();
  spawnSync(cmd, [...pre, 'rm', '-f', '-t', '5', name], { stdio: 'ignore' });
}
