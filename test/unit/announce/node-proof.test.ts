import { describe, expect, it } from 'vitest';
import { describeNodeVerdict, NodeWatch, type NodeVerdict } from '../../../src/announce/node-proof';
import type { NeighEntry } from '../../../src/wire/rtnetlink';

const AF_INET = 2;
const AF_BRIDGE = 7;
const AF_INET6 = 10;
const REACHABLE = 0x02;
const STALE = 0x04;
const DELAY = 0x08;
const INCOMPLETE = 0x01;
const FAILED = 0x20;
const NOARP = 0x40;
const PERMANENT = 0x80;
const NTF_SELF = 0x02;
const NTF_PROXY = 0x08;

const BRIDGE = 2;
const PORT = 4;
const OTHER = 6;
const POD_MAC = '0a:58:0a:58:09:05';
const OLD_MAC = '86:03:17:7a:eb:6e';
const NAMES: Record<number, string> = { 2: 'cni0', 4: 'veth-pod', 6: 'veth-twin', 8: 'veth-third', 9: 'br1' };

const mac = (text: string): Buffer => Buffer.from(text.replace(/:/g, ''), 'hex');

function watch(addresses = ['10.88.9.5', 'fd00:88:9::5']): NodeWatch {
  return new NodeWatch(
    { mac: POD_MAC, portIndex: PORT, portName: 'veth-pod', bridgeIndex: BRIDGE, addresses },
    (ifindex) => NAMES[ifindex] ?? `if${ifindex}`,
  );
}

/** The verdict of a watch of the default pod that observed `entries` in order. */
function seen(...entries: NeighEntry[]): NodeVerdict {
  const w = watch();
  for (const entry of entries) w.observe(entry);
  return w.verdict();
}

/** An FDB entry of `lladdr` on `port`, learned (REACHABLE) on the test bridge unless told otherwise. */
function fdb(port: number, lladdr = POD_MAC, more: Partial<NeighEntry> = {}): NeighEntry {
  return { family: AF_BRIDGE, ifindex: port, state: REACHABLE, flags: 0, lladdr: mac(lladdr), master: BRIDGE, ...more };
}

function v4(last: number, lladdr: string | undefined, state = REACHABLE, more: Partial<NeighEntry> = {}): NeighEntry {
  const entry: NeighEntry = { family: AF_INET, ifindex: BRIDGE, state, flags: 0, dst: Buffer.from([10, 88, 9, last]) };
  if (lladdr) entry.lladdr = mac(lladdr);
  return { ...entry, ...more };
}

function v6(lladdr: string | undefined, state = REACHABLE): NeighEntry {
  const dst = Buffer.from('fd000088000900000000000000000005', 'hex');
  const entry: NeighEntry = { family: AF_INET6, ifindex: BRIDGE, state, flags: 0, dst };
  if (lladdr) entry.lladdr = mac(lladdr);
  return entry;
}

describe('NodeWatch: the FDB', () => {
  it('is not learned before anything is seen, and neighbours start absent', () => {
    expect(watch().verdict()).toEqual<NodeVerdict>({
      fdb: { kind: 'not-learned' },
      neighbours: [
        { address: '10.88.9.5', kind: 'absent' },
        { address: 'fd00:88:9::5', kind: 'absent' },
      ],
    });
  });

  it("converges when the pod's MAC is learned on its own port", () => {
    expect(seen(fdb(PORT)).fdb).toEqual({ kind: 'converged', port: 'veth-pod' });
  });

  it('counts a static entry (NOARP) and one with a VLAN on the own port as converged', () => {
    expect(seen(fdb(PORT, POD_MAC, { state: NOARP, vlan: 100 })).fdb.kind).toBe('converged');
  });

  it('reports a duplicate when the MAC is seen on another port, even after it moved back', () => {
    // A bridge keys by (MAC, VLAN): the entry moves with each sender.
    expect(seen(fdb(PORT), fdb(OTHER), fdb(PORT)).fdb).toEqual({
      kind: 'duplicate',
      port: 'veth-pod',
      others: ['veth-twin'],
    });
  });

  it('names each other port once, in the order seen, by the name it had when seen', () => {
    const names = new Map([
      [OTHER, 'veth-twin'],
      [8, 'veth-third'],
    ]);
    const w = new NodeWatch(
      { mac: POD_MAC, portIndex: PORT, portName: 'veth-pod', bridgeIndex: BRIDGE, addresses: [] },
      (ifindex) => names.get(ifindex) ?? '?',
    );
    w.observe(fdb(PORT));
    w.observe(fdb(8));
    w.observe(fdb(OTHER));
    names.set(8, 'renamed');
    w.observe(fdb(8, POD_MAC, { vlan: 200 }));
    expect(w.verdict().fdb).toEqual({ kind: 'duplicate', port: 'veth-pod', others: ['veth-third', 'veth-twin'] });
  });

  it('takes another port seen before the own one for where the MAC was before round 1 (a move): converged', () => {
    const w = watch([]);
    w.observe(fdb(OTHER));
    expect(w.verdict().fdb).toEqual({ kind: 'duplicate', port: 'veth-pod', others: ['veth-twin'] });
    w.observe(fdb(PORT));
    expect(w.verdict().fdb).toEqual({ kind: 'converged', port: 'veth-pod' });
  });

  it('ignores other MACs, other bridges, the bridge own entries (permanent, self) and removals', () => {
    const w = watch();
    w.observe(fdb(OTHER, OLD_MAC)); // another MAC
    w.observe(fdb(OTHER, POD_MAC, { master: 9 })); // the same MAC on another bridge
    w.observe(fdb(OTHER, POD_MAC, { state: PERMANENT })); // a port's own address
    w.observe(fdb(BRIDGE, POD_MAC, { state: PERMANENT })); // the bridge's own address
    const self: NeighEntry = {
      family: AF_BRIDGE,
      ifindex: OTHER,
      state: PERMANENT,
      flags: NTF_SELF,
      lladdr: mac(POD_MAC),
    };
    w.observe(self);
    w.observe({ ...self, ifindex: PORT, state: REACHABLE }); // a device's own list (VXLAN's: any state)
    w.observe(fdb(OTHER), true); // a removal: it was seen where it was added
    expect(w.verdict().fdb).toEqual({ kind: 'not-learned' });
  });

  it('takes an entry on the own port without NDA_MASTER as on the bridge', () => {
    expect(seen({ ...fdb(PORT), master: undefined }).fdb.kind).toBe('converged');
  });

  it('takes a non-local entry pointing at the bridge itself as another port', () => {
    expect(seen(fdb(PORT), fdb(BRIDGE)).fdb).toEqual({ kind: 'duplicate', port: 'veth-pod', others: ['cni0'] });
  });

  it('ignores an FDB entry without a MAC', () => {
    expect(seen({ ...fdb(OTHER), lladdr: undefined }).fdb.kind).toBe('not-learned');
  });
});

describe('NodeWatch: the neighbour table', () => {
  it("converges on the pod's MAC, and keeps the latest state", () => {
    expect(seen(v4(5, OLD_MAC, STALE), v4(5, POD_MAC, DELAY), v6(POD_MAC)).neighbours).toEqual([
      { address: '10.88.9.5', kind: 'converged' },
      { address: 'fd00:88:9::5', kind: 'converged' },
    ]);
  });

  it('reports an entry still holding another MAC as stale, naming that MAC', () => {
    expect(seen(v4(5, OLD_MAC, STALE), v6(POD_MAC)).neighbours).toEqual([
      { address: '10.88.9.5', kind: 'stale', mac: OLD_MAC },
      { address: 'fd00:88:9::5', kind: 'converged' },
    ]);
  });

  it('takes an entry without a MAC (INCOMPLETE, FAILED) or a removed one as absent', () => {
    const w = watch();
    w.observe(v4(5, OLD_MAC, STALE));
    w.observe(v4(5, undefined, FAILED));
    w.observe(v6(OLD_MAC));
    w.observe(v6(undefined, INCOMPLETE));
    expect(w.verdict().neighbours.map((n) => n.kind)).toEqual(['absent', 'absent']);
    w.observe(v4(5, OLD_MAC, STALE));
    w.observe(v4(5, OLD_MAC, STALE), true);
    expect(w.verdict().neighbours[0]).toEqual({ address: '10.88.9.5', kind: 'absent' });
  });

  it('does not trust a MAC in an entry whose state holds none', () => {
    expect(seen(v4(5, OLD_MAC, FAILED)).neighbours[0]?.kind).toBe('absent');
  });

  it('ignores entries on other links, of other addresses or families, and proxy entries', () => {
    const verdict = seen(
      v4(5, OLD_MAC, STALE, { ifindex: PORT }),
      v4(6, OLD_MAC, STALE),
      v4(5, OLD_MAC, STALE, { family: AF_INET6 }),
      v4(5, OLD_MAC, STALE, { flags: NTF_PROXY }),
      v4(5, OLD_MAC, STALE, { dst: undefined }),
      { ...v6(OLD_MAC), dst: Buffer.from('fd000088000900000000000000000006', 'hex') },
    );
    expect(verdict.neighbours.map((n) => n.kind)).toEqual(['absent', 'absent']);
  });

  it('does not take the FDB for the neighbour table or the other way round', () => {
    // An FDB entry with NDA_DST (as VXLAN has); a neighbour on the pod's port, holding its MAC.
    expect(seen({ ...v4(5, OLD_MAC, STALE), family: AF_BRIDGE }, { ...fdb(PORT), family: AF_INET })).toEqual(seen());
  });

  it('matches addresses by their bytes whatever their text, and reports them canonically, once each', () => {
    const w = watch(['fd00:0088:0009:0000::0005', 'fd00:88:9::5', '10.88.9.5']);
    w.observe(v6(POD_MAC));
    expect(w.verdict().neighbours).toEqual([
      { address: 'fd00:88:9::5', kind: 'converged' },
      { address: '10.88.9.5', kind: 'absent' },
    ]);
  });

  it('keeps its own copy of the MAC it saw', () => {
    const w = watch();
    const entry = v4(5, OLD_MAC, STALE);
    w.observe(entry);
    entry.lladdr!.fill(0);
    expect(w.verdict().neighbours[0]).toEqual({ address: '10.88.9.5', kind: 'stale', mac: OLD_MAC });
  });

  it('refuses a pod with a bad MAC or address', () => {
    const pod = { mac: POD_MAC, portIndex: PORT, portName: 'p', bridgeIndex: BRIDGE, addresses: ['10.88.9.5'] };
    expect(() => new NodeWatch({ ...pod, mac: 'nope' }, String)).toThrow(RangeError);
    expect(() => new NodeWatch({ ...pod, addresses: ['10.88.9.5/24'] }, String)).toThrow(RangeError);
  });
});

describe('describeNodeVerdict', () => {
  it('says each verdict in one line', () => {
    expect(
      describeNodeVerdict({
        fdb: { kind: 'converged', port: 'veth-pod' },
        neighbours: [
          { address: '10.88.9.5', kind: 'converged' },
          { address: 'fd00:88:9::5', kind: 'absent' },
        ],
      }),
    ).toBe('fdb converged on veth-pod; neighbours: 10.88.9.5 converged, fd00:88:9::5 absent');
    expect(
      describeNodeVerdict({
        fdb: { kind: 'duplicate', port: 'veth-pod', others: ['veth-twin', 'veth-third'] },
        neighbours: [{ address: '10.88.9.5', kind: 'stale', mac: OLD_MAC }],
      }),
    ).toBe(
      'fdb duplicate MAC on veth-twin, veth-third (pod port veth-pod); ' +
        `neighbours: 10.88.9.5 stale (held by ${OLD_MAC})`,
    );
    expect(describeNodeVerdict({ fdb: { kind: 'not-learned' }, neighbours: [] })).toBe(
      'fdb not learned; neighbours: none',
    );
  });
});
