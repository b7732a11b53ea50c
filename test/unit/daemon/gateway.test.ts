// The gateway check and the node-local proof in the announcer's loop (src/daemon/gateway.ts), driven through the table
// as the loop drives it: an ask right after ADD and after each round until the verdict is final, the budget holding an
// ask, the verdict in status and the record; on a bridged host (fake-bridged-host.ts), the node window that opens with
// round 1's first ask, reads the node's entries, follows its notifications, and gives its proofs once it closes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { firstVerdict, type GatewayVerdict } from '../../../src/announce/gateway-verdict';
import { openSession } from '../../../src/announce/session';
import { parseArp } from '../../../src/wire/arp';
import { parseIPv4 } from '../../../src/wire/ip';
import { gatewayReply, jobRecord, link, POD_MAC, TableWorld, writeJob } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import {
  BRIDGE,
  BridgedHost,
  bridgedPodLink,
  fdbEntry,
  neighEntry,
  neighNotification,
  PORT,
  TWIN,
  WINDOW_FD,
} from '../../support/fake-bridged-host';
import { renameSync, writeFileSync } from 'node:fs';

const GW = { interface: 'eth0', gateway: '10.88.0.1' };
/** The fd of FakePod's receiver. */
const RECEIVER = 60;
const OTHER_MAC = Buffer.from('0a580a5800aa', 'hex');

let w: TableWorld;
let host: BridgedHost;
beforeEach(() => {
  w = new TableWorld();
  w.pod.arpFrames = [];
  host = new BridgedHost();
});
afterEach(() => w.state.remove());

/** A job whose round 1 went out now, with the check on (windows of 200 ms). */
const checked = (extra: Partial<BackgroundJob> = {}): BackgroundJob =>
  w.sentAgo(0, { gatewayCheck: { windowMs: 200, gateways: [GW] }, ...extra });
/** ADD hands a checked job over with its verdict (pending unless said). */
const added = (extra: Partial<BackgroundJob> = {}, gateway: GatewayVerdict = firstVerdict([GW])): string =>
  w.add(checked(extra), { gateway });
/** The gateway check's requests among the frames sent (GARPs left out). */
const asked = (): number =>
  w.pod.sent.filter((f) => {
    const arp = parseArp(f);
    return arp && !arp.senderIp.equals(arp.targetIp);
  }).length;
const verdictOf = (): GatewayVerdict | undefined => w.status()[0]?.gateway;
/** Each write of a record takes the attachment's lock once: how many so far. */
function writes(): () => number {
  let n = 0;
  const take = w.a.attachmentLocks.take.bind(w.a.attachmentLocks);
  w.a.attachmentLocks.take = (...args) => (n++, take(...args));
  return () => n;
}
/** The pod's eth0 becomes a veth whose host side is a port of bridge cni0. */
function bridged(): void {
  w.pod.links = [bridgedPodLink()];
  w.pod.hostSide = (groups) => host.sockets(groups);
}

describe('the gateway check in the table of work', () => {
  it('asks right after ADD, once per round, and is final (no-answer) only after the last window', async () => {
    let polls = 0;
    // A receiver says itself when it holds nothing.
    w.a.libc = fakeLibc({ pollIn: (fds) => (polls++, fds.map(() => true)) });
    const name = added();
    expect(w.wakeIn()).toBe(0);
    await w.at(0);
    // It wakes at the window's end, before round 2.
    const got = { asked: asked(), gateway: w.a.counters.gateway, wake: w.wakeIn() };
    expect(got).toMatchObject({ asked: 1, gateway: { asks: 1, requests: 1 }, wake: 200 });
    expect(w.a.jobs.eventFds()).toContain(RECEIVER);
    await w.at(100);
    expect(polls).toBe(0); // nothing to read while the receiver is quiet and the window open
    await w.at(199, [RECEIVER]);
    await w.at(200, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 1 });
    expect(w.closed).toContain(RECEIVER); // with the packet sockets of the pod sessions
    await w.at(500);
    expect(asked()).toBe(1); // no ask between rounds
    await w.at(1000); // round 2
    expect(asked()).toBe(2);
    await w.at(1200, [RECEIVER]);
    await w.at(3000); // round 3, the last
    expect(asked()).toBe(3);
    await w.at(3199, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 2 });
    expect(w.a.jobs.size).toBe(1); // kept alive while the last ask's window is open
    await w.at(3200, [RECEIVER]);
    expect(w.a.jobs.size).toBe(0);
    const verdict = { result: 'no-answer', answered: [], unanswered: [GW], asks: 3 };
    expect(w.status()).toEqual([expect.objectContaining({ roundsSent: 3, gateway: expect.objectContaining(verdict) })]);
    expect(w.a.counters.gateway.noAnswer).toBe(1);
    expect(w.recorded(name).gateway).toEqual(expect.objectContaining(verdict));
    w.a.jobs.cancel(name);
    expect(w.status()).toEqual([]);
  });

  it('is answered once the gateway answered, asks no more, and wakes for nothing but its rounds', async () => {
    const answers: number[] = [];
    w.a.metrics.observe = (_histogram, seconds) => void answers.push(seconds);
    const name = added();
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    await w.at(7, [RECEIVER]);
    const verdict = { result: 'answered', answered: [{ ...GW, mac: '52:54:00:12:34:56', afterMs: 7 }], asks: 1 };
    expect(verdictOf()).toMatchObject(verdict);
    expect(w.a.counters.gateway.answered).toBe(1);
    expect(answers).toEqual([0.007]);
    expect(w.recorded(name).gateway).toMatchObject(verdict);
    const final = 'gateway check: answered: 10.88.0.1 by 52:54:00:12:34:56 after 7 ms (eth0)';
    const got = w.logged(final);
    expect(got).toMatchObject([{ level: 'info', fields: { gateway: expect.stringContaining('"asks":1') } }]);
    await w.at(1000);
    expect(w.wakeIn()).toBe(2000); // round 3: no ask planned
    await w.at(3000);
    expect({ asked: asked(), probes: w.pod.probes, size: w.a.jobs.size }).toEqual({ asked: 1, probes: 1, size: 0 });
    expect(w.status()).toEqual([expect.objectContaining({ gateway: expect.objectContaining(verdict) })]);
  });

  it('observes each answer of two gateways once, timed from round 1, in the window it came in', async () => {
    const GWS = [GW, { interface: 'eth0', gateway: '10.88.0.254' }];
    const answers: number[] = [];
    w.a.metrics.observe = (_histogram, seconds) => void answers.push(seconds);
    w.add(w.sentAgo(0, { gatewayCheck: { windowMs: 200, gateways: GWS } }), { gateway: firstVerdict(GWS) });
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    await w.at(7, [RECEIVER]);
    await w.at(200, [RECEIVER]);
    expect(answers).toEqual([0.007]);
    const mac = Buffer.from('525400abcdef', 'hex');
    const ips = [parseIPv4('10.88.0.254'), POD_MAC, parseIPv4('10.88.0.5')];
    w.pod.arpFrames = [Buffer.concat([POD_MAC, mac, Buffer.from('08060001080006040002', 'hex'), mac, ...ips])];
    // The ARP requests for a gateway's address, by the address asked (bytes 38 to 41 of the frame).
    const asked = () =>
      w.pod.sent
        .filter((f) => f.readUInt16BE(12) === 0x0806 && f.readUInt16BE(20) === 1)
        .map((f) => [...f.subarray(38, 42)].join('.'))
        .filter((ip) => ip !== '10.88.0.5');
    expect(asked()).toEqual(['10.88.0.1', '10.88.0.254']);
    await w.at(1000); // round 2 asks the one left, and only that one
    expect(asked()).toEqual(['10.88.0.1', '10.88.0.254', '10.88.0.254']);
    await w.at(1010, [RECEIVER]);
    expect(answers).toEqual([0.007, 1.01]);
    expect(verdictOf()).toMatchObject({
      result: 'answered',
      answered: [
        { gateway: '10.88.0.1', afterMs: 7 },
        { gateway: '10.88.0.254', afterMs: 1010 },
      ],
      unanswered: [],
      asks: 2,
    });
  });

  it('plans its first ask and node window at boot ms 0 too: they wake the loop and keep a one-round job', () => {
    w.timers.bootMs = () => w.timers.now();
    added({ schedule: [0] });
    expect([w.a.jobs.wakeAt(0), w.a.jobs.size]).toEqual([0, 1]);
  });

  const oneVisitTitle =
    "opens the node-local proof with round 1's first ask, in one visit of the pod; the verdict carries it (a pod " +
    'whose host side is no bridge port: unseen, said at once)';
  it(oneVisitTitle, async () => {
    const name = added();
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    const got = verdictOf()?.node;
    expect(got).toEqual([{ interface: 'eth0', unseen: expect.stringContaining('cannot see the segment') }]);
    expect([w.pod.opened, w.pod.open]).toEqual([1, 0]); // entered once, and left with the turn
    await w.at(5, [RECEIVER]);
    expect(w.recorded(name).gateway).toMatchObject({ result: 'answered', node: verdictOf()?.node });
  });

  it('a round that falls due while a window is open asks once that window closes, and is not the last', async () => {
    added({ schedule: [0, 100] }); // round 2 inside the first 200 ms window
    await w.at(0);
    await w.at(100); // round 2
    expect([asked(), w.wakeIn()]).toEqual([1, 100]); // the open window's end, over the ask planned now
    await w.at(200, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 1 });
    await w.at(201);
    expect(asked()).toBe(2);
    await w.at(401, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'no-answer', asks: 2 });
  });

  it(
    'an answer that makes the verdict final drops the ask a ' +
      'round planned meanwhile: the work ends, waking nothing',
    async () => {
      added({ schedule: [0, 100] });
      w.pod.arpFrames = [gatewayReply()];
      await w.at(0);
      await w.at(100); // round 2, the last, while the window is open: it plans an ask
      await w.at(150, [RECEIVER]);
      expect([verdictOf()?.result, w.a.jobs.size, w.wakeIn()]).toEqual(['answered', 0, Infinity]);
    },
  );

  it('a recovered job with rounds left asks after its next round', async () => {
    writeJob(w.state, checked());
    w.a.jobs.recover(new Map());
    await w.at(0);
    expect([asked(), w.wakeIn()]).toEqual([0, 1000]);
    await w.at(1000);
    expect(asked()).toBe(1);
  });

  const replacedTitle =
    'a recovered job without rounds left asks at once, but never from a pod that came after it (the netns path ' +
    'names another netns): it enters nothing, and its verdict is no-answer';
  it(replacedTitle, async () => {
    writeJob(w.state, checked({ firstRoundAt: w.now() - 5000, schedule: [0] }));
    writeFileSync(`${w.state.netns}.new`, '');
    renameSync(`${w.state.netns}.new`, w.state.netns); // another netns at the path
    w.a.jobs.recover(new Map());
    expect(w.wakeIn()).toBe(0);
    await w.at(0);
    expect({ asked: asked(), opened: w.pod.opened, size: w.a.jobs.size }).toEqual({ asked: 0, opened: 0, size: 0 });
    expect(verdictOf()).toMatchObject({ result: 'no-answer', asks: 0 });
  });

  const heldTitle =
    'an ask the budget holds back waits for its tokens, taking no ' +
    "credit, and times its answer from round 1 on the loop's clock";
  it(heldTitle, async () => {
    w.a.budget.answers.push(300);
    const name = added();
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    expect(w.a.budget.calls).toEqual([{ rounds: 'later', frames: 1, onCredit: false, at: w.now() }]);
    expect([asked(), w.wakeIn()]).toEqual([0, 300]);
    await w.at(299);
    expect(asked()).toBe(0);
    await w.at(300);
    expect(asked()).toBe(1);
    await w.at(307, [RECEIVER]);
    expect(w.recorded(name).gateway).toMatchObject({ result: 'answered', answered: [{ afterMs: 307 }] });
  });

  it(
    'a check that throws is counted and logged, and the ' + 'rounds keep their schedule (it is no failed round)',
    async () => {
      w.pod.arpFrames = undefined; // the ask cannot open its receivers: it throws
      added();
      await w.at(0);
      expect([w.a.counters.errors, w.pod.sent]).toEqual([1, []]);
      const found = w.logged('gateway check failed');
      expect(found).toMatchObject([{ level: 'error', fields: { error: 'no ARP receivers here' } }]);
      await w.at(1000);
      expect(w.pod.sent).toHaveLength(1); // round 2, on time
      expect(w.status()).toMatchObject([{ roundsSent: 2, nextRoundInMs: 2000 }]);
    },
  );

  it('a verdict it cannot record is counted and logged', async () => {
    added({ schedule: [0] });
    w.a.stateDir = `${w.state.dir}/missing`;
    await w.at(0);
    await w.at(200, [RECEIVER]);
    const what = 'cannot record the gateway check: an announcer started later would not show it';
    expect(w.logged(what)).toMatchObject([{ level: 'warn', fields: { error: expect.stringContaining('ENOENT') } }]);
    expect([w.a.counters.errors, verdictOf()?.result]).toEqual([1, 'no-answer']);
  });
});

describe('the node window on a bridged host', () => {
  beforeEach(bridged);
  const CONVERGED = [
    {
      interface: 'eth0',
      seen: { fdb: { kind: 'converged', port: 'vethpod' }, neighbours: [{ address: '10.88.0.5', kind: 'absent' }] },
    },
  ];

  const oneWriteTitle =
    'opens with the first ask in one visit, follows the FDB, and records the final verdict once, with its proofs';
  it(oneWriteTitle, async () => {
    const written = writes();
    const name = added();
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    const got = { windows: host.windows, visits: w.pod.opened, open: w.pod.open };
    expect(got).toEqual({ windows: 1, visits: 1, open: 0 });
    expect(w.a.jobs.eventFds()).toEqual(expect.arrayContaining([RECEIVER, WINDOW_FD]));
    await w.at(7, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'answered' });
    expect([written(), w.recorded(name).gateway]).toEqual([0, undefined]); // recorded when the window closes
    expect(w.wakeIn()).toBe(193); // the window's end at 200, before round 2 at 1000
    host.queued = [neighNotification(fdbEntry(PORT))];
    await w.at(50, [WINDOW_FD]);
    await w.at(199);
    expect({ windowsClosed: host.windowsClosed, node: verdictOf()?.node }).toEqual({ windowsClosed: 0 });
    await w.at(200);
    expect([host.windowsClosed, w.a.jobs.eventFds()]).toEqual([1, []]);
    expect(verdictOf()).toMatchObject({ result: 'answered', node: CONVERGED });
    expect(written()).toBe(1);
    expect(w.recorded(name).gateway).toMatchObject({ result: 'answered', node: CONVERGED });
    expect(w.logged('node view: eth0: fdb converged on vethpod; neighbours: 10.88.0.5 absent')).toHaveLength(1);
  });

  it('keeps a one-round job alive while its window is open, after a final verdict', async () => {
    added({ schedule: [0] });
    w.pod.arpFrames = [gatewayReply()];
    await w.at(0);
    await w.at(7, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'answered' });
    await w.at(100);
    expect(w.a.jobs.size).toBe(1);
    await w.at(200);
    expect(w.a.jobs.size).toBe(0);
    expect(w.a.counters.nodeMismatches).toEqual({ duplicateMac: 0, staleNeighbour: 0, notLearned: 1 });
    expect(verdictOf()?.node).toMatchObject([{ seen: { fdb: { kind: 'not-learned' } } }]);
  });

  it('reads the notifications only when its socket is readable', async () => {
    added({ schedule: [0] });
    await w.at(0);
    host.queued = [neighNotification(fdbEntry(PORT))];
    await w.at(200);
    expect(verdictOf()?.node).toMatchObject([{ seen: { fdb: { kind: 'not-learned' } } }]);
  });

  it('reads the entries again when notifications overflowed', async () => {
    host.dumped = [fdbEntry(PORT)];
    added({ schedule: [0] });
    await w.at(0);
    host.dumped = [fdbEntry(PORT), fdbEntry(TWIN)]; // the MAC on another port meanwhile
    host.overflowed = true;
    await w.at(100, [WINDOW_FD]);
    expect(host.calls.filter((c) => c.startsWith('get fdb'))).toHaveLength(2);
    await w.at(200);
    expect(host.calls.filter((c) => c.startsWith('dump'))).toEqual([]);
    const got = verdictOf()?.node;
    expect(got).toMatchObject([{ seen: { fdb: { kind: 'duplicate', port: 'vethpod', others: ['vethtwin'] } } }]);
  });

  const heldAskTitle =
    'a window that closes before the verdict is final leaves the record alone until the verdict is; the loop wakes ' +
    'for whichever comes first, the window or the ask';
  it(heldAskTitle, async () => {
    w.a.budget.answers.push(300); // the first ask waits for its tokens: the window closes first
    const written = writes();
    const name = added();
    host.dumped = [fdbEntry(PORT), fdbEntry(TWIN)];
    await w.at(0);
    expect(w.wakeIn()).toBe(200); // the window's end, before the held ask at 300
    host.queued = [neighNotification(fdbEntry(TWIN))];
    await w.at(100, [WINDOW_FD]);
    await w.at(200);
    const node = [
      {
        interface: 'eth0',
        seen: {
          fdb: { kind: 'duplicate', port: 'vethpod', others: ['vethtwin'] },
          neighbours: [{ address: '10.88.0.5', kind: 'absent' }],
        },
      },
    ];
    expect(verdictOf()).toMatchObject({ result: 'pending', node });
    expect(w.a.counters.nodeMismatches.duplicateMac).toBe(1);
    expect([written(), w.recorded(name).gateway]).toEqual([0, undefined]);
    await w.at(300);
    expect(w.wakeIn()).toBe(200); // the ask's window's end, the node's closed
    await w.at(500, [RECEIVER]);
    expect([verdictOf()?.result, w.recorded(name).gateway]).toEqual(['pending', undefined]);
    for (const t of [1000, 1200, 3000, 3200]) await w.at(t, [RECEIVER]);
    expect(w.recorded(name).gateway).toMatchObject({ result: 'no-answer', node });
    expect(host.windows).toBe(1); // one window, after round 1 only
  });

  it('wakes for an ask held back less long than the window', async () => {
    w.a.budget.answers.push(100);
    added();
    await w.at(0);
    expect(w.wakeIn()).toBe(100);
  });

  it('DEL while the window is open closes it, and no proof is taken', async () => {
    const name = added();
    await w.at(0);
    w.a.jobs.cancel(name);
    expect(host.windowsClosed).toBe(1);
    await w.at(200, [WINDOW_FD]);
    expect({ windows: host.windows, status: w.status() }).toEqual({ windows: 1, status: [] });
  });

  it('a deferred round 1 asks and opens the window once it is out, not before', async () => {
    w.pod.links = [{ ...bridgedPodLink(), up: false }];
    w.add(w.waiting({ gatewayCheck: { windowMs: 200, gateways: [GW] } }), { gateway: firstVerdict([GW]) });
    await w.at(0);
    expect({ asks: w.a.counters.gateway.asks, windows: host.windows }).toEqual({ asks: 0, windows: 0 });
    w.pod.links = [bridgedPodLink()];
    await w.at(500);
    const got = { sent: w.a.counters.rounds.sent, asks: w.a.counters.gateway.asks, windows: host.windows };
    expect(got).toEqual({ sent: 1, asks: 1, windows: 1 });
  });
});

describe('what the node window reads', () => {
  beforeEach(bridged);

  it.each([
    ['a macvlan interface', () => void (w.pod.links = [link({ kind: 'macvlan' })]), 'a macvlan interface'],
    [
      'a veth whose host side is no bridge port',
      () => void (host.ns.links[0]!.master = undefined),
      'its host-side veth is no bridge port',
    ],
  ])('says why the node cannot see %s, opening no window', async (_, make, why) => {
    make();
    added();
    await w.at(0);
    expect(verdictOf()?.node).toEqual([{ interface: 'eth0', unseen: `${why}: the node cannot see the segment` }]);
    expect([host.windows, host.calls]).toEqual([0, []]);
  });

  it('subscribes to neighbour notifications before it reads the entries, one get each', async () => {
    host.dumped = [fdbEntry(PORT), neighEntry('10.88.0.5', POD_MAC)];
    added({ schedule: [0] });
    await w.at(0);
    expect(host.calls).toEqual(['open [3]', `get fdb ${BRIDGE}`, `get neigh 2 ${BRIDGE}`]);
    await w.at(200);
    expect(verdictOf()?.node).toEqual([
      {
        interface: 'eth0',
        seen: {
          fdb: { kind: 'converged', port: 'vethpod' },
          neighbours: [{ address: '10.88.0.5', kind: 'converged' }],
        },
      },
    ]);
  });

  it.each([
    ['no entry in VLAN 0 (a VLAN-filtering bridge)', undefined, [{ ...fdbEntry(PORT), vlan: 10 }]],
    ['a kernel before Linux 5.0 (EOPNOTSUPP)', 95, [fdbEntry(PORT)]],
  ])('dumps the tables where a get cannot tell: %s', async (_, getsFail, fdb) => {
    host.getsFail = getsFail;
    host.dumped = [...fdb, neighEntry('10.88.0.5', OTHER_MAC)];
    added({ schedule: [0] });
    await w.at(0);
    expect(host.calls).toEqual(['open [3]', `get fdb ${BRIDGE}`, 'dump 7', 'dump 2', 'dump 10']);
    await w.at(200);
    expect(verdictOf()?.node).toMatchObject([
      { seen: { fdb: { kind: 'converged' }, neighbours: [{ kind: 'stale', mac: '0a:58:0a:58:00:aa' }] } },
    ]);
  });

  it("counts and logs any other failure of a get, dumping nothing, and closes the window's socket", async () => {
    host.getsFail = 16; // EBUSY
    added();
    await w.at(0);
    const found = w.logged('gateway check failed');
    expect(found).toMatchObject([{ level: 'error', fields: { error: expect.stringMatching(/EBUSY/) } }]);
    const got = { errors: w.a.counters.errors, dumps: host.calls.filter((c) => c.startsWith('dump')) };
    expect(got).toEqual({ errors: 1, dumps: [] });
    expect([host.windows, host.windowsClosed]).toEqual([1, 1]);
  });

  it('counts the mismatches by kind, and says what the node saw in one line', async () => {
    w.pod.links = [bridgedPodLink(), link({ index: 3, name: 'net1', kind: 'macvlan' })];
    const eth0 = { name: 'eth0', ipv4: ['10.88.0.5', '10.88.0.6'], ipv6: [] };
    added({ interfaces: [eth0, { name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] }], schedule: [0] });
    host.dumped = [
      fdbEntry(PORT),
      fdbEntry(TWIN),
      neighEntry('10.88.0.5', OTHER_MAC),
      neighEntry('10.88.0.6', OTHER_MAC),
    ];
    await w.at(0);
    await w.at(200);
    expect(w.a.counters.nodeMismatches).toEqual({ duplicateMac: 1, notLearned: 0, staleNeighbour: 2 });
    const line =
      'node view: eth0: fdb duplicate MAC on vethtwin (pod port vethpod); neighbours: 10.88.0.5 stale (held by ' +
      '0a:58:0a:58:00:aa), 10.88.0.6 stale (held by 0a:58:0a:58:00:aa); net1: a macvlan interface: the node cannot ' +
      'see the segment';
    expect(w.logged(line)).toHaveLength(1);
  });
});

describe('the check when the pod cannot be asked from now', () => {
  beforeEach(bridged);

  it('a pod that cannot be entered: no window, no ask, nothing thrown; it asks after the next round', async () => {
    const name = added();
    w.pod.openError = new Error('no netns');
    await w.at(0);
    const got = { windows: host.windows, asks: w.a.counters.gateway.asks, errors: w.a.counters.errors };
    expect(got).toEqual({ windows: 0, asks: 0, errors: 0 });
    expect(verdictOf()).toEqual(firstVerdict([GW])); // no node proof when the pod was not seen
    const shown = w.logged('gateway check: cannot ask now');
    expect(shown).toMatchObject([{ fields: { why: 'cannot enter pod netns: no netns' } }]);
    w.pod.openError = undefined;
    w.pod.arpFrames = [gatewayReply()];
    await w.at(1000); // round 2
    await w.at(1010, [RECEIVER]);
    expect(w.recorded(name).gateway).toMatchObject({ result: 'answered', answered: [{ afterMs: 1010 }] });
    expect(w.recorded(name).gateway?.node).toBeUndefined();
  });

  it('a pod not ready to ask from asks after the next round', async () => {
    added();
    w.pod.links = [{ ...bridgedPodLink(), up: false }];
    await w.at(0);
    // It wakes at the node window's end: no ask is planned before round 2.
    const got = { asks: w.a.counters.gateway.asks, errors: w.a.counters.errors, wake: w.wakeIn() };
    expect(got).toEqual({ asks: 0, errors: 0, wake: 200 });
    w.pod.links = [bridgedPodLink()];
    await w.at(1000);
    expect(w.a.counters.gateway.asks).toBe(1);
  });

  it('a pod with no address to ask from sends nothing and counts no ask', async () => {
    added({ interfaces: [{ name: 'eth0', ipv4: ['10.88.0.9'], ipv6: [] }] });
    await w.at(0);
    const got = { asks: w.a.counters.gateway.asks, errors: w.a.counters.errors, sent: w.pod.sent.length };
    expect(got).toEqual({ asks: 0, errors: 0, sent: 0 });
  });

  it('a work that ends with its check pending (the pod gone) settles it as no-answer, counted', async () => {
    const name = added();
    await w.at(0);
    await w.at(200, [RECEIVER]);
    w.pod.links = [];
    await w.at(1000); // round 2 finds eth0 gone: the work ends
    expect(w.a.jobs.size).toBe(0);
    const got = { noAnswer: w.a.counters.gateway.noAnswer, result: verdictOf()?.result };
    expect(got).toEqual({ noAnswer: 1, result: 'no-answer' });
    expect(w.recorded(name).gateway).toMatchObject({ result: 'no-answer', asks: 1 });
  });
});

describe("ADD's open session", () => {
  beforeEach(bridged);
  /** ADD's session on the pod, still open, as ADD hands it to the table with its job. */
  const session = (job: BackgroundJob) =>
    openSession({ open: w.pod.opener(), closeInBackground: w.a.closeInBackground }, job.netns, ['eth0'], []);
  const handed = (job: BackgroundJob, gateway?: GatewayVerdict): boolean =>
    w.a.jobs.added(
      writeJob(w.state, job),
      jobRecord(job),
      { sent: { garpRequest: 1, garpReply: 0, na: 0 }, gateway },
      session(job),
    );

  it.each([
    ['the ask and the node window', firstVerdict([GW]), 1],
    [
      'the node window alone, when ADD (require) has the final verdict',
      { ...firstVerdict([GW]), result: 'answered' as const, unanswered: [], asks: 1 },
      0,
    ],
  ])(
    "serves the check's first visit (%s): the pod is not entered again, and the session closes with that turn",
    async (_, verdict, asks) => {
      w.pod.arpFrames = [gatewayReply()];
      expect(handed(checked(), verdict)).toBe(true);
      expect([w.pod.opened, w.pod.open]).toEqual([1, 1]);
      await w.at(0);
      expect({ windows: host.windows, asks: w.a.counters.gateway.asks }).toEqual({ windows: 1, asks });
      const got = { opened: w.pod.opened, open: w.pod.open, released: w.pod.released.length };
      expect(got).toEqual({ opened: 1, open: 0, released: 1 });
    },
  );

  it('is closed when the work ends before its first visit (DEL), and is not kept without a visit due', () => {
    expect(handed(checked(), firstVerdict([GW]))).toBe(true);
    expect(w.a.jobs.cancel('c1@eth0.json')).toBe(true);
    expect([w.pod.opened, w.pod.open]).toEqual([1, 0]);
    expect(handed(w.sentAgo(0))).toBe(false); // no gateway check: nothing to visit
    expect(handed({ ...checked(), firstRoundAt: undefined }, firstVerdict([GW]))).toBe(false); // round 1 not sent yet
  });
});
