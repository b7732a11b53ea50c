// The DaemonSet's announcer (issue 20, Deliver 1), with real parts: the image
// scripts/image.sh builds offline, run with podman the way deploy/daemonset.yaml
// runs its main container (its command, user, capabilities, read-only root,
// host network and PIDs, the stateDir mounted at its own path), and the plugin
// called on the host: bin/announcer chained after the real bridge plugin.
//
// 1. An ADD on the host is served by the containerized announcer: its stdout
//    has the pod's JSON lines, `announcer status` names its pid, and the
//    pod's GARPs are on the wire.
// 2. The container stops mid-burst (its pod restarts) and hands over; an ADD
//    starts an announcer on the host, as on a bare host, which goes on with
//    that burst; the container starts again in the middle of the next burst,
//    takes over (`{"op":"handover"}`), and sends the rest. Every pod gets
//    exactly its planned GARPs, counted on the bridge.
//
// 3. A hung announcer (SIGSTOPped) fails its liveness probe: podman's health
//    check, as the kubelet, runs the yaml's probe and kills the container.
//
// The pods' CNI_NETNS are /proc/PID/ns/net paths (as containerd's ctr gives),
// read through the node's PIDs (hostPID): the harness's podman runs in a
// mount namespace of its own where /run is a fresh tmpfs, so the host's
// /run/netns cannot be shared with the container from there.
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  allocSubnet,
  ANNOUNCER,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerStatus,
  assertCniOk,
  attachBridgePod,
  bridgeWithKeeper,
  createStandInPod,
  daemonsOf,
  derivedMac,
  garpsFor,
  podPrevResult,
  RUN_TAG,
  run,
  runOk,
  Scope,
  scopePerTest,
  startCapture,
  throwCleanupErrors,
  waitFor,
  waitLogged,
  type AnnouncerAttachment,
  type BridgePod,
  tempDir,
} from './harness';
import { BUSYBOX, privatePodman, skipPodman, type PrivatePodman } from './harness/podman';

/** A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick, let go at once). */
async function freeTcpPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = `ds${RUN_TAG}`;
const IMAGE = `localhost/cni-announcer-ds-test:${RUN_TAG}`;
/** The DaemonSet's stateDir: the test mounts its own at the same path inside. */
const DS_STATE_DIR = '/run/cni-announcer';
/**
 * pod0's burst: the container is stopped after its round 2, and the rest goes on elsewhere (rounds 1.5 s apart: later
 * than LATE_GRACE_MS only if podman takes seconds).
 */
const FIRST = { count: 4, intervalMs: 1500 };
/** The burst the container takes over in the middle of. */
const BURST = { count: 8, intervalMs: 400 };

interface MainContainer {
  command: string[];
  securityContext: {
    runAsUser: number;
    runAsGroup: number;
    readOnlyRootFilesystem: boolean;
    allowPrivilegeEscalation: boolean;
    capabilities: { drop: string[]; add: string[] };
  };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean; mountPropagation?: string }[];
}

/**
 * The DaemonSet's main container, whether its pod shares the node's PIDs and network, and its volumes' host paths by
 * name.
 */
async function mainContainer(): Promise<{
  main: MainContainer;
  hostPID: boolean;
  hostNetwork: boolean;
  hostPaths: Map<string, string>;
  liveness: { path: string; timeoutSeconds: number; failureThreshold: number };
}> {
  const spec = parse(await readFile(join(ROOT, 'deploy/daemonset.yaml'), 'utf8')).spec.template.spec;
  const hostPaths = new Map<string, string>(
    spec.volumes.filter((v: any) => v.hostPath).map((v: any) => [v.name, v.hostPath.path]),
  );
  const live = spec.containers[0].livenessProbe;
  return {
    liveness: { path: live.httpGet.path, timeoutSeconds: live.timeoutSeconds, failureThreshold: live.failureThreshold },
    main: spec.containers[0],
    hostPID: spec.hostPID === true,
    hostNetwork: spec.hostNetwork === true,
    hostPaths,
  };
}

/** The DaemonSet as the tests read it. */
type DaemonSet = Awaited<ReturnType<typeof mainContainer>>;

/** How a test's main container differs from the yaml's. */
interface ContainerHow {
  run?: boolean;
  flags?: string[];
  command?: string[];
}

/**
 * `-v` flags for the main container's netns mounts as the yaml has them (HostToContainer is rslave), or with
 * `propagation` instead.
 */
function netnsMountFlags(ds: DaemonSet, propagation?: string): string[] {
  return ds.main.volumeMounts
    .filter((m) => m.mountPath !== DS_STATE_DIR)
    .flatMap((m) => {
      const opts = [
        ...(m.readOnly ? ['ro'] : []),
        propagation ?? (m.mountPropagation === 'HostToContainer' ? 'rslave' : 'rprivate'),
      ];
      return ['-v', `${ds.hostPaths.get(m.name)}:${m.mountPath}:${opts.join(',')}`];
    });
}

/**
 * `podman run` flags for the main container as kubelet would run it, its stateDir being `stateDir` (mounted at the same
 * path).
 */
function runFlags(ds: DaemonSet, stateDir: string): string[] {
  const sc = ds.main.securityContext;
  const flags = [
    '--user',
    `${sc.runAsUser}:${sc.runAsGroup}`,
    '--entrypoint',
    JSON.stringify(ds.main.command.slice(0, 1)),
  ];
  if (ds.hostNetwork) flags.push('--network', 'host');
  if (ds.hostPID) flags.push('--pid', 'host');
  if (sc.readOnlyRootFilesystem) flags.push('--read-only');
  if (!sc.allowPrivilegeEscalation) flags.push('--security-opt', 'no-new-privileges');
  for (const cap of sc.capabilities.drop) flags.push('--cap-drop', cap);
  for (const cap of sc.capabilities.add) flags.push('--cap-add', cap);
  flags.push('-v', `${stateDir}:${stateDir}`);
  return flags;
}

/**
 * The container's command with the test's stateDir, and the node's loopback and a port the kernel picks for --listen
 * (the node's port may be taken).
 */
function commandOf(main: MainContainer, stateDir: string): string[] {
  return main.command
    .slice(1)
    .map((a) => (a === DS_STATE_DIR ? stateDir : a.startsWith('--listen=') ? '--listen=127.0.0.1:0' : a));
}

/** A process that keeps a netns alive and names it as /proc/PID/ns/net; killed at scope close. */
async function procNetns(scope: Scope, name: string): Promise<string> {
  const holder = spawn('ip', ['netns', 'exec', name, 'sleep', '600'], { stdio: 'ignore' });
  const exited = new Promise<void>((done) => holder.on('close', () => done()));
  scope.defer(async () => {
    holder.kill('SIGKILL');
    await exited;
  }, `netns holder ${holder.pid}`);
  const path = `/proc/${holder.pid}/ns/net`;
  await waitFor(
    async () =>
      (await run('readlink', [path])).stdout.trim() ===
      (await run('ip', ['netns', 'exec', name, 'readlink', '/proc/self/ns/net'])).stdout.trim(),
    { what: `${path} in ${name}` },
  );
  return path;
}

/** The JSON lines the container printed. */
async function jsonLogs(podman: PrivatePodman, name: string): Promise<Record<string, unknown>[]> {
  const out = (await podman.ok(['logs', name])).stdout;
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe.skipIf(skipPodman())('the DaemonSet announcer, run with podman as deploy/daemonset.yaml says', () => {
  const fileScope = new Scope();
  const scope = scopePerTest(PREFIX);
  let podman: PrivatePodman;

  beforeAll(async () => {
    podman = await privatePodman(fileScope);
    const res = await run('bash', [join(ROOT, 'scripts/image.sh'), '--tag', IMAGE], {
      env: { ...podman.env, PODMAN: podman.command.join(' ') },
      timeoutMs: 600_000,
    });
    if (res.code !== 0) throw new Error(`scripts/image.sh exited ${res.code}: ${res.stderr.trim()}`);
  }, 660_000);

  afterAll(async () => {
    throwCleanupErrors(await fileScope.close());
  }, 120_000);

  /**
   * Creates (`run`: and starts) the main container `name` as kubelet would, on `stateDir`, with `flags` before the
   * image and `command` after it (the yaml's by default); removed at scope close.
   */
  async function container(s: Scope, ds: DaemonSet, name: string, stateDir: string, opts: ContainerHow = {}) {
    s.defer(() => podman.run(['rm', '-f', '-t', '5', name]), `container ${name}`);
    const verb = opts.run ? ['run', '-d'] : ['create'];
    const command = opts.command ?? commandOf(ds.main, stateDir);
    await podman.ok([...verb, '--name', name, ...runFlags(ds, stateDir), ...(opts.flags ?? []), IMAGE, ...command]);
  }

  /** The pid of container `name`'s process. */
  async function containerPid(name: string): Promise<number> {
    return Number((await podman.ok(['inspect', '--format', '{{.State.Pid}}', name])).stdout.trim());
  }

  const servesADDMadeTitle =
    `serves an ADD made on the host; stopped, a shim starts one on the host; started again mid-burst, it ` +
    `takes over: ${BURST.count} GARPs, none lost or twice`;
  it(servesADDMadeTitle, async () => {
    const s = scope();
    const ds = await mainContainer();
    const files = await announcerFiles(s);
    await mkdir(files.stateDir, { mode: 0o700 });
    const name = `${PREFIX}-announcer`;
    await container(s, ds, name, files.stateDir);
    const started = async (times: number): Promise<void> => {
      await podman.ok(['start', name]);
      await waitFor(
        async () => (await jsonLogs(podman, name)).filter((l) => l.msg === 'announcer started').length >= times,
        { timeoutMs: 30_000, what: `the container's announcer started (${times})` },
      );
    };
    await started(1);

    const net = allocSubnet();
    const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
    const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
    const pods: BridgePod[] = [];
    const atts: AnnouncerAttachment[] = [];
    for (let i = 0; i < 2; i++) {
      const containerId = `${PREFIX}-pod${i}`;
      const pod = await attachBridgePod(s, { prefix: PREFIX, net, bridge, host: 10 + i, containerId, settle: true });
      pods.push(pod);
      const netns = await procNetns(s, pod.netns.name);
      // As a runtime that names the netns by /proc/PID/ns/net gives it to every plugin of the chain.
      const prevResult = structuredClone(pod.result);
      for (const iface of prevResult.interfaces) if (iface.sandbox === pod.netns.path) iface.sandbox = netns;
      atts.push({
        mainConf: pod.conf,
        prevResult,
        containerId: pod.containerId,
        netns,
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-${i}`,
        files,
        // pod0's MAC is set from its IP (rtnetlink in its netns: NET_ADMIN), and restored at DEL.
        options: { logLevel: 'debug', idleExitMs: 2000, ...(i === 0 ? { mac: 'ip-derived' } : {}) },
      });
    }

    // 1. Served by the container.
    const resident = await containerPid(name);
    assertCniOk('ADD pod0', await announcerAdd(s, atts[0]!, FIRST));
    const served = await announcerStatus(files.stateDir);
    expect(served.pid).toBe(resident);
    // The container's announcer ran that ADD: the CNI process on the host did not.
    expect(served.counters?.served.ADD).toBe(1);
    expect(await daemonsOf(files.stateDir)).toEqual([]); // no announcer of the host's own
    // A second resident one (a second DaemonSet pod on the node) is refused, and says so.
    const second = await run(ANNOUNCER, ['daemon', files.stateDir, '--resident'], { timeoutMs: 30_000 });
    expect([second.code, second.stderr.trim()]).toEqual([
      1,
      `announcer daemon: another resident announcer serves ${files.stateDir}: exiting`,
    ]);
    expect((await announcerStatus(files.stateDir)).pid).toBe(resident);
    await waitFor(
      async () =>
        (await jsonLogs(podman, name)).filter((l) => l.msg === 'announced' && l.K8S_POD_NAME === 'web-0').length >= 2,
      {
        what: `2 rounds for web-0 in the container's log`,
      },
    ).catch(async (err: Error) => {
      throw new Error(
        `${err.message}; the container's log:` +
          `\n${(await podman.run(['logs', name])).stdout}${(await podman.run(['logs', name])).stderr}`,
      );
    });
    const web0 = (await jsonLogs(podman, name)).filter((l) => l.K8S_POD_NAME === 'web-0' && l.msg === 'announced');
    expect(web0.map((l) => l.round).slice(0, 2)).toEqual([1, 2]);
    expect(
      web0.every(
        (l) => l.containerId === pods[0]!.containerId && l.K8S_POD_NAMESPACE === 'team-a' && (l.frames as number) >= 1,
      ),
    ).toBe(true);
    expect(web0.slice(1).every((l) => JSON.stringify(l.ips) === JSON.stringify([pods[0]!.ip]))).toBe(true);

    // 2. Its pod restarts mid-burst: SIGTERM, and it hands pod0's rest over to whichever announcer comes next.
    await podman.ok(['stop', '--time', '10', name]);
    expect(
      (await jsonLogs(podman, name)).filter((l) => l.msg === 'SIGTERM: handing over to the next announcer'),
    ).toHaveLength(1);
    // 3. An ADD starts an announcer on the host, which goes on with pod0's burst; the container comes back mid-burst of
    // pod1.
    assertCniOk('ADD pod1', await announcerAdd(s, atts[1]!, BURST));
    const [onDemand] = await daemonsOf(files.stateDir);
    expect(onDemand).toBeDefined();
    await waitLogged(files, 'info', 'announced', { containerId: pods[1]!.containerId, round: 3, of: BURST.count });
    await started(2);
    const back = await containerPid(name);
    await waitFor(async () => (await daemonsOf(files.stateDir)).length === 0, {
      timeoutMs: 15_000,
      what: `the host's announcer ${onDemand!.pid} to hand over and exit`,
    });
    expect((await announcerStatus(files.stateDir)).pid).toBe(back);

    // pod0 has one more: the kernel's own GARP when its MAC changed (the bridge plugin sets arp_notify=1).
    const planned = FIRST.count + 1 + BURST.count;
    await waitFor(async () => (await capture.count()) >= planned, {
      timeoutMs: 20_000,
      what: `${planned} GARPs`,
    }).catch(() => undefined);
    for (const att of atts) assertCniOk(`DEL ${att.containerId}`, await announcerDel(att));
    const frames = await capture.stop();
    const macs = [derivedMac(pods[0]!.ip), pods[1]!.mac];
    // A round that fell due more than a second before the next announcer took its burst up is skipped, by design, and
    // said so on the network's log (both announcers write it, each through its caller's view).
    const skipped = async (pod: { containerId: string }) =>
      (await files.logged('info', 'rounds skipped: their time has passed', { containerId: pod.containerId })).reduce(
        (n, r) => n + Number(r.fields.skipped),
        0,
      );
    const sentOrSkipped = await Promise.all(
      pods.map(async (pod, i) => garpsFor(frames, macs[i]!, pod.ip).length + (await skipped(pod))),
    );
    expect(sentOrSkipped).toEqual([FIRST.count + 1, BURST.count]);
    const logs = await jsonLogs(podman, name);
    expect(logs.some((l) => l.msg === 'announcer started' && (l.handedOver as number) >= 1)).toBe(true);
    // The host's one took pod0's burst from the container (the job is in the network's log under its pid; whether one
    // of its rounds fell due before the container asked for it back is timing).
    const handedOver = { daemon: onDemand!.pid, containerId: pods[0]!.containerId, how: 'handed over' };
    expect(await files.logged('debug', 'background work scheduled', handedOver)).toHaveLength(1);
    expect(logs.filter((l) => l.K8S_POD_NAME === 'web-1' && l.msg === 'announced').length).toBeGreaterThan(0);
    // ... and handed both bursts over to the container's, which sent web-1's later rounds (above).
  }, 180_000);

  const servesHostADDTitle =
    'serves a host ADD whose CNI_NETNS is a bind mount outside its netns mounts, and writes the ' +
    "network's logFile on the host: every round on the wire and in the log";
  it(servesHostADDTitle, async () => {
    const s = scope();
    const ds = await mainContainer();
    const files = await announcerFiles(s); // on the host's /tmp: the container does not mount it
    await mkdir(files.stateDir, { mode: 0o700 });
    const name = `${PREFIX}-views`;
    await container(s, ds, name, files.stateDir, { run: true });
    await waitFor(async () => (await jsonLogs(podman, name)).some((l) => l.msg === 'announcer started'), {
      timeoutMs: 30_000,
      what: "the container's announcer started",
    });
    const resident = await containerPid(name);

    const net = allocSubnet();
    const pod = await createStandInPod(s, {
      prefix: PREFIX,
      v4: [net.v4Cidr(5)],
      sysctls: { 'net.ipv4.conf.eth0.arp_notify': 0, 'net.ipv6.conf.eth0.disable_ipv6': 1 },
    });
    const dir = await tempDir(s, 'announcer-ds-bind-');
    const bound = join(dir, 'netns');
    await writeFile(bound, '');
    await runOk('mount', ['--bind', pod.netns.path, bound]);
    s.defer(() => runOk('umount', [bound]), `umount ${bound}`);
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp' });
    const att: AnnouncerAttachment = {
      mainConf: { name: 'dsviews', cniVersion: '1.0.0' },
      prevResult: podPrevResult(bound, [{ name: pod.ifname, mac: pod.mac, addresses: [net.v4Cidr(5)] }]),
      containerId: `${PREFIX}-bound`,
      netns: bound,
      files,
      options: { logLevel: 'debug' },
    };
    const rounds = { count: 3, intervalMs: 300 };
    assertCniOk('ADD', await announcerAdd(s, att, rounds));
    expect((await announcerStatus(files.stateDir)).pid).toBe(resident);
    await waitFor(async () => (await capture.count()) >= rounds.count, { timeoutMs: 10_000, what: 'every round' });
    expect(garpsFor(await capture.stop({ settleMs: 600 }), pod.mac, net.v4(5))).toHaveLength(rounds.count);
    for (let round = 1; round <= rounds.count; round++) {
      const announced = await files.logged('info', 'announced', { containerId: att.containerId, round });
      expect(announced, `round ${round} in the host's logFile`).toHaveLength(1);
    }
    assertCniOk('DEL', await announcerDel(att));
  }, 120_000);

  const itsNetnsMountsTitle =
    'its netns mounts (HostToContainer) show a netns named on the node after it ' +
    'started; with private propagation they would not';
  it(itsNetnsMountsTitle, async () => {
    const s = scope();
    const ds = await mainContainer();
    // The node here is podman's own mount namespace (/run is a tmpfs there): the netns dirs are made, and named, in it.
    const inNode = async (cmd: string, args: string[]): Promise<void> => {
      const res = await podman.inMountNs(cmd, args);
      if (res.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${res.code}: ${res.stderr.trim()}`);
    };
    for (const m of ds.main.volumeMounts)
      if (m.mountPath !== DS_STATE_DIR) await inNode('mkdir', ['-p', ds.hostPaths.get(m.name)!]);
    const early = `${PREFIX}e${Math.random().toString(16).slice(2, 6)}`;
    s.defer(() => podman.inMountNs('ip', ['netns', 'del', early]), `netns ${early}`);
    await inNode('ip', ['netns', 'add', early]); // makes /run/netns a shared mount point, as on a node
    const files = await announcerFiles(s);
    await mkdir(files.stateDir, { mode: 0o700 });
    // The second container runs a resident announcer of a stateDir of its own: it only has to stay up.
    const other = await announcerFiles(s);
    await mkdir(other.stateDir, { mode: 0o700 });
    const names = { yaml: `${PREFIX}-mounts`, private: `${PREFIX}-private` };
    await container(s, ds, names.yaml, files.stateDir, { run: true, flags: netnsMountFlags(ds) });
    await container(s, ds, names.private, other.stateDir, { run: true, flags: netnsMountFlags(ds, 'rprivate') });

    // A pod's netns named after both started: an interface with an address, up, in it.
    const late = `${PREFIX}l${Math.random().toString(16).slice(2, 6)}`;
    s.defer(() => podman.inMountNs('ip', ['netns', 'del', late]), `netns ${late}`);
    await inNode('ip', ['netns', 'add', late]);
    for (const cmd of [
      'ip link add eth0 type veth peer name peer0',
      'ip addr add 10.99.0.5/24 dev eth0',
      'ip link set peer0 up',
      'ip link set eth0 up',
    ]) {
      await inNode('ip', ['netns', 'exec', late, ...cmd.split(' ')]);
    }
    const once = ['--ifname', 'eth0', '--count', '1', '--wait', '5000'];
    const announce = (n: string, dir: string) =>
      podman.run(['exec', n, '/announcer', 'announce', '--netns', `${dir}/${late}`, ...once]);
    for (const dir of ['/run/netns', '/var/run/netns']) {
      const seen = await announce(names.yaml, dir);
      expect(seen.code, `${dir}: ${seen.stdout}${seen.stderr}`).toBe(0);
      const unseen = await announce(names.private, dir);
      expect(unseen.code, dir).not.toBe(0);
      expect(unseen.stderr + unseen.stdout, dir).toMatch(/does not exist|ENOENT|not a namespace file/);
    }
  }, 120_000);

  const hungAnnouncerFailsTitle =
    'a hung announcer fails its liveness probe and the container is killed (podman health check as the kubelet)';
  it(hungAnnouncerFailsTitle, async () => {
    const s = scope();
    const ds = await mainContainer();
    const files = await announcerFiles(s);
    await mkdir(files.stateDir, { mode: 0o700 });
    const name = `${PREFIX}-hung`;
    // The probe as deploy/daemonset.yaml's livenessProbe has it (GET /healthz, its timeoutSeconds and
    // failureThreshold), run from inside the container by a static busybox mounted for the test (its nc: this
    // busybox's wget crashes): the image has no HTTP client, and with hostNetwork the container's loopback is the
    // node's, as the kubelet's GET sees it.
    const probe = ds.liveness;
    const port = await freeTcpPort();
    const command = commandOf(ds.main, files.stateDir).map((a) =>
      a.startsWith('--listen=') ? `--listen=127.0.0.1:${port}` : a,
    );
    const get =
      `printf 'GET ${probe.path} HTTP/1.0\\r\\n\\r\\n' | /busybox timeout ${probe.timeoutSeconds} ` +
      `/busybox nc 127.0.0.1 ${port} | /busybox grep -q '^HTTP/1.[01] 200'`;
    const health = ['--health-cmd', JSON.stringify(['/busybox', 'sh', '-c', get]), '--health-on-failure', 'kill'];
    // No timer of podman's (systemd's): the test runs each check itself, as the kubelet would every periodSeconds.
    health.push('--health-interval', 'disable', '--health-retries', String(probe.failureThreshold));
    await container(s, ds, name, files.stateDir, { flags: ['-v', `${BUSYBOX}:/busybox:ro`, ...health], command });
    await podman.ok(['start', name]);
    await waitFor(async () => (await jsonLogs(podman, name)).some((l) => l.msg === 'serving /metrics and /healthz'), {
      timeoutMs: 30_000,
      what: "the container's announcer serving /healthz",
    });
    const check = async (): Promise<number> => (await podman.run(['healthcheck', 'run', name])).code;
    const state = async (): Promise<string> =>
      (await podman.ok(['inspect', '--format', '{{.State.Status}}', name])).stdout.trim();
    expect(await check()).toBe(0); // healthy while its loop turns
    expect(await check()).toBe(0);

    // Hung: its one loop makes no progress. /healthz is answered by that loop, so no answer comes.
    const pid = await containerPid(name);
    expect(pid).toBeGreaterThan(1);
    process.kill(pid, 'SIGSTOP'); // the container's own process, which this test started
    const codes: number[] = [];
    for (let i = 0; i < probe.failureThreshold + 2 && (await state()) === 'running'; i++) codes.push(await check());
    expect(codes.length).toBeGreaterThanOrEqual(probe.failureThreshold);
    expect(codes.every((c) => c !== 0)).toBe(true);
    // The named recovery: after failureThreshold failed probes the container is killed (the kubelet restarts it).
    await waitFor(async () => (await state()) !== 'running', { timeoutMs: 30_000, what: 'the hung container killed' });
    expect(await state()).toMatch(/exited|stopped/);
  }, 180_000);
});
