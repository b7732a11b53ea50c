// A real Kubernetes runtime for tests: a private containerd 1.6 (Debian's),
// driven through its CRI plugin as the kubelet drives it. Its config file,
// root, state, sockets, runc root and CNI directories all live in one temp
// dir; it never uses /run/containerd or /var/lib/containerd.
//
// containerd and its shims also write where no option reaches: the shims'
// sockets in /run/containerd/s (a path built into 1.6), libcni's result cache
// in /var/lib/cni. So containerd runs in a private mount namespace (unshare,
// private propagation) with fresh tmpfs on /run, /var/lib and /var/tmp, like
// podman in podman.ts; its netns mounts (netns_mounts_under_state_dir) stay in
// that namespace too, and the pod's netns is reached as /proc/PID/ns/net. The
// network namespace is the host's: bridges, veths and neighbour entries are
// the real ones. Shims daemonize (init adopts them), so they are found by the
// socket address in their argv and ended by pid.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, closeSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { missingTool, skipUnless } from '../../support/skip';
import { RUN_TAG_ENV } from './cni';
import { containerdConfig, containerdPaths, type ContainerdPaths, type HandlerNetwork } from './containerd-config';
import { criClient, type CriClient } from './cri-client';
import { childEnv, runOk } from './exec';
import { RUN_TAG } from './names';
import { canRunIntegration } from './privileges';
import { descendantsOf, pidsWithArgv, signalAndWait } from './proc-tree';
import type { Scope } from './scope';
import { waitFor } from './wait';

/** Mounted in containerd's private mount namespace before it starts. */
const MOUNT_NS_SETUP = [
  'mount -t tmpfs -o mode=0755 tmpfs /run',
  'mount -t tmpfs -o mode=0755 tmpfs /var/lib',
  'mount -t tmpfs -o mode=1777 tmpfs /var/tmp',
].join(' && ');

/**
 * Why the containerd tests cannot run here (root, containerd, ctr, runc, the runc shim, unshare, busybox-static), or
 * undefined.
 */
export function containerdUnavailable(): string | undefined {
  const priv = canRunIntegration();
  if (!priv.ok) return priv.why;
  const tools = ['containerd', 'ctr', 'runc', 'containerd-shim-runc-v2', 'unshare', 'setpriv', 'nsenter', 'busybox'];
  return missingTool(tools, 'scripts/ensure-system-deps.sh installs containerd, runc and busybox-static', childEnv());
}

/**
 * For `describe.skipIf(skipContainerd())`: true when containerd cannot run here, after printing why (once per file);
 * never under CI.
 */
export function skipContainerd(): boolean {
  return skipUnless('containerd, runc, busybox-static and root', containerdUnavailable());
}

/** A running private containerd. */
export interface PrivateContainerd extends ContainerdPaths {
  pid: number;
  cri: CriClient;
  /** Runs `ctr --address SOCKET -n k8s.io args…`; rejects unless it exits 0. */
  ctr(args: readonly string[]): Promise<string>;
  /** Live containerd-shim-runc-v2 processes of this containerd (by `-address SOCKET` in their argv). */
  shims(): Promise<number[]>;
  /** nsfs mounts (pod netns) under `dir` in containerd's mount namespace. */
  netnsMounts(): Promise<string[]>;
  /** Files in containerd's netns dir (`<state>/io.containerd.grpc.v1.cri/netns`). */
  netnsFiles(): Promise<string[]>;
  /**
   * The cgroup parent for the pods (`/announcer-cri-<hex>`, in every
   * hierarchy): runc removes a sandbox's own cgroup, not its parent, so this
   * one is removed at scope close. Without one, containerd would use `/k8s.io`.
   */
  cgroupParent: string;
  /** The cgroups left under cgroupParent, as `<hierarchy>/<name>`. */
  cgroups(): Promise<string[]>;
}

/**
 * What to start: the temp dir (made by the caller), the networks, the sandbox image's name and archive, the plugins.
 */
export interface ContainerdOptions {
  dir: string;
  networks: readonly HandlerNetwork[];
  sandboxImage: { name: string; archive: string };
  /** CNI plugins: name in bin_dir → file it links to. */
  plugins: Record<string, string>;
}

/** The nsfs mount points under `dir` that /proc/PID/mountinfo lists (empty once the process is gone). */
async function nsfsMountsOf(pid: number, dir: string): Promise<string[]> {
  const text = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((line) => line.split(' - '))
    .filter(([, right]) => right?.startsWith('nsfs '))
    .map(([left]) => left!.split(' ')[4]!)
    .filter((mountPoint) => mountPoint.startsWith(`${dir}/`));
}

async function writeFiles(p: ContainerdPaths, opts: ContainerdOptions): Promise<string> {
  await mkdir(p.cniBinDir);
  for (const [name, target] of Object.entries(opts.plugins)) await runOk('ln', ['-s', target, join(p.cniBinDir, name)]);
  for (const n of opts.networks) {
    await mkdir(p.confDir(n.handler));
    await writeFile(join(p.confDir(n.handler), `10-${n.conflist.name}.conflist`), JSON.stringify(n.conflist, null, 2));
  }
  const config = join(p.dir, 'config.toml');
  await writeFile(
    config,
    containerdConfig(
      p,
      opts.sandboxImage.name,
      opts.networks.map((n) => n.handler),
    ),
  );
  return config;
}

/**
 * Spawns containerd in its private mount namespace and waits until its CRI
 * answers. At scope close: containerd gets SIGTERM, SIGKILL after 10 s.
 */
async function spawnContainerd(
  scope: Scope,
  p: ContainerdPaths,
  config: string,
): Promise<{ pid: number; cri: CriClient }> {
  const logFile = join(p.dir, 'containerd.log');
  const logFd = openSync(logFile, 'a');
  // --pdeathsig: should the test process die before its cleanup, containerd goes with it.
  const script = `${MOUNT_NS_SETUP} && exec containerd --config "$1"`;
  const argv = ['--mount', '--propagation', 'private', '--', 'setpriv', '--pdeathsig', 'KILL', '--'];
  argv.push('sh', '-c', script, 'sh', config);
  const child = spawn('unshare', argv, {
    env: childEnv({ [RUN_TAG_ENV]: RUN_TAG }, false),
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  scope.defer(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    if (!(await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]))) {
      child.kill('SIGKILL');
      await exited;
    }
  }, `containerd ${child.pid}`);
  const cri = criClient(p.socket);
  scope.defer(() => cri.close(), 'CRI client');
  const early = exited.then(async () => {
    throw new Error(`containerd exited early: ${(await readFile(logFile, 'utf8').catch(() => '')).slice(-2000)}`);
  });
  const ready = waitFor(async () => (await cri.version().catch(() => false)) && true, {
    timeoutMs: 30_000,
    what: `containerd's CRI on ${p.socket}`,
  });
  await Promise.race([ready, early]);
  return { pid: child.pid!, cri };
}

/** Stops and removes every sandbox through CRI, so that every DEL runs; rejects with every failure. */
async function removeAllSandboxes(cri: CriClient): Promise<void> {
  const errors: string[] = [];
  for (const sandbox of await cri.listPodSandbox()) {
    await cri.stopPodSandbox(sandbox.id).catch((e: Error) => errors.push(e.message));
    await cri.removePodSandbox(sandbox.id).catch((e: Error) => errors.push(e.message));
  }
  if (errors.length > 0) throw new Error(errors.join('; '));
}

/**
 * Starts containerd with the files of `opts`, waits for its CRI, imports the
 * sandbox image and waits until CRI knows it. At scope close: every sandbox
 * is stopped and removed through CRI, containerd is stopped, its shims and
 * their children get SIGKILL, and the pods' cgroup parent is removed.
 */
export async function privateContainerd(scope: Scope, opts: ContainerdOptions): Promise<PrivateContainerd> {
  const p = containerdPaths(opts.dir);
  const config = await writeFiles(p, opts);
  const cgroupParent = `/announcer-cri-${randomBytes(3).toString('hex')}`;
  scope.defer(() => removeCgroups(cgroupParent), `cgroup ${cgroupParent}`);
  const shims = async (): Promise<number[]> =>
    pidsWithArgv((argv) => /containerd-shim/.test(argv[0] ?? '') && argv.includes(p.socket));
  scope.defer(async () => {
    const pids = await shims();
    await signalAndWait([...(await descendantsOf(pids)), ...pids], 'SIGKILL', 5000);
  }, 'containerd shims');
  const { pid, cri } = await spawnContainerd(scope, p, config);
  scope.defer(() => removeAllSandboxes(cri), 'remove every pod sandbox');

  const ctr = async (args: readonly string[]): Promise<string> =>
    (await runOk('ctr', ['--address', p.socket, '-n', 'k8s.io', ...args])).stdout;
  await ctr(['images', 'import', '--snapshotter', 'native', opts.sandboxImage.archive]);
  // CRI learns of the image from containerd's event stream, a moment later.
  await waitFor(() => cri.imageId(opts.sandboxImage.name), { what: `CRI to know ${opts.sandboxImage.name}` });
  const netnsDir = join(p.state, 'io.containerd.grpc.v1.cri', 'netns');
  return {
    ...p,
    pid,
    cri,
    ctr,
    shims,
    netnsMounts: () => nsfsMountsOf(pid, p.dir),
    netnsFiles: () => entriesOf(netnsDir),
    cgroupParent,
    cgroups: () => cgroupsUnder(cgroupParent),
  };
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * `<hierarchy>/<child>` for each cgroup directly under `parent` (or `parent` itself with `self`) in every hierarchy.
 */
async function cgroupsUnder(parent: string, self = false): Promise<string[]> {
  const found: string[] = [];
  for (const hierarchy of await entriesOf(CGROUP_ROOT)) {
    const dir = join(CGROUP_ROOT, hierarchy, parent);
    const children = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      // Not created there, or a file of cgroup v2's root.
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
      throw err;
    });
    if (self && children.length > 0) found.push(join(hierarchy, parent));
    found.push(...children.filter((c) => c.isDirectory()).map((c) => join(hierarchy, parent, c.name)));
  }
  return found;
}

/** Removes the (process-free) cgroups under `parent` and `parent` itself, in every hierarchy. */
async function removeCgroups(parent: string): Promise<void> {
  const all = await cgroupsUnder(parent, true);
  const deepestFirst = all.sort((a, b) => b.length - a.length);
  for (const cgroup of deepestFirst) await rmdir(join(CGROUP_ROOT, cgroup));
}

/** The entries of `dir`; none when it does not exist (any other error rejects). */
async function entriesOf(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
