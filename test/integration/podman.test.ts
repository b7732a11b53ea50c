// A real runtime: podman 4.3 with its CNI backend runs the conflist
// bridge + announcer, configured only through private files (harness/podman.ts).
// The stale-entry scenario of the README through podman: a container reuses the
// --ip of a removed one while a keeper container holds the bridge's carrier
// (without it the bridge loses carrier and the kernel flushes the entry); the node's entry
// holds the new container's MAC when `podman run -d` returns. The control
// network (bridge alone) keeps the old MAC. `podman rm` runs DEL: no announcer
// process and no state file stays. `--mac-address` reaches plugins as MAC= in
// CNI_ARGS: with `mac: ip-derived`, the runtime's MAC is kept.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  moveNodeOptions,
  OLD_MAC,
  ANNOUNCER,
  allocSubnet,
  deleteLink,
  neighEntry,
  ownAnnouncerProcesses,
  plantStale,
  runOk,
  RUN_TAG,
  Scope,
  scopePerTest,
  SYSTEM_CNI_DIR,
  throwCleanupErrors,
  uniqueName,
  waitFor,
  type Subnet,
} from './harness';
import { daemonsOf } from './harness/daemon';
import { importBusyboxImage, privatePodman, skipPodman, type PrivatePodman } from './harness/podman';

const PREFIX = `pm${RUN_TAG}`;
/** A MAC the runtime is asked for (locally administered, unicast). */
const RUNTIME_MAC = '02:5e:ed:00:00:07';
const SLEEP = ['sleep', '1000000'];

/** One podman network: its bridge, subnet, and the announcer's state dir (when it has the announcer). */
interface Network {
  name: string;
  bridge: string;
  net: Subnet;
  stateDir?: string;
}

describe.skipIf(skipPodman())('podman 4.3 (CNI backend) with the conflist bridge + announcer', () => {
  const scope = new Scope();
  const perTest = scopePerTest();
  let podman: PrivatePodman;
  let image: string;

  beforeAll(async () => {
    podman = await privatePodman(scope);
    // The plugin under test, copied by its own install verb (a rebuild of bin/ meanwhile cannot change it).
    await runOk(ANNOUNCER, ['install', '--dest', podman.cniBinDir]);
    for (const plugin of ['bridge', 'host-local', 'loopback'])
      await podman.addPlugin(plugin, join(SYSTEM_CNI_DIR, plugin));
    image = await importBusyboxImage(podman);
  }, 180_000);

  afterAll(async () => {
    throwCleanupErrors(await scope.close());
  }, 120_000);

  /**
   * Adds a network: bridge (the node at .1, host-local IPAM with its data in
   * the private dir) and, unless `announcer` is false, the announcer with
   * `options` (count 2 with a long interval by default, so that its
   * background process is still there when the container is removed).
   */
  async function addNetwork(s: Scope, announcer: Record<string, unknown> | false = {}): Promise<Network> {
    const net = allocSubnet();
    const bridge = uniqueName(PREFIX);
    const name = `${bridge}-net`;
    s.defer(() => deleteLink(bridge), `bridge ${bridge}`);
    const plugins: Record<string, unknown>[] = [
      {
        type: 'bridge',
        bridge,
        isGateway: true,
        ipMasq: false,
        ipam: {
          type: 'host-local',
          dataDir: join(podman.dir, 'ipam'),
          ranges: [[{ subnet: `10.88.${net.index}.0/24`, gateway: net.v4(1) }]],
        },
      },
    ];
    const network: Network = { name, bridge, net };
    if (announcer !== false) {
      network.stateDir = join(podman.dir, `${name}-state`);
      plugins.push(
        moveNodeOptions({
          type: 'announcer',
          count: 2,
          intervalMs: 60_000,
          // The background announcer goes once it has nothing left for this long (default 30 s).
          idleExitMs: 1000,
          stateDir: network.stateDir,
          logFile: join(podman.dir, `${name}.log`),
          logLevel: 'debug',
          ...announcer,
        }),
      );
    }
    await podman.addNetwork({ cniVersion: '1.0.0', name, plugins });
    return network;
  }

  /**
   * `podman run -d` on the network with a fixed IP; resolves with the container's full ID and MAC (from podman's result
   * and from inside).
   */
  async function runContainer(
    s: Scope,
    network: Network,
    host: number,
    extra: string[] = [],
  ): Promise<{ id: string; mac: string }> {
    const name = uniqueName(`${PREFIX}c`);
    s.defer(() => podman.run(['rm', '--force', '--time', '0', name]), `container ${name}`);
    const on = ['--network', network.name, '--ip', network.net.v4(host)];
    const id = (await podman.ok(['run', '-d', '--name', name, ...on, ...extra, image, ...SLEEP])).stdout.trim();
    const inspected = JSON.parse((await podman.ok(['inspect', id])).stdout)[0].NetworkSettings.Networks[network.name];
    const inside = (await podman.ok(['exec', id, 'cat', '/sys/class/net/eth0/address'])).stdout.trim();
    expect(inspected.IPAddress).toBe(network.net.v4(host));
    expect(inspected.MacAddress).toBe(inside);
    return { id, mac: inside };
  }

  async function remove(id: string): Promise<void> {
    await podman.ok(['rm', '--force', '--time', '0', id]);
  }

  /**
   * What the announcer keeps for container `id`: its files in stateDir. (The
   * network's one background announcer serves every container on it; the
   * last test checks that none is left once they are all gone.)
   */
  async function leftovers(network: Network, id: string): Promise<string[]> {
    const files = (await runOk('sh', ['-c', 'ls -A "$1" 2>/dev/null || true', 'sh', network.stateDir!])).stdout
      .split('\n')
      .filter((f) => f.startsWith(id));
    return files.map((f) => `state file ${f}`);
  }

  /**
   * The seed scenario through podman: a keeper at .9, a container at .5 that
   * is removed, the node's entry for .5 planted STALE with that container's
   * MAC (as the node would have it), and a new container at .5. Resolves with
   * the new container and the node's entry as `podman run -d` returned.
   */
  async function reuseIp(s: Scope, network: Network) {
    await runContainer(s, network, 9);
    const first = await runContainer(s, network, 5);
    await remove(first.id);
    await plantStale(network.bridge, network.net.v4(5), first.mac);
    const second = await runContainer(s, network, 5);
    const entry = await neighEntry(network.bridge, network.net.v4(5));
    expect(second.mac).not.toBe(first.mac);
    return { first, second, entry };
  }

  it("control, bridge alone: the node keeps the removed container's MAC for the reused IP", async () => {
    const s = perTest();
    const network = await addNetwork(s, false);
    const { first, entry } = await reuseIp(s, network);
    expect(entry).toMatchObject({ state: 'STALE', mac: first.mac });
  });

  const bridgeAnnouncerNodeTitle =
    "bridge + announcer: the node's entry holds the new container's MAC when `podman " +
    'run -d` returns; `podman rm` leaves no state file';
  it(bridgeAnnouncerNodeTitle, async () => {
    const s = perTest();
    const network = await addNetwork(s);
    const { second, entry } = await reuseIp(s, network);
    expect(entry?.mac).toBe(second.mac);

    // count 2, interval 60 s: the background announcer still waits for round 2, and the record is there.
    // Once the container is gone, so are its record and lock, and the announcer, idleExitMs later.
    const before = await leftovers(network, second.id);
    expect(await daemonsOf(network.stateDir!)).toHaveLength(1);
    expect(before, before.join('\n')).toContain(`state file ${second.id}@eth0.json`);
    await remove(second.id);
    const left = await waitFor(async () => ((await leftovers(network, second.id)).length === 0 ? [] : false), {
      timeoutMs: 5000,
      what: 'no state file for the removed container',
    }).catch(() => leftovers(network, second.id));
    expect(left).toEqual([]);
  });

  const macAddressWithTitle =
    "--mac-address with `mac: ip-derived`: the runtime's MAC is kept and " +
    'announced; without it, the derived MAC is set';
  it(macAddressWithTitle, async () => {
    const s = perTest();
    const network = await addNetwork(s, { mac: 'ip-derived' });
    await runContainer(s, network, 9); // the keeper
    const n = network.net.index.toString(16).padStart(2, '0');
    const derived = await runContainer(s, network, 6);
    expect(derived.mac).toBe(`0a:58:0a:58:${n}:06`);

    await plantStale(network.bridge, network.net.v4(7), OLD_MAC);
    const chosen = await runContainer(s, network, 7, ['--mac-address', RUNTIME_MAC]);
    expect(chosen.mac).toBe(RUNTIME_MAC);
    expect((await neighEntry(network.bridge, network.net.v4(7)))?.mac).toBe(RUNTIME_MAC);
  });

  it('after every container is removed, podman keeps no network namespace and no announcer process runs', async () => {
    const s = perTest();
    const network = await addNetwork(s);
    const c = await runContainer(s, network, 9);
    await remove(c.id);
    await podman.ok(['rm', '--all', '--force', '--time', '0']);
    expect((await podman.inMountNs('ls', ['-A', '/run/netns'])).stdout.trim()).toBe('');
    expect(
      await waitFor(async () => ((await ownAnnouncerProcesses()).length === 0 ? [] : false), { timeoutMs: 5000 }).catch(
        ownAnnouncerProcesses,
      ),
    ).toEqual([]);
  });
});
