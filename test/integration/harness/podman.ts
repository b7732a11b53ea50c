// A real runtime for tests: podman 4.3 (Debian 12) with its CNI backend,
// configured only through private files, with every file it writes kept off
// the host. On this host: `runtime = "runc"` (crun fails on its hybrid
// cgroups) and small `default_ulimits` (raising RLIMIT_NOFILE or RLIMIT_NPROC
// is not permitted here).
//
// podman writes outside its configured directories: the image blob-info cache
// in /var/lib/containers/cache (on build, import, save, load), libcni's result
// cache in /var/lib/cni, runc's state in /run/runc, netns mounts in /run/netns,
// temporary files in /var/tmp. So every podman command runs (through nsenter)
// in one private mount namespace, held open by a `sleep` we start, where /run,
// /var/lib and /var/tmp are fresh tmpfs mounts: all of that lands there and is
// gone when the namespace ends. The network namespace is the host's, so the
// bridge, the veths and the node's neighbour entries are the real ones.
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { skipUnless } from '../../support/skip';
import { RUN_TAG_ENV } from './cni';
import { childEnv, run, type RunOptions, type RunResult } from './exec';
import { RUN_TAG } from './names';
import { canRunIntegration } from './privileges';
import type { Scope } from './scope';
import { tempDir } from './announcer-files';

/** Where busybox-static puts its one binary. */
export const BUSYBOX = '/bin/busybox';

const MOUNT_NS_SETUP = [
  'mount -t tmpfs -o mode=0755 tmpfs /run',
  'mount -t tmpfs -o mode=0755 tmpfs /var/lib',
  'mount -t tmpfs -o mode=1777 tmpfs /var/tmp',
  'echo ready',
  // Bounded, so that a test process killed before its cleanup leaves nothing for long.
  'exec sleep 3600',
].join(' && ');

/**
 * Why the podman tests cannot run here, or undefined when they can: root with
 * CAP_NET_ADMIN, and podman, runc, conmon, unshare and nsenter installed.
 */
export function podmanUnavailable(): string | undefined {
  const priv = canRunIntegration();
  if (!priv.ok) return priv.why;
  for (const tool of ['podman', 'runc', 'conmon', 'unshare', 'nsenter']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/libexec/podman/${tool}`], {
      env: childEnv(),
    });
    if (found.status !== 0)
      return `${tool} is not installed (scripts/ensure-system-deps.sh installs podman, runc and conmon)`;
  }
  return undefined;
}

/**
 * For `describe.skipIf(skipPodman())`: true when podman cannot run here, after
 * printing why (once per file). Under CI (CI=true) it never skips, so a
 * missing piece fails loudly.
 */
export function skipPodman(): boolean {
  return skipUnless('podman, runc, conmon and root', podmanUnavailable());
}

/** A podman whose configuration, storage and CNI directories all live in one temp dir. */
export interface PrivatePodman {
  /** The temp dir holding everything. */
  dir: string;
  /** cni_plugin_dirs: the plugins podman may run (see addPlugin). */
  cniBinDir: string;
  /** network_config_dir: one conflist per network (see addNetwork). */
  netConfDir: string;
  /** The argv prefix that runs podman in the private mount namespace (e.g. for scripts/image.sh's PODMAN). */
  command: string[];
  /** CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, and the run tag (plugins inherit it through podman). */
  env: Record<string, string>;
  /** Runs `podman args…` there; resolves whatever its status. */
  run(args: readonly string[], opts?: Omit<RunOptions, 'env' | 'netns'>): Promise<RunResult>;
  /** Like run, but rejects with the command line and stderr unless it exits 0. */
  ok(args: readonly string[], opts?: Omit<RunOptions, 'env' | 'netns'>): Promise<RunResult>;
  /** Runs a command (not podman) in the private mount namespace, e.g. `ls /run/netns`. */
  inMountNs(cmd: string, args: readonly string[]): Promise<RunResult>;
  /** Makes `target` available to podman as plugin `name`. */
  addPlugin(name: string, target: string): Promise<void>;
  /** Writes a conflist (its `name` is the network's) into the config dir. */
  addNetwork(conflist: { name: string; [k: string]: unknown }): Promise<void>;
}

/**
 * Starts a private podman: containers.conf (CNI backend, runc, cgroupfs, small
 * ulimits, no events), storage.conf (overlay under the temp dir), and the
 * mount namespace holder. At scope close: every container is removed
 * (`rm -a -f -t 0`, so DEL runs), the holder is killed (its mounts go with
 * it) and the temp dir is removed.
 */
export async function privatePodman(scope: Scope, prefix = 'announcer-podman-'): Promise<PrivatePodman> {
  const dir = await tempDir(scope, prefix);
  const cniBinDir = join(dir, 'cni-bin');
  const netConfDir = join(dir, 'net.d');
  for (const d of [cniBinDir, netConfDir, join(dir, 'tmp')]) await mkdir(d);
  const containersConf = join(dir, 'containers.conf');
  const storageConf = join(dir, 'storage.conf');
  await writeFile(
    containersConf,
    [
      '[containers]',
      'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]',
      'log_driver = "k8s-file"',
      '[network]',
      'network_backend = "cni"',
      `cni_plugin_dirs = [${JSON.stringify(cniBinDir)}]`,
      `network_config_dir = ${JSON.stringify(netConfDir)}`,
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "none"',
      `tmp_dir = ${JSON.stringify(join(dir, 'tmp'))}`,
      '',
    ].join('\n'),
  );
  await writeFile(
    storageConf,
    [
      '[storage]',
      'driver = "overlay"',
      `graphroot = ${JSON.stringify(join(dir, 'root'))}`,
      `runroot = ${JSON.stringify(join(dir, 'run'))}`,
      '',
    ].join('\n'),
  );
  const env = { CONTAINERS_CONF: containersConf, CONTAINERS_STORAGE_CONF: storageConf, [RUN_TAG_ENV]: RUN_TAG };

  const holder = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', MOUNT_NS_SETUP], {
    env: childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => holder.on('close', () => resolve()));
  scope.defer(async () => {
    holder.kill('SIGKILL');
    await exited;
  }, `mount namespace holder ${holder.pid}`);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    let err = '';
    holder.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready')) resolve();
    });
    holder.stderr.on('data', (b: Buffer) => (err += b.toString()));
    holder.on('error', (e) => reject(new Error(`cannot start unshare: ${e.message}`, { cause: e })));
    void exited.then(() => reject(new Error(`the mount namespace holder exited early: ${err.trim()}`)));
  });
  const nsenter = ['nsenter', `--mount=/proc/${holder.pid}/ns/mnt`, '--'];
  const command = [...nsenter, 'podman'];

  const podmanRun = (args: readonly string[], opts: Omit<RunOptions, 'env' | 'netns'> = {}): Promise<RunResult> =>
    run(command[0]!, [...command.slice(1), ...args], { timeoutMs: 120_000, ...opts, env });
  const p: PrivatePodman = {
    dir,
    cniBinDir,
    netConfDir,
    command,
    env,
    run: podmanRun,
    async ok(args, opts) {
      const res = await podmanRun(args, opts);
      if (res.code !== 0)
        throw new Error(
          `podman ${args.join(' ')} exited ${res.code}: ${(res.stderr.trim() || res.stdout.trim()).slice(0, 2000)}`,
        );
      return res;
    },
    inMountNs: (cmd, args) => run(nsenter[0]!, [...nsenter.slice(1), cmd, ...args], { env }),
    addPlugin: (name, target) => symlink(target, join(cniBinDir, name)),
    addNetwork: (conflist) =>
      writeFile(join(netConfDir, `${conflist.name}.conflist`), JSON.stringify(conflist, null, 2)),
  };
  // Registered after the holder's kill, so it runs before it: DEL for every container while podman still can.
  scope.defer(async () => {
    const res = await p.run(['rm', '--all', '--force', '--time', '0']);
    if (res.code !== 0) throw new Error(`podman rm --all: ${res.stderr.trim()}`);
  }, 'podman rm --all');
  return p;
}

/**
 * Imports a test image made offline from busybox-static: /bin/busybox and
 * links for sh, sleep, cat and ip. Resolves with its name.
 */
export async function importBusyboxImage(
  p: PrivatePodman,
  name = 'localhost/announcer-test-busybox:latest',
): Promise<string> {
  const rootfs = join(p.dir, 'busybox-rootfs');
  await mkdir(join(rootfs, 'bin'), { recursive: true });
  const res = await run('cp', [BUSYBOX, join(rootfs, 'bin', 'busybox')]);
  if (res.code !== 0) throw new Error(`cannot copy ${BUSYBOX} (busybox-static): ${res.stderr.trim()}`);
  await chmod(join(rootfs, 'bin', 'busybox'), 0o755);
  for (const applet of ['sh', 'sleep', 'cat', 'ip']) await symlink('busybox', join(rootfs, 'bin', applet));
  const tarball = join(p.dir, 'busybox.tar');
  const tar = await run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', rootfs, '-cf', tarball, '.']);
  if (tar.code !== 0) throw new Error(`tar: ${tar.stderr.trim()}`);
  await p.ok(['import', '--quiet', tarball, name]);
  return name;
}
