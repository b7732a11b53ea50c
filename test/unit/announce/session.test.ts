import { beforeEach, describe, expect, it } from 'vitest';
import {
  netnsSockets,
  openSession,
  readiness,
  waitReady,
  type AnnounceTarget,
  type PodSession,
  type ResolvedInterface,
  type SocketOpener,
} from '../../../src/announce/session';
import type { Waits } from '../../../src/announce/context';
import type { Libc } from '../../../src/sys/libc';
import type { HostSockets, PodSockets } from '../../../src/sys/netns';
import { RtnlEvents } from '../../../src/sys/rtnl';
import { PortState } from '../../../src/wire/rtnetlink';
import { fakeLibc } from '../../support/fake-libc';
import { fakeAddress, fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from '../../support/fake-rtnl';
import { ManualTimers } from '../../support/manual-timers';

const POD_EVENTS = 50;
const HOST_EVENTS = 51;

/** A pod with eth0 (veth peer veth7 in the host, forwarding) and net1 (macvlan), each with one address. */
function world(): { pod: FakeNetns; host: FakeNetns } {
  return {
    pod: fakeNetns({
      links: [
        fakeLink({ index: 2, name: 'eth0', linkIndex: 7, linkNetnsid: 0 }),
        fakeLink({ index: 3, name: 'net1', kind: 'macvlan' }),
      ],
      addresses: [fakeAddress(2, '10.88.0.5'), fakeAddress(3, '10.89.0.7')],
    }),
    host: fakeNetns({
      links: [fakeLink({ index: 7, name: 'veth7', linkIndex: 2, linkNetnsid: 3 })],
      ports: new Map([[7, PortState.Forwarding]]),
    }),
  };
}

/** What the opener and libc were asked, in order. */
interface Trace {
  calls: string[];
}

/** Libc for the event sockets: each socket has one queued notification to drain. */
function eventLibc(trace: Trace): Libc {
  const queued = new Set([POD_EVENTS, HOST_EVENTS]);
  return fakeLibc({
    recvNow: (fd) => {
      trace.calls.push(`recv ${fd}`);
      if (!queued.delete(fd)) return undefined;
      queued.add(-fd); // refilled by the next change
      return 20;
    },
  });
}

function opener(w: { pod: FakeNetns; host: FakeNetns }, libc: Libc, trace: Trace): SocketOpener {
  return {
    pod: (netns) => {
      trace.calls.push(`open pod ${netns}`);
      const pod: PodSockets = {
        rtnl: fakeRtnl(w.pod),
        events: new RtnlEvents(libc, POD_EVENTS),
        packet: { send: () => undefined, close: () => undefined, release: () => 60 },
        ipv6Forwarding: false,
        close: () => void trace.calls.push('close pod'),
      };
      return pod;
    },
    host: () => {
      trace.calls.push('open host');
      const host: HostSockets = {
        rtnl: fakeRtnl(w.host),
        events: new RtnlEvents(libc, HOST_EVENTS),
        close: () => void trace.calls.push('close host'),
      };
      return host;
    },
    receivers: () => expect.fail('no probe here'),
  };
}

/** A session on `w` for `names`; `adapt` may change the opener first. What was asked is in `trace`. */
function open(
  w = world(),
  names = ['eth0', 'net1'],
  adapt = (sockets: SocketOpener) => sockets,
  trace: Trace = { calls: [] },
) {
  const sockets = adapt(opener(w, eventLibc(trace), trace));
  const closeInBackground = (fd: number) => void trace.calls.push(`close ${fd} in background`);
  return { session: openSession({ open: sockets, closeInBackground }, '/run/netns/pod', names, []), trace };
}

describe('netnsSockets', () => {
  it('opens the host sockets in the current netns: a request socket, and one subscribed to link changes', () => {
    const calls: string[] = [];
    let fd = 40;
    const libc = fakeLibc({
      openNetlinkSocket: (groups) => (calls.push(`netlink ${++fd} joining [${groups.join(' ')}]`), fd),
      close: (socket) => void calls.push(`close ${socket}`),
    });
    const host = netnsSockets(libc).host();
    expect(host.events.fd).toBe(42);
    expect(calls).toEqual(['netlink 41 joining []', 'netlink 42 joining [1]']);
    host.close();
    expect(calls.slice(2)).toEqual(['close 41', 'close 42']);
  });

  // Entering a pod needs root and a netns: these only show that each call goes to the netns it names.
  it.each([
    ['pod', (libc: Libc) => netnsSockets(libc).pod('/nonexistent/netns-a')],
    ['receivers', (libc: Libc) => netnsSockets(libc).receivers('/nonexistent/netns-a', [2], 0x806)],
  ])('%s enters the netns given (a missing one fails before any syscall)', (_name, call) => {
    expect(() => call(fakeLibc({}))).toThrow('open /nonexistent/netns-a');
  });
});

describe('openSession', () => {
  it('opens the pod, then the host, and resolves each planned name there with its host peer', () => {
    const { session, trace } = open();
    expect(trace.calls).toEqual(['open pod /run/netns/pod', 'open host']);
    expect(session.interfaces).toEqual([
      { name: 'eth0', index: 2, kind: 'veth', ipvlanMode: undefined, hostPeer: { index: 7, name: 'veth7' } },
      { name: 'net1', index: 3, kind: 'macvlan', ipvlanMode: undefined, hostPeer: undefined },
    ]);
    expect(session.missing).toEqual([]);
    expect(session.eventFds).toEqual([POD_EVENTS, HOST_EVENTS]);
  });

  it('lists the planned names the pod does not have', () => {
    const { session } = open(world(), ['eth0', 'net9', 'net8']);
    expect(session.interfaces.map((i) => i.name)).toEqual(['eth0']);
    expect(session.missing).toEqual(['net9', 'net8']);
  });

  it('drains both event sockets on request, and closes the pod and the host', () => {
    const { session, trace } = open();
    trace.calls = [];
    session.drainEvents();
    expect(trace.calls).toEqual([
      `recv ${POD_EVENTS}`,
      `recv ${POD_EVENTS}`,
      `recv ${HOST_EVENTS}`,
      `recv ${HOST_EVENTS}`,
    ]);
    trace.calls = [];
    session.close();
    expect(trace.calls).toEqual(['close 60 in background', 'close pod', 'close host']);
  });

  it('closes the pod when the host sockets cannot be opened', () => {
    const trace: Trace = { calls: [] };
    const err = new Error('socket: EMFILE');
    const failingHost = (sockets: SocketOpener): SocketOpener => ({
      ...sockets,
      host: () => {
        trace.calls.push('open host');
        throw err;
      },
    });
    expect(() => open(world(), ['eth0'], failingHost, trace)).toThrow(err);
    expect(trace.calls).toEqual(['open pod /run/netns/pod', 'open host', 'close pod']);
  });

  it('closes the pod and the host when resolving an interface fails', () => {
    const trace: Trace = { calls: [] };
    const failingLookup = (sockets: SocketOpener): SocketOpener => ({
      ...sockets,
      pod: (netns) => {
        const pod = sockets.pod(netns);
        pod.rtnl.linkByName = () => {
          throw new Error('RTM_GETLINK eth0: ETIMEDOUT');
        };
        return pod;
      },
    });
    expect(() => open(world(), ['eth0'], failingLookup, trace)).toThrow('RTM_GETLINK eth0: ETIMEDOUT');
    expect(trace.calls).toEqual(['open pod /run/netns/pod', 'open host', 'close pod', 'close host']);
  });
});

const targetsOf = (session: PodSession, targets: AnnounceTarget[]): (AnnounceTarget & { iface: ResolvedInterface })[] =>
  targets.map((t) => ({ ...t, iface: session.interfaces.find((i) => i.name === t.name)! }));
const BOTH: AnnounceTarget[] = [
  { name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] },
  { name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] },
];

describe('readiness', () => {
  it('is ready with one input per target, in order', () => {
    const { session } = open();
    const now = readiness(session, targetsOf(session, BOTH));
    expect(now.kind).toBe('ready');
    expect(now.kind === 'ready' && now.inputs.map((i) => [i.name, i.ipv4.map((a) => a.join('.'))])).toEqual([
      ['eth0', ['10.88.0.5']],
      ['net1', ['10.89.0.7']],
    ]);
  });

  it('waits with the reasons of every interface not ready', () => {
    const w = world();
    const { session } = open(w);
    w.pod.links = w.pod.links.map((l) => ({ ...l, running: false }));
    expect(readiness(session, targetsOf(session, BOTH))).toEqual({
      kind: 'waiting',
      reasons: ['eth0 has no carrier', 'net1 has no carrier'],
    });
  });

  it('names the first interface gone, even when another is waiting', () => {
    const w = world();
    const { session } = open(w);
    w.pod.links = [{ ...w.pod.links[0]!, up: false }];
    expect(readiness(session, targetsOf(session, BOTH))).toEqual({ kind: 'gone', name: 'net1' });
  });

  it('is ready with no input for no target', () => {
    const { session } = open();
    expect(readiness(session, [])).toEqual({ kind: 'ready', inputs: [] });
  });
});

describe('waitReady', () => {
  let w: { pod: FakeNetns; host: FakeNetns };
  let timers: ManualTimers;
  beforeEach(() => {
    w = world();
    timers = new ManualTimers();
  });

  /**
   * A session on `w` and injected waits whose readable() runs `onWait` (a change in the pod), which says how long the
   * manual clock moves (default: the whole timeout); `until(timeoutMs)` runs waitReady on both targets.
   */
  function waiting(onWait: (n: number, ms: number) => number | void = () => undefined) {
    let n = 0;
    const waitedMs: number[] = [];
    const { session, trace } = open(w, ['eth0', 'net1']);
    const waits: Waits = {
      readable: async (fds, ms) => {
        trace.calls.push(`wait ${fds.join(',')} ${ms}`);
        waitedMs.push(ms);
        if (n >= 20) throw new Error('waitReady spins: 20 waits');
        timers.advance(onWait(++n, ms) ?? ms);
      },
    };
    const until = (timeoutMs: number) => waitReady(session, targetsOf(session, BOTH), { timeoutMs, timers, waits });
    return { session, until, waitedMs, trace };
  }

  it('returns at once, without waiting, when everything is ready', async () => {
    const { until, waitedMs } = waiting();
    expect((await until(1000)).kind).toBe('ready');
    expect(waitedMs).toEqual([]);
  });

  it('waits on both event sockets through the injected waits, then drains both before it looks again', async () => {
    w.host.ports.set(7, PortState.Learning);
    const { until, trace } = waiting(() => void w.host.ports.set(7, PortState.Forwarding));
    trace.calls = [];
    expect((await until(250)).kind).toBe('ready');
    expect(trace.calls).toEqual([
      `wait ${POD_EVENTS},${HOST_EVENTS} 250`,
      `recv ${POD_EVENTS}`,
      `recv ${POD_EVENTS}`,
      `recv ${HOST_EVENTS}`,
      `recv ${HOST_EVENTS}`,
    ]);
  });

  it('reads again after each change until ready, waiting only for what is left of the timeout', async () => {
    w.host.ports.set(7, PortState.Learning);
    const { until, waitedMs } = waiting((n) => {
      if (n === 2) w.host.ports.set(7, PortState.Forwarding);
      return n === 1 ? 100 : 50; // the first wake-up changes nothing that matters
    });
    expect((await until(1000)).kind).toBe('ready');
    expect(waitedMs).toEqual([1000, 900]);
    expect(timers.now()).toBe(150);
    expect(timers.requested).toEqual([]); // no timer of its own: every wait is the injected one
  });

  it('times out with the reasons of the last look', async () => {
    w.host.ports.set(7, PortState.Listening);
    const { until, waitedMs } = waiting((n) => {
      if (n === 1) w.host.ports.set(7, PortState.Learning);
    });
    expect(await until(1000)).toEqual({ kind: 'timeout', reasons: ['bridge port veth7 is learning'] });
    expect(waitedMs).toEqual([1000]);
    expect(timers.now()).toBe(1000);
  });

  it('looks once with timeoutMs 0, and never waits: ready, or timed out', async () => {
    const { until, waitedMs } = waiting(() => {
      throw new Error('a wait with no time left');
    });
    expect((await until(0)).kind).toBe('ready');
    w.pod.links[0] = { ...w.pod.links[0]!, running: false };
    expect(await until(0)).toEqual({ kind: 'timeout', reasons: ['eth0 has no carrier'] });
    expect(waitedMs).toEqual([]);
  });

  it('rejects with the error of its wait (a stop), or of a look', async () => {
    w.pod.links[0] = { ...w.pod.links[0]!, running: false };
    const stop = new Error('the announcer stops');
    const { session, until } = waiting(() => {
      throw stop;
    });
    await expect(until(1000)).rejects.toBe(stop);
    session.pod.rtnl.linkByIndex = () => {
      throw new Error('RTM_GETLINK: ETIMEDOUT');
    };
    await expect(until(1000)).rejects.toThrow('ETIMEDOUT');
  });

  it('says which interface is gone', async () => {
    w.pod.links[0] = { ...w.pod.links[0]!, running: false };
    const { until } = waiting(() => void (w.pod.links = []));
    expect(await until(1000)).toEqual({ kind: 'gone', name: 'eth0' });
  });
});
