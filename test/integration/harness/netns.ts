// Named network namespaces (`ip netns`), created per test and removed with
// whatever still runs inside them.
import { run, runOk } from './exec';
import { uniqueName } from './names';
import type { Scope } from './scope';

/** A named netns: `name` for `ip -n`/`ip netns exec`, `path` for CNI_NETNS. */
export interface Netns {
  name: string;
  path: string;
}

/** The CNI_NETNS path of a named netns. */
export function netnsPath(name: string): string {
  return `/var/run/netns/${name}`;
}

/** Names of all named network namespaces. */
export async function listNetns(): Promise<string[]> {
  const { stdout } = await runOk('ip', ['-j', 'netns', 'list']);
  if (stdout.trim() === '') return [];
  return (JSON.parse(stdout) as { name: string }[]).map((n) => n.name);
}

/** Pids of the processes whose network namespace is `name`. */
export async function netnsPids(name: string): Promise<number[]> {
  const { stdout } = await run('ip', ['netns', 'pids', name]);
  return stdout
    .split(/\s+/)
    .filter((s) => /^\d+$/.test(s))
    .map(Number);
}

/** Kills (SIGKILL) every process inside `name`, then deletes it; a netns already gone is fine. */
export async function deleteNetns(name: string): Promise<void> {
  for (const pid of await netnsPids(name)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  const res = await run('ip', ['netns', 'del', name]);
  if (res.code !== 0 && !/No such file/.test(res.stderr)) {
    throw new Error(`ip netns del ${name}: ${res.stderr.trim()}`);
  }
}

/**
 * Creates netns `<prefix><random>` with lo up; at scope close the processes
 * still inside are killed and the netns is deleted.
 */
export async function createNetns(scope: Scope, prefix = 'hns'): Promise<Netns> {
  const name = uniqueName(prefix);
  await runOk('ip', ['netns', 'add', name]);
  scope.defer(() => deleteNetns(name), `netns ${name}`);
  await runOk('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  return { name, path: netnsPath(name) };
}
