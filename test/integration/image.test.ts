// The installer image: scripts/image.sh builds it offline FROM
// scratch; podman runs it the way deploy/daemonset.yaml does (its commands,
// security settings and resource limits, read from the YAML) with a temp dir
// mounted at /host/opt/cni/bin. The installed copy must be bin/announcer byte
// for byte, and work: VERSION, and the README's stale-entry scenario chained
// after the real bridge plugin. The OCI archive must load back as the same image.
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { STOP_MS } from '../../src/protocol';
import {
  OLD_MAC,
  ANNOUNCER,
  assertCniOk,
  cniExec,
  killStrays,
  neighEntry,
  RUN_TAG,
  run,
  Scope,
  scopePerTest,
  stalePod,
  throwCleanupErrors,
  waitFor,
  tempDir,
} from './harness';
import { announcerFiles } from './harness/announcer-files';
import { privatePodman, skipPodman, type PrivatePodman } from './harness/podman';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NOTICES = join(ROOT, 'bin', 'THIRD_PARTY_NOTICES');
const PREFIX = `im${RUN_TAG}`;
const IMAGE = `localhost/cni-announcer-test:${RUN_TAG}`;
const DEST = '/host/opt/cni/bin';

interface Container {
  command: string[];
  securityContext: {
    runAsUser?: number;
    runAsGroup?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
  };
  resources: { limits: { cpu: string; memory: string } };
}

/**
 * The DaemonSet's init container, and its main container (the resident announcer) with its security context and
 * limits, without --listen (the test's container has no network).
 */
async function daemonSetContainers(): Promise<{ install: Container; main: Container }> {
  const ds = parse(await readFile(join(ROOT, 'deploy/daemonset.yaml'), 'utf8'));
  const main: Container = ds.spec.template.spec.containers[0];
  return {
    install: ds.spec.template.spec.initContainers[0],
    main: { ...main, command: main.command.filter((a) => !a.startsWith('--listen')) },
  };
}

/** `podman run` flags that apply a container's command, security context and limits as kubelet would. */
function runFlags(c: Container): string[] {
  const sc = c.securityContext;
  const flags = ['--network', 'none', '--entrypoint', JSON.stringify(c.command.slice(0, 1))];
  if (sc.runAsUser !== undefined) flags.push('--user', `${sc.runAsUser}:${sc.runAsGroup ?? sc.runAsUser}`);
  if (sc.readOnlyRootFilesystem) flags.push('--read-only');
  if (sc.allowPrivilegeEscalation === false) flags.push('--security-opt', 'no-new-privileges');
  for (const cap of sc.capabilities?.drop ?? []) flags.push('--cap-drop', cap);
  const memory = /^(\d+)Mi$/.exec(c.resources.limits.memory);
  const cpu = /^(\d+)m$/.exec(c.resources.limits.cpu);
  if (!memory || !cpu) throw new Error(`unexpected limits ${JSON.stringify(c.resources.limits)}`);
  flags.push('--memory', `${memory[1]}m`, '--memory-swap', `${memory[1]}m`, '--cpus', String(Number(cpu[1]) / 1000));
  return flags;
}

async function sha256(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

describe.skipIf(skipPodman())('the installer image, built offline FROM scratch and run with podman', () => {
  const fileScope = new Scope();
  const scope = scopePerTest();
  let podman: PrivatePodman;
  let archive: string;
  let built: string;

  beforeAll(async () => {
    const elf = (await readFile(ANNOUNCER)).subarray(0, 4);
    if (!elf.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46])))
      throw new Error(`${ANNOUNCER} is not an ELF executable: run make build`);
    await stat(NOTICES).catch(() => {
      throw new Error(`${NOTICES} is missing: run make build`);
    });
    podman = await privatePodman(fileScope);
    archive = join(podman.dir, 'image.oci.tar');
    const res = await run('bash', [join(ROOT, 'scripts/image.sh'), '--tag', IMAGE, '--archive', archive], {
      env: { ...podman.env, PODMAN: podman.command.join(' ') },
      timeoutMs: 600_000,
    });
    if (res.code !== 0) throw new Error(`scripts/image.sh exited ${res.code}: ${res.stderr.trim()}`);
    built = res.stdout;
  }, 660_000);

  afterAll(async () => {
    throwCleanupErrors(await fileScope.close());
  }, 120_000);

  it('holds the executable, its notices, and only the libraries ldd names with their copyright files', async () => {
    expect(built).toMatch(new RegExp(`^built ${IMAGE.replace(/[.:/]/g, '\\$&')} `));
    const config = JSON.parse((await podman.ok(['image', 'inspect', IMAGE])).stdout)[0];
    expect(config.Config.Entrypoint).toEqual(['/announcer']);
    expect(config.Config.Cmd).toEqual(['install', '--dest', DEST, '--also-notices']);
    // Read the image's files through a container that is created, never started (FROM scratch has no shell).
    const ctr = (await podman.ok(['create', '--network', 'none', IMAGE])).stdout.trim();
    scope().defer(() => podman.run(['rm', '-f', ctr]), `container ${ctr}`);
    const mount = (await podman.ok(['mount', ctr])).stdout.trim();
    const files = (await podman.inMountNs('find', [mount, '-not', '-type', 'd'])).stdout
      .split('\n')
      .filter(Boolean)
      .map((f) => f.slice(mount.length))
      .sort();
    const libs = files.filter((f) => f.startsWith('/lib'));
    expect(files).toEqual(
      expect.arrayContaining([
        '/announcer',
        '/THIRD_PARTY_NOTICES',
        '/lib64/ld-linux-x86-64.so.2',
        '/lib/x86_64-linux-gnu/libc.so.6',
        '/usr/share/doc/libc6/copyright',
      ]),
    );
    expect(files.filter((f) => !f.startsWith('/lib') && !f.startsWith('/usr/share/doc/'))).toEqual([
      '/THIRD_PARTY_NOTICES',
      '/announcer',
    ]);
    expect(libs.length).toBeLessThanOrEqual(10);
    await podman.ok(['umount', ctr]);
  });

  const installsByteIdenticalTitle =
    'installs a byte-identical announcer (0755) and its notices (0644), run as the image ' +
    'says and as the DaemonSet says, and leaves nothing else';
  it(installsByteIdenticalTitle, async () => {
    const dir = await tempDir(scope(), 'announcer-host-cni-bin-');
    const first = await podman.run(['run', '--rm', '--network', 'none', '-v', `${dir}:${DEST}`, IMAGE]);
    expect([first.code, first.stderr]).toEqual([0, '']);
    expect(first.stdout.split('\n').filter(Boolean)).toEqual([
      `installed ${DEST}/announcer`,
      `installed ${DEST}/THIRD_PARTY_NOTICES`,
    ]);
    expect((await readdir(dir)).sort()).toEqual(['THIRD_PARTY_NOTICES', 'announcer']);
    expect(await sha256(join(dir, 'announcer'))).toBe(await sha256(ANNOUNCER));
    expect(await sha256(join(dir, 'THIRD_PARTY_NOTICES'))).toBe(await sha256(NOTICES));
    expect((await stat(join(dir, 'announcer'))).mode & 0o7777).toBe(0o755);
    expect((await stat(join(dir, 'THIRD_PARTY_NOTICES'))).mode & 0o7777).toBe(0o644);
    const inode = (await stat(join(dir, 'announcer'))).ino;

    // Again, with the init container's command, security context, limits and stateDir: nothing to do but write the
    // node settings file, once.
    const { install } = await daemonSetContainers();
    const state = await tempDir(scope(), 'announcer-image-state-');
    const mounts = ['-v', `${dir}:${DEST}`, '-v', `${state}:/run/cni-announcer`];
    const asInit = () =>
      podman.run(['run', '--rm', ...runFlags(install), ...mounts, IMAGE, ...install.command.slice(1)]);
    const unchanged = [
      `unchanged ${DEST}/announcer (already identical)`,
      `unchanged ${DEST}/THIRD_PARTY_NOTICES (already identical)`,
    ];
    const again = await asInit();
    expect([again.code, again.stderr]).toEqual([0, '']);
    expect(again.stdout.split('\n').filter(Boolean)).toEqual([...unchanged, 'wrote /run/cni-announcer/announcer.conf']);
    const third = await asInit();
    expect([third.code, third.stderr]).toEqual([0, '']);
    expect(third.stdout.split('\n').filter(Boolean)).toEqual([
      ...unchanged,
      'unchanged /run/cni-announcer/announcer.conf (already identical)',
    ]);
    expect((await stat(join(dir, 'announcer'))).ino).toBe(inode);
    expect((await readdir(dir)).sort()).toEqual(['THIRD_PARTY_NOTICES', 'announcer']);
  });

  it('replaces an older plugin atomically (a new inode), under the DaemonSet limits', async () => {
    const dir = await tempDir(scope(), 'announcer-host-cni-bin-');
    await run('sh', ['-c', 'printf old > "$1/announcer" && chmod 0755 "$1/announcer"', 'sh', dir]);
    const before = (await stat(join(dir, 'announcer'))).ino;
    const { install } = await daemonSetContainers();
    const mount = ['-v', `${dir}:${DEST}`];
    const res = await podman.run(['run', '--rm', ...runFlags(install), ...mount, IMAGE, ...install.command.slice(1)]);
    expect([res.code, res.stderr]).toEqual([0, '']);
    expect((await stat(join(dir, 'announcer'))).ino).not.toBe(before);
    expect(await sha256(join(dir, 'announcer'))).toBe(await sha256(ANNOUNCER));
    expect((await readdir(dir)).sort()).toEqual(['THIRD_PARTY_NOTICES', 'announcer']);
  });

  it('refuses to run without /host/opt/cni/bin mounted: one line on stderr, exit 1', async () => {
    const res = await podman.run(['run', '--rm', '--network', 'none', IMAGE]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`announcer install: --dest ${DEST}: no such directory\n`);
    expect(res.stdout).toBe('');
  });

  const installedCopyAnswersTitle =
    'the installed copy answers VERSION and repairs a planted stale entry chained after the bridge plugin';
  it(installedCopyAnswersTitle, async () => {
    const s = scope();
    killStrays(s, { strict: true });
    const dir = await tempDir(s, 'announcer-host-cni-bin-');
    await podman.ok(['run', '--rm', '--network', 'none', '-v', `${dir}:${DEST}`, IMAGE]);
    const installed = join(dir, 'announcer');

    const version = await cniExec(installed, { command: 'VERSION' }, { cniVersion: '1.0.0' });
    expect(version.code, version.stderr).toBe(0);
    expect(version.json).toEqual({
      cniVersion: '1.0.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });

    const pod = await stalePod(s, { prefix: PREFIX });
    const { bridge, net, result } = pod;
    expect((await neighEntry(bridge, net.v4(5)))?.mac).toBe(OLD_MAC); // the bug, before the announcer

    const files = await announcerFiles(s);
    const config = pod.chained({ type: 'announcer', count: 1, stateDir: files.stateDir, logFile: files.logFile });
    const call = { containerId: pod.containerId, netns: pod.netns.path, ifname: 'eth0', cniPath: dir };
    s.defer(
      async () => assertCniOk('installed announcer DEL', await cniExec(installed, { ...call, command: 'DEL' }, config)),
      'installed announcer DEL',
    );
    const add = await cniExec(installed, { ...call, command: 'ADD' }, config);
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(add.json?.interfaces).toEqual(result.interfaces);
    expect(await neighEntry(bridge, net.v4(5))).toMatchObject({ mac: pod.mac });
  });

  const residentTitle =
    "the resident announcer runs with the main container's security context, and stops on SIGTERM within the " +
    'grace period, exit 0';
  it(residentTitle, async () => {
    const { main } = await daemonSetContainers();
    const name = `${PREFIX}-main`;
    const state = await tempDir(scope(), 'announcer-image-state-');
    scope().defer(() => podman.run(['rm', '-f', '-t', '0', name]), `container ${name}`);
    const mount = ['-v', `${state}:/run/cni-announcer`];
    await podman.ok(['run', '-d', '--name', name, ...runFlags(main), ...mount, IMAGE, ...main.command.slice(1)]);
    const logs = async (): Promise<Record<string, unknown>[]> =>
      (await podman.ok(['logs', name])).stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
    await waitFor(async () => (await logs()).some((l) => l.msg === 'announcer started'), {
      timeoutMs: 60_000,
      what: 'the resident announcer to start',
    });
    expect(JSON.parse((await podman.ok(['inspect', name])).stdout)[0].State.Running).toBe(true);
    // podman stop sends SIGTERM, then SIGKILL after --time seconds (exit code 137 then): the DaemonSet's grace.
    const grace = parse(await readFile(join(ROOT, 'deploy/daemonset.yaml'), 'utf8')).spec.template.spec
      .terminationGracePeriodSeconds as number;
    await podman.ok(['stop', '--time', String(grace), name]);
    const stopped = JSON.parse((await podman.ok(['inspect', name])).stdout)[0].State;
    expect([stopped.Status, stopped.ExitCode]).toEqual(['exited', 0]);
    const last = (await logs()).at(-1)!;
    expect(last).toMatchObject({ msg: 'announcer stopped', stopMs: expect.any(Number) });
    expect(last.stopMs as number).toBeLessThanOrEqual(STOP_MS);
  }, 120_000);

  it('the OCI archive loads back, in another store, as the same image', async () => {
    const other = await privatePodman(scope());
    const loaded = await other.ok(['load', '--quiet', '--input', archive]);
    expect(loaded.stdout).toContain(IMAGE.split(':')[0]);
    const id = async (p: PrivatePodman): Promise<string> =>
      (await p.ok(['image', 'inspect', '--format', '{{.Id}}', IMAGE])).stdout.trim();
    expect(await id(other)).toBe(await id(podman));
  });
});
