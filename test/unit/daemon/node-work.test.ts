// The node-local proof in the announcer's loop (node-work.ts): which pod
// interfaces the node can see, the window's socket, dumps and notifications,
// and the proofs once the window is over.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log';
import type { NodeProof } from '../../../src/announce/gateway-verdict';
import type { SocketOpener } from '../../../src/announce/session';
import { newCounters } from '../../../src/daemon/counters';
import { countNodeProofs, startNodeWatch, stepNodeWatch, type NodeWork } from '../../../src/daemon/node-work';
import { openForJob } from '../../../src/daemon/pod-visit';
import type { RoundDeps, Work } from '../../../src/daemon/rounds';
import type { HostSockets, PodSockets } from '../../../src/sys/netns';
import type { Rtnl } from '../../../src/sys/rtnl';
import type { RtnlEvents } from '../../../src/sys/rtnl-events';
import type { NetlinkMessage } from '../../../src/wire/netlink';
import { AF_INET, type LinkInfo, type NeighEntry } from '../../../src/wire/rtnetlink';
import { SysError } from '../../../src/sys/sys-error';
import { identityViews } from '../../support/caller-view-fakes';
import { jobIn, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { fdbEntry, neighNotification, neighTables } from '../../support/fake-bridged-host';
import { fakeAddress, fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from '../../support/fake-rtnl';
import { ManualTimers } from '../../support/manual-timers';

const EVENTS_FD = 90;
const POD_MAC = Buffer.from('0a580a580005', 'hex');
const OTHER_MAC = Buffer.from('0a580a5800aa', 'hex');
const PORT = 7;
const BRIDGE = 3;

let state: StateDir;
let podNs: FakeNetns;
let hostNs: FakeNetns;
/** What the host side did, in order: each socket opened with its groups, each dump by family. */
let calls: string[];
/** What the window's event socket holds next. */
let queued: { messages: NetlinkMessage[]; overflowed: boolean };
let dumped: NeighEntry[];
/** When set, the host's gets throw this errno (EOPNOTSUPP: a kernel before 5.0). */
let getsFail: number | undefined;

beforeEach(() => {
  state = makeStateDir();
  podNs = fakeNetns({
    links: [fakeLink({ index: 2, name: 'eth0', mac: POD_MAC, linkIndex: PORT, linkNetnsid: 0 })],
    addresses: [fakeAddress(2, '10.88.0.5')],
  });
  hostNs = fakeNetns({
    links: [
      fakeLink({ index: PORT, name: 'vethpod', linkIndex: 2, linkNetnsid: 1, master: BRIDGE }),
      fakeLink({ index: BRIDGE, name: 'cni0', kind: 'bridge' }),
      fakeLink({ index: 9, name: 'vethtwin' }),
    ],
  });
  calls = [];
  queued = { messages: [], overflowed: false };
  dumped = [];
  getsFail = undefined;
});
afterEach(() => state.remove());

function opener(): SocketOpener {
  const events = (fd: number) => ({ fd, drain: () => undefined, close: () => undefined }) as unknown as RtnlEvents;
  return {
    pod: (): PodSockets => ({
      rtnl: fakeRtnl(podNs),
      events: events(50),
      packet: { send: () => undefined, close: () => undefined, release: () => 60 },
      ipv6Forwarding: false,
      close: () => undefined,
    }),
    host: (_netns, groups): HostSockets => {
      calls.push(`open ${JSON.stringify(groups ?? null)}`);
      const tables = neighTables(() => dumped, calls);
      const failing = <T>(get: T): T => {
        if (getsFail !== undefined) throw new SysError('RTM_GETNEIGH', getsFail);
        return get;
      };
      const rtnl = {
        ...fakeRtnl(hostNs),
        ...tables,
        fdbEntry: (b, m) => failing(tables.fdbEntry(b, m)),
        neighbour: (f, i, d) => failing(tables.neighbour(f, i, d)),
      } as Rtnl;
      const take = () => queued;
      return {
        rtnl,
        events: { fd: EVENTS_FD, take, close: () => undefined } as unknown as RtnlEvents,
        close: () => {
          calls.push('close');
        },
      };
    },
    receivers: () => [],
  };
}

function deps(): RoundDeps {
  return {
    libc: {} as RoundDeps['libc'],
    open: opener(),
    views: identityViews,
    closeInBackground: () => undefined,
    timers: new ManualTimers(),
    budget: () => {
      throw new Error('no budget here');
    },
  } as RoundDeps;
}

function work(): Work {
  const job = jobIn(state, { firstRoundAt: 1000 });
  const log = createLogger(() => undefined, 'debug');
  return {
    name: 'c1@eth0.json',
    job,
    originalMacs: [],
    log,
    firstRoundAt: 1000,
    next: 1,
    dueAt: undefined,
    roundsSent: 1,
    delayed: false,
  };
}

/** The node's neighbour entry on the bridge for the pod's address, held by `mac`. */
const podNeighbour = (mac: Buffer): NeighEntry => ({
  family: AF_INET,
  ifindex: BRIDGE,
  state: 0x02, // REACHABLE
  flags: 0,
  dst: Buffer.from([10, 88, 0, 5]),
  lladdr: mac,
});

/** Starts a window as the check's turn does: its one visit of the pod, opened on first use. */
function watchFrom(now: number, windowMs: number) {
  const d = deps();
  const w = work();
  return startNodeWatch(d, w, now, windowMs, () => openForJob(d, w.job));
}

const started = (): NodeWork => watchFrom(1000, 500) as NodeWork;

describe('startNodeWatch', () => {
  it('says why the node cannot see a non-bridge interface, opening no window', () => {
    podNs.links[0] = { ...podNs.links[0]!, kind: 'macvlan' } as LinkInfo;
    expect(watchFrom(1000, 500)).toEqual([
      { interface: 'eth0', unseen: 'a macvlan interface: the node cannot see the segment' },
    ]);
    hostNs.links[0] = { ...hostNs.links[0]!, master: undefined };
    podNs.links[0] = { ...podNs.links[0]!, kind: 'veth' } as LinkInfo;
    expect(watchFrom(1000, 500)).toEqual([
      { interface: 'eth0', unseen: 'its host-side veth is no bridge port: the node cannot see the segment' },
    ]);
    expect(calls.filter((c) => c.startsWith('dump'))).toEqual([]);
  });

  it('watches a bridged veth, subscribed to neighbour notifications before it reads the entries, one get each', () => {
    dumped = [fdbEntry(PORT), podNeighbour(POD_MAC)];
    const w = started();
    expect(w.until).toBe(1500);
    expect(w.watches.map((x) => x.name)).toEqual(['eth0']);
    expect(calls.slice(-3)).toEqual(['open [3]', `get fdb ${BRIDGE}`, `get neigh ${AF_INET} ${BRIDGE}`]);
    expect(stepNodeWatch(w, 1500, new Set())).toEqual([
      {
        interface: 'eth0',
        seen: {
          fdb: { kind: 'converged', port: 'vethpod' },
          neighbours: [{ address: '10.88.0.5', kind: 'converged' }],
        },
      },
    ]);
  });

  it('dumps where a get cannot tell: nothing in VLAN 0 (a VLAN-filtering bridge), or before Linux 5.0', () => {
    dumped = [{ ...fdbEntry(PORT), vlan: 10 }, podNeighbour(OTHER_MAC)];
    const w = started();
    expect(calls.slice(-5)).toEqual(['open [3]', `get fdb ${BRIDGE}`, 'dump 7', 'dump 2', 'dump 10']);
    expect(stepNodeWatch(w, 1500, new Set())).toMatchObject([
      { seen: { fdb: { kind: 'converged' }, neighbours: [{ kind: 'stale', mac: '0a:58:0a:58:00:aa' }] } },
    ]);
    dumped = [fdbEntry(PORT)];
    getsFail = 95; // EOPNOTSUPP
    started();
    expect(calls.slice(-5)).toEqual(['open [3]', `get fdb ${BRIDGE}`, 'dump 7', 'dump 2', 'dump 10']);
  });

  it('lets any other failure of a get through', () => {
    getsFail = 16; // EBUSY
    expect(() => started()).toThrow(/EBUSY/);
    expect(calls.filter((c) => c.startsWith('dump'))).toEqual([]);
  });
});

describe('stepNodeWatch', () => {
  const converged: NodeProof = {
    interface: 'eth0',
    seen: { fdb: { kind: 'converged', port: 'vethpod' }, neighbours: [{ address: '10.88.0.5', kind: 'absent' }] },
  };

  it('feeds notifications, and gives its proofs only once the window is over', () => {
    const w = started();
    queued = { messages: [neighNotification(fdbEntry(PORT))], overflowed: false };
    expect(stepNodeWatch(w, 1100, new Set([EVENTS_FD]))).toBeUndefined();
    queued = { messages: [], overflowed: false };
    expect(stepNodeWatch(w, 1499, new Set())).toBeUndefined();
    expect(calls.at(-1)).not.toBe('close'); // the window's socket stays open
    expect(stepNodeWatch(w, 1500, new Set())).toEqual([converged]);
    expect(calls.at(-1)).toBe('close');
  });

  it('reads notifications only when its socket is readable', () => {
    const w = started();
    queued = { messages: [neighNotification(fdbEntry(PORT))], overflowed: false };
    expect(stepNodeWatch(w, 1500, new Set())).toMatchObject([{ seen: { fdb: { kind: 'not-learned' } } }]);
  });

  it('reads the entries again when notifications overflowed', () => {
    dumped = [fdbEntry(PORT)];
    const w = started();
    dumped = [fdbEntry(PORT), fdbEntry(9)]; // the MAC moved to port 9 meanwhile
    queued = { messages: [], overflowed: true };
    stepNodeWatch(w, 1100, new Set([EVENTS_FD]));
    expect(calls.filter((c) => c.startsWith('get fdb'))).toHaveLength(2);
    expect(calls.filter((c) => c.startsWith('dump'))).toEqual([]);
    expect(stepNodeWatch(w, 1500, new Set())).toMatchObject([
      { seen: { fdb: { kind: 'duplicate', port: 'vethpod', others: ['vethtwin'] } } },
    ]);
  });
});

describe('countNodeProofs', () => {
  it('counts mismatches by kind and says what the node saw in one line', () => {
    const counters = newCounters();
    const proofs: NodeProof[] = [
      {
        interface: 'eth0',
        seen: {
          fdb: { kind: 'duplicate', port: 'vethpod', others: ['vethtwin'] },
          neighbours: [
            { address: '10.88.0.5', kind: 'stale', mac: OTHER_MAC.toString('hex') },
            { address: '10.88.0.6', kind: 'stale', mac: 'x' },
          ],
        },
      },
      {
        interface: 'net1',
        seen: {
          fdb: { kind: 'not-learned' },
          neighbours: [
            { address: '10.89.0.7', kind: 'stale', mac: 'y' },
            { address: '10.89.0.8', kind: 'converged' },
          ],
        },
      },
      { interface: 'net2', unseen: 'a macvlan interface: the node cannot see the segment' },
    ];
    const line = countNodeProofs(counters, proofs);
    expect(counters.nodeMismatches).toEqual({ duplicateMac: 1, notLearned: 1, staleNeighbour: 3 });
    expect(line).toBe(
      'eth0: fdb duplicate MAC on vethtwin (pod port vethpod); neighbours: 10.88.0.5 stale (held by 0a580a5800aa), ' +
        '10.88.0.6 stale (held by x); net1: fdb not learned; neighbours: 10.89.0.7 stale (held by y), ' +
        '10.89.0.8 converged; ' +
        'net2: a macvlan interface: the node cannot see the segment',
    );
  });
});
