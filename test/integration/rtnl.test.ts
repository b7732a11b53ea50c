// The rtnetlink layer against the real kernel, cross-checked with iproute2:
// links, addresses, DAD flags, bridge port state, a MAC change, bridge FDB and
// neighbour entries, and change notifications. Everything happens inside a
// netns the test creates.
import { describe, expect, it } from 'vitest';
import { NodeWatch } from '../../src/announce/node-proof';
import { loadLibc } from '../../src/sys/libc';
import { openHostSockets, openPodRtnl, openPodSockets } from '../../src/sys/netns';
import type { RtnlEvents } from '../../src/sys/rtnl';
import { formatMac } from '../../src/wire/ethernet';
import {
  AF_BRIDGE,
  AF_INET,
  AF_INET6,
  type NeighChange,
  parseNeighChange,
  PortState,
  RtnlGroup,
} from '../../src/wire/rtnetlink';
import { createNetns, neighEntry, OLD_MAC, run, runOk, scopePerTest, skipIntegration, waitFor } from './harness';

const libc = loadLibc();

/** Waits up to `timeoutMs` for a notification on `events`, then drains it: whether one came. */
function awaitChange(events: RtnlEvents, timeoutMs: number): boolean {
  const [ready] = libc.pollIn([events.fd], timeoutMs);
  events.drain();
  return ready === true;
}

describe.skipIf(skipIntegration())('rtnetlink on koffi sockets', () => {
  const scope = scopePerTest();

  async function ipJson(netns: string, args: string[]): Promise<any[]> {
    return JSON.parse((await runOk('ip', ['-n', netns, '-j', ...args])).stdout);
  }

  it('reads links as `ip link` shows them, including the veth peer and its netns id', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'address', '02:00:00:00:00:a0', 'up']);
    const rtnl = openPodRtnl(libc, ns.path);
    try {
      const [shown] = await ipJson(ns.name, ['link', 'show', 'a0']);
      const link = rtnl.linkByName('a0')!;
      expect(link).toMatchObject({
        index: shown.ifindex,
        name: 'a0',
        kind: 'veth',
        up: true,
        running: false,
        noarp: false,
      });
      expect(link.mac?.toString('hex')).toBe('0200000000a0');
      const peer = rtnl.linkByName('b0')!;
      expect(link.linkIndex).toBe(peer.index);
      expect(link.linkNetnsid).toBeUndefined(); // both ends in one netns
      expect(rtnl.linkByIndex(link.index)?.name).toBe('a0');
      expect(rtnl.linkByName('nope0')).toBeUndefined();
      expect(rtnl.linkByIndex(99999)).toBeUndefined();
    } finally {
      rtnl.close();
    }
  });

  it('reads addresses with their DAD state, and sets a MAC', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'addr', 'add', '10.88.7.5/24', 'dev', 'a0']);
    await runOk('ip', ['-n', ns.name, 'addr', 'add', 'fd00:88:7::5/64', 'dev', 'a0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'b0', 'up']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'up']); // DAD starts: the v6 address is tentative
    const rtnl = openPodRtnl(libc, ns.path);
    try {
      const index = rtnl.linkByName('a0')!.index;
      const found = rtnl.addresses(index).map((a) => [a.family, a.bytes.toString('hex'), a.prefixLength]);
      expect(found).toEqual(
        expect.arrayContaining([
          [4, '0a580705', 24],
          [6, 'fd000088000700000000000000000005', 64],
        ]),
      );
      const v6 = rtnl.addresses(index).find((a) => a.family === 6 && a.bytes[0] === 0xfd)!;
      const [shown] = await ipJson(ns.name, ['addr', 'show', 'a0']);
      const ipSays = shown.addr_info.find((a: any) => a.local === 'fd00:88:7::5');
      expect(v6.tentative).toBe(ipSays.tentative === true);
      rtnl.setMac(index, Buffer.from('0a580a580705', 'hex'));
      const [after] = await ipJson(ns.name, ['link', 'show', 'a0']);
      expect(after.address).toBe('0a:58:0a:58:07:05');
    } finally {
      rtnl.close();
    }
  });

  it('reads a bridge port state and is woken by link notifications', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'br0', 'type', 'bridge']);
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'master', 'br0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'br0', 'up']);
    const pod = openPodSockets(libc, ns.path);
    try {
      const port = pod.rtnl.linkByName('a0')!.index;
      expect(pod.rtnl.bridgePortState(port)).toBe(PortState.Disabled);
      expect(pod.rtnl.bridgePortState(pod.rtnl.linkByName('b0')!.index)).toBeUndefined(); // no bridge port
      awaitChange(pod.events, 0); // forget what creating the links queued
      expect(awaitChange(pod.events, 0)).toBe(false);
      await runOk('ip', ['-n', ns.name, 'link', 'set', 'b0', 'up']);
      await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'up']);
      expect(awaitChange(pod.events, 5000)).toBe(true);
      // Without STP the port goes on to forwarding by itself: compare with ip once it is there, not midway.
      const ipState = async () =>
        (await ipJson(ns.name, ['-d', 'link', 'show', 'a0']))[0].linkinfo.info_slave_data.state;
      await waitFor(async () => (await ipState()) === 'forwarding', { timeoutMs: 5000, what: 'port a0 forwarding' });
      expect(pod.rtnl.bridgePortState(port)).toBe(PortState.Forwarding);
    } finally {
      pod.close();
    }
  });

  const POD_MAC = '0a:58:0a:58:09:05';
  const V4 = { text: '10.88.9.5', bytes: Buffer.from([10, 88, 9, 5]) };
  const V6 = { text: 'fd00:88:9::5', bytes: Buffer.from('fd000088000900000000000000000005', 'hex') };
  const ofPod = (e: { lladdr?: Buffer }) => e.lladdr !== undefined && formatMac(e.lladdr) === POD_MAC;

  /**
   * A netns with bridge br0 and ports p0, p1 whose veth peers q0, q1 (down) both have the pod's MAC; on br0, a stale
   * entry for the pod's IPv4 address (another MAC) and a reachable one for its IPv6 address (its MAC); host-side
   * sockets there, subscribed to neighbour notifications.
   */
  async function twinPorts() {
    const ns = await createNetns(scope(), 'gwn');
    const ip = (...args: string[]) => runOk('ip', ['-n', ns.name, ...args]);
    await ip('link', 'add', 'br0', 'address', '02:00:00:00:00:b0', 'type', 'bridge', 'stp_state', '0');
    for (const i of [0, 1]) {
      await ip('link', 'add', `p${i}`, 'type', 'veth', 'peer', 'name', `q${i}`);
      await ip('link', 'set', `q${i}`, 'address', POD_MAC);
      await ip('link', 'set', `p${i}`, 'master', 'br0', 'up');
    }
    await ip('link', 'set', 'br0', 'up');
    await ip('neigh', 'add', V4.text, 'dev', 'br0', 'lladdr', OLD_MAC, 'nud', 'stale');
    await ip('neigh', 'add', V6.text, 'dev', 'br0', 'lladdr', POD_MAC, 'nud', 'reachable');
    const host = openHostSockets(libc, ns.path, [RtnlGroup.Neigh]);
    scope().defer(() => host.close(), 'host sockets');
    const indexOf = (name: string): number => host.rtnl.linkByName(name)!.index;
    const [br, p0, p1] = [indexOf('br0'), indexOf('p0'), indexOf('p1')];
    const names = new Map([br, p0, p1].map((index) => [index, host.rtnl.linkByIndex(index)!.name]));
    host.events.take(); // what setting up queued
    await ip('link', 'set', 'q0', 'up'); // q0's IPv6 start-up (MLD, DAD) teaches the bridge its MAC on p0
    await waitFor(() => host.rtnl.neighbours(AF_BRIDGE).find((e) => ofPod(e) && e.ifindex === p0), {
      what: "the bridge to learn the pod's MAC on p0",
    });
    return { ns, ip, host, br, p0, p1, names };
  }

  it('dumps FDB and neighbour entries as `bridge fdb` and `ip neigh` show them', async () => {
    const { ns, host, br, p0, names } = await twinPorts();
    const learned = host.rtnl.neighbours(AF_BRIDGE).find((e) => ofPod(e) && e.ifindex === p0);
    expect(learned).toMatchObject({ family: AF_BRIDGE, master: br, flags: 0, state: 0x02 }); // NUD_REACHABLE
    type FdbShown = { mac: string; ifname: string; master?: string };
    const shown = JSON.parse((await runOk('bridge', ['-j', 'fdb', 'show'], { netns: ns.name })).stdout) as FdbShown[];
    // The bridge's entries (master br0), learned and local; a device's own list (self) changes as it joins groups.
    const dumped = host.rtnl.neighbours(AF_BRIDGE).filter((e) => e.master === br);
    expect(new Set(dumped.map((e) => `${formatMac(e.lladdr!)} ${names.get(e.ifindex)}`))).toEqual(
      new Set(shown.filter((e) => e.master === 'br0').map((e) => `${e.mac} ${e.ifname}`)),
    );
    expect(dumped.length).toBeGreaterThanOrEqual(4); // br0's, p0's and p1's own MACs, the pod's
    for (const [family, address, mac, state] of [
      [AF_INET, V4, OLD_MAC, 0x04], // NUD_STALE
      [AF_INET6, V6, POD_MAC, 0x02],
    ] as const) {
      const entry = host.rtnl.neighbours(family).find((e) => e.ifindex === br && e.dst?.equals(address.bytes));
      expect([entry?.state, entry && formatMac(entry.lladdr!)]).toEqual([state, mac]);
      expect((await neighEntry('br0', address.text, ns.name))?.mac).toBe(mac);
    }
  });

  it('gets one FDB or neighbour entry as `bridge fdb get` and `ip neigh get` do; nothing for one absent', async () => {
    const { ns, ip, host, br, p0 } = await twinPorts();
    const mac = Buffer.from(POD_MAC.replace(/:/g, ''), 'hex');
    expect(host.rtnl.fdbEntry(br, mac)).toMatchObject({ family: AF_BRIDGE, ifindex: p0, master: br });
    expect(host.rtnl.fdbEntry(br, Buffer.from('0a580a580999', 'hex'))).toBeUndefined();
    const v4 = host.rtnl.neighbour(AF_INET, br, V4.bytes);
    expect([v4?.ifindex, v4?.state, v4 && formatMac(v4.lladdr!)]).toEqual([br, 0x04, OLD_MAC]); // NUD_STALE
    expect(formatMac(host.rtnl.neighbour(AF_INET6, br, V6.bytes)!.lladdr!)).toBe(POD_MAC);
    expect(host.rtnl.neighbour(AF_INET, br, Buffer.from([10, 88, 9, 99]))).toBeUndefined();
    // A VLAN-filtering bridge keys its entries by VLAN: the entry learned in VLAN 1 is not the one of VLAN 0.
    const filtering = await run('ip', ['-n', ns.name, 'link', 'set', 'br0', 'type', 'bridge', 'vlan_filtering', '1']);
    if (filtering.code !== 0) {
      const why = filtering.stderr.trim();
      console.log(`skipped the VLAN-filtering part: this kernel has no bridge VLAN filtering (${why})`);
      return;
    }
    await ip('link', 'set', 'q0', 'down');
    await ip('link', 'set', 'q0', 'up');
    await waitFor(() => host.rtnl.neighbours(AF_BRIDGE).find((e) => ofPod(e) && e.ifindex === p0 && e.vlan === 1), {
      what: "the bridge to learn the pod's MAC on p0 in VLAN 1",
    });
    expect(host.rtnl.fdbEntry(br, mac)).toBeUndefined();
  });

  it('hands back FDB and neighbour notifications, and NodeWatch judges them: a moved MAC is a duplicate', async () => {
    const { ip, host, br, p0, p1, names } = await twinPorts();
    const watch = new NodeWatch(
      { mac: POD_MAC, portIndex: p0, portName: 'p0', bridgeIndex: br, addresses: [V4.text, V6.text] },
      (index) => names.get(index) ?? `if${index}`,
    );
    for (const family of [AF_BRIDGE, AF_INET, AF_INET6]) for (const e of host.rtnl.neighbours(family)) watch.observe(e);
    expect(watch.verdict()).toEqual({
      fdb: { kind: 'converged', port: 'p0' },
      neighbours: [
        { address: V4.text, kind: 'stale', mac: OLD_MAC },
        { address: V6.text, kind: 'converged' },
      ],
    });
    host.events.take();
    await ip('neigh', 'replace', V4.text, 'dev', 'br0', 'lladdr', POD_MAC, 'nud', 'reachable');
    await ip('neigh', 'del', V6.text, 'dev', 'br0');
    await ip('link', 'set', 'q1', 'up'); // the same MAC now comes in on p1 too: the entry moves
    const changes: NeighChange[] = [];
    await waitFor(
      () => {
        if (libc.pollIn([host.events.fd], 200)[0]) {
          changes.push(...host.events.take().messages.flatMap((m) => parseNeighChange(m) ?? []));
        }
        return changes.some((c) => c.entry.family === AF_BRIDGE && c.entry.ifindex === p1 && ofPod(c.entry));
      },
      { what: "a notification of the pod's MAC on p1" },
    );
    expect(changes.some((c) => c.deleted && c.entry.family === AF_INET6 && c.entry.dst?.equals(V6.bytes))).toBe(true);
    for (const c of changes) watch.observe(c.entry, c.deleted);
    expect(watch.verdict()).toEqual({
      fdb: { kind: 'duplicate', port: 'p0', others: ['p1'] },
      neighbours: [
        { address: V4.text, kind: 'converged' },
        { address: V6.text, kind: 'absent' },
      ],
    });
  });
});
