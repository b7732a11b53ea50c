// Round 1 of ADD (first-round.ts), driven through announceOnAdd in the fake world of test/support/add-harness.ts:
// which interfaces are worth waiting for, what a readiness timeout leaves, the node-wide budget's wait and credit,
// that ADD never blocks, the conflict probe before round 1 (another host answers an ARP probe), and the gateway
// check's part after it (the gateway answers, or not, an ARP request from inside the pod).
import { beforeEach, describe, expect, it } from 'vitest';
import type { AddJob } from '../../../src/announce/add';
import { lockWaitMs, type Waits } from '../../../src/announce/context';
import { AddressConflictError, GatewayUnansweredError } from '../../../src/announce/errors';
import type { AddGatewayCheck } from '../../../src/announce/first-round';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import type { AnnouncePlan, InterfacePlan } from '../../../src/plan';
import { parseArp } from '../../../src/wire/arp';
import { parseIPv4 } from '../../../src/wire/ip';
import type { LinkInfo } from '../../../src/wire/rtnetlink';
import {
  AddHarness,
  BOOT,
  DERIVED,
  iface,
  NET1_MAC,
  PACKET_FD,
  PLAN,
  POD_MAC,
  RECEIVER_FD,
} from '../../support/add-harness';
import { fakeAddress, fakeLink } from '../../support/fake-rtnl';
import type { LogRecord } from '../../support/log-records';
import { settle } from '../../support/manual-timers';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  return () => h.cleanup();
});

const NONE = { garpRequest: 0, garpReply: 0, na: 0 };
const ONE_GARP = { garpRequest: 1, garpReply: 0, na: 0 };
const SQUATTER = Buffer.from('525400123456', 'hex');
/** The derived MAC set, then the pod's own put back. */
const SET_AND_RESTORED = ['0a580a580063', '0a580a580005'];

const plan = (extra: Partial<AnnouncePlan>): AnnouncePlan => ({ ...PLAN, ...extra });
const planOf = (...interfaces: InterfacePlan[]): AnnouncePlan => plan({ interfaces });
/** eth0 with two addresses, 10.88.0.5 and 10.88.0.6 (both in the pod: see the probe's beforeEach). */
const TWO = iface('eth0', ['10.88.0.5', '10.88.0.6']);
/** The pod's eth0 without carrier: ADD waits for it. */
const notReady = () => h.eth0({ running: false });

/** An ARP reply from `mac` saying it has `address`, to `toMac` (`toIp`; none: a probe's answer), per RFC 826. */
function arpReply(mac: Buffer, address: string, toMac: Buffer = POD_MAC, toIp?: string): Buffer {
  const head = Buffer.from('08060001080006040002', 'hex');
  const target = toIp ? parseIPv4(toIp) : Buffer.alloc(4);
  return Buffer.concat([toMac, mac, head, mac, parseIPv4(address), toMac, target]);
}

describe('round 1', () => {
  it('logs what it sent, the round of how many, and the addresses', async () => {
    await h.add();
    const msg = 'announced';
    expect(h.said(msg)).toEqual([{ level: 'info', msg, fields: { round: 1, of: 3, frames: 1, ips: '["10.88.0.5"]' } }]);
  });

  it('carries IPv6 addresses into the job and announces an interface with one address of each family', async () => {
    h.pod.addresses.push(fakeAddress(2, 'fd00::5'));
    await h.add({ plan: plan({ interfaces: [iface('eth0', ['10.88.0.5'], ['fd00::5'])], schedule: [0, 1000] }) });
    expect(h.sent).toHaveLength(2);
    expect(h.readBack().job?.interfaces).toEqual([{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00::5'] }]);
  });

  const oneRoundTitle =
    'leaves no job when the schedule has one round: the announcer only counts the frames, and is not started';
  it(oneRoundTitle, async () => {
    await h.add({ plan: plan({ schedule: [0] }) });
    const handed = [{ added: 'c1@eth0.json', job: false, sent: ONE_GARP, conflicts: 0, gateway: OFF_VERDICT }];
    // The packet socket is closed in the background, not by ADD itself.
    expect(h.left()).toMatchObject({ sent: 1, record: false, handed, released: [PACKET_FD] });
  });

  const nothing: [string, Partial<LinkInfo>, Partial<AddJob>, LogRecord?][] = [
    [
      'when the attachment opted out, and says so',
      {},
      { announce: false },
      { level: 'info', msg: 'announcements disabled for this attachment: sending nothing', fields: {} },
    ],
    ['when the schedule is empty', { running: false }, { plan: plan({ schedule: [] }) }],
    [
      'when the interface has no address to announce',
      { running: false },
      { plan: planOf(iface('eth0', [])) },
      { level: 'debug', msg: 'no addresses to announce', fields: { interface: 'eth0' } },
    ],
    ...(['l3', 'l3s'] as const).map((mode): (typeof nothing)[number] => [
      `on an ipvlan in ${mode} mode (no L2 neighbours)`,
      { kind: 'ipvlan', ipvlanMode: mode, running: false },
      {},
      {
        level: 'info',
        msg: 'ipvlan in L3 mode has no L2 neighbours to update: sending nothing',
        fields: { interface: 'eth0', mode },
      },
    ]),
  ];
  it.each(nothing)('sends nothing, waits for nothing and leaves no job %s', async (_when, link, extra, said) => {
    h.eth0({ ...link });
    await h.add(extra);
    const handed = [{ added: 'c1@eth0.json', job: false, sent: NONE }];
    expect(h.left()).toMatchObject({ sent: 0, at: 0, waited: [], record: false, handed });
    expect(h.said('announced')).toEqual([]);
    if (said) expect(h.said(said.msg)).toEqual([said]);
  });

  it('announces an ipvlan in l2 mode', async () => {
    h.eth0({ kind: 'ipvlan', ipvlanMode: 'l2' });
    await h.add();
    expect(h.sent).toHaveLength(1);
  });

  it('judges each interface by its own link: an L3 ipvlan beside a veth leaves the veth announced', async () => {
    h.podWithNet1();
    h.eth0({ kind: 'ipvlan', ipvlanMode: 'l3' });
    await h.add({ plan: planOf(iface('eth0', ['10.88.0.5']), iface('net1', ['10.89.0.7'])) });
    expect(h.sent.map((s) => s.index)).toEqual([3]);
    expect(h.readBack().job?.interfaces).toEqual([{ name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] }]);
  });
});

describe('when the pod is not ready within addWaitMs', () => {
  const NO_CARRIER = '["eth0 has no carrier"]'; // a logged list is JSON
  beforeEach(notReady);

  it('says once, at debug, why it waits for the pod, then sends round 1 once the pod is ready', async () => {
    h.onWait = () => void (h.pod.links[0] = { ...h.pod.links[0]!, running: true });
    await h.add({ addWaitMs: 5000 });
    const said = h.records().filter((r) => ['pod not ready: waiting for it', 'announced'].includes(r.msg));
    expect(said).toMatchObject([
      { level: 'debug', fields: { upToMs: 5000, waitingFor: NO_CARRIER } },
      { msg: 'announced' },
    ]);
    expect(h.sent).toHaveLength(1);
  });

  const handsEveryRoundTitle =
    'hands every round to the background announcer when readiness may still come (readyTimeoutMs > addWaitMs)';
  it(handsEveryRoundTitle, async () => {
    await h.add({ addWaitMs: 1000, readyTimeoutMs: 1001 });
    expect(h.left()).toMatchObject({ at: 1000, sent: 0, handed: [{ added: 'c1@eth0.json', job: true, sent: NONE }] });
    expect(h.said('pod not ready yet: announcing from the background once it is')).toMatchObject([
      { level: 'info', fields: { waitedMs: 1000, waitingFor: NO_CARRIER } },
    ]);
    const { firstRoundAt, conflicts, readyDeadline } = h.readBack().job!;
    expect({ firstRoundAt, conflicts, readyDeadline }).toEqual({ readyDeadline: BOOT + 1001 });
  });

  const givesUpTitle =
    'gives up, sending nothing and leaving no job, when readiness would come too late (readyTimeoutMs ≤ addWaitMs)';
  it(givesUpTitle, async () => {
    await h.add({ addWaitMs: 1000, readyTimeoutMs: 1000 });
    const handed = [{ added: 'c1@eth0.json', job: false, sent: NONE }];
    expect(h.left()).toMatchObject({ at: 1000, sent: 0, record: false, handed });
    expect(h.said('pod not ready in time: not announcing')).toMatchObject([
      { level: 'warn', fields: { waitedMs: 1000, waitingFor: NO_CARRIER } },
    ]);
  });

  it('waits only readyTimeoutMs when that is shorter', async () => {
    await h.add({ addWaitMs: 1000, readyTimeoutMs: 400 });
    expect(h.timers.now()).toBe(400);
  });
});

describe('round 1 and the node-wide budget', () => {
  /** Each take: `<rounds> at <ms since the start>`, and `on credit` when it was. */
  const takes = () => h.budget.calls.map((c) => `${c.rounds} at ${c.at - BOOT}${c.onCredit ? ' on credit' : ''}`);

  it('waits as long as the budget says, logging the wait once, and takes on the boot clock', async () => {
    h.budget.answers.push(300, 300);
    await h.drive(h.add());
    expect(takes()).toEqual(['first at 0', 'first at 300', 'first at 600']);
    expect(h.timers.requested).toEqual([300, 300]);
    expect(h.records().filter((r) => r.msg.includes('rate limit'))).toEqual([
      { level: 'info', msg: 'node-wide rate limit: round 1 waits its turn', fields: { waitMs: 300 } },
    ]);
    expect(h.sent).toHaveLength(1);
    expect(h.handed[0]).toMatchObject({ sent: ONE_GARP });
  });

  it('goes on credit addWaitMs after readiness, sleeping no longer than that', async () => {
    h.budget.answers.push(60_000);
    await h.drive(h.add({ addWaitMs: 1000 }));
    expect(takes()).toEqual(['first at 0', 'first at 1000 on credit']);
    expect(h.timers.requested).toEqual([1000]);
    expect(h.sent).toHaveLength(1);
  });

  const lockGraceTitle =
    'goes on credit half the lock grace before a waiter for the attachment lock gives up, when readiness came late';
  it(lockGraceTitle, async () => {
    // Ready once ADD's 30 s wait for it ends: addWaitMs from readiness would be 60 s, past lockWaitMs (52 s); the
    // lock's deadline is 30 s + 5 s.
    h.budget.answers.push(60_000);
    notReady();
    h.onWait = () => void (h.pod.links[0] = { ...h.pod.links[0]!, running: true });
    await h.drive(h.add({ addWaitMs: 30_000, readyTimeoutMs: 60_000 }));
    expect(takes()).toEqual(['first at 30000', 'first at 35000 on credit']);
    expect(35_000).toBeLessThan(lockWaitMs(30_000));
    expect(h.sent).toHaveLength(1);
  });
});

describe('ADD never blocks: every wait goes through the injected waits, which the test ends by hand', () => {
  /** Starts ADD on waits that end only when the test says so; `now()` says where it is. */
  function startAdd(extra: Partial<AddJob> = {}) {
    const waits: { fds: readonly number[]; ms: number; end: () => void }[] = [];
    const readable: Waits['readable'] = (fds, ms) =>
      new Promise<void>((end) => void waits.push({ fds: [...fds], ms, end }));
    let finished = false;
    const done = h.add(extra, { ...h.ctx(), waits: { readable } }).finally(() => (finished = true));
    done.catch(() => undefined);
    const isProbe = (frame: Buffer) => frame.subarray(28, 32).join('.') === '0.0.0.0';
    /** Where ADD is, once everything queued has run: finished, frames sent, its waits (fds and ms). */
    const now = async () => {
      for (let i = 0; i < 10; i++) await settle();
      const probes = h.sent.filter(({ frame }) => isProbe(frame)).length;
      return { finished, probes, garps: h.sent.length - probes, waits: waits.map(({ fds, ms }) => ({ fds, ms })) };
    };
    return { done, now, end: (n: number) => waits[n]!.end() };
  }

  const whileNotReadyTitle =
    'while the pod is not ready: pending on one wait on the event sockets, nothing sent, until that wait ends';
  it(whileNotReadyTitle, async () => {
    notReady();
    const adding = startAdd();
    const waits = [{ fds: [50, 51], ms: 1000 }];
    expect(await adding.now()).toEqual({ finished: false, probes: 0, garps: 0, waits });
    expect(h.timers.now()).toBe(0);
    h.eth0({ running: true }); // the pod gets its carrier; the wait ends
    adding.end(0);
    await adding.done;
    expect(await adding.now()).toEqual({ finished: true, probes: 0, garps: 1, waits });
  });

  const probeWindowTitle =
    'during a conflict probe window: pending on the receiver between probes, nothing announced, until each wait ends';
  it(probeWindowTitle, async () => {
    const adding = startAdd({ conflictCheck: { action: 'fail', probeMs: 200, probes: 2 } });
    const wait = { fds: [RECEIVER_FD], ms: 100 };
    expect(await adding.now()).toEqual({ finished: false, probes: 1, garps: 0, waits: [wait] });
    h.timers.advance(100); // time for the second probe
    adding.end(0);
    expect(await adding.now()).toEqual({ finished: false, probes: 2, garps: 0, waits: [wait, wait] });
    h.timers.advance(100); // the window ends: round 1 goes out
    adding.end(1);
    await adding.done;
    expect(await adding.now()).toMatchObject({ finished: true, garps: 1 });
  });
});

describe('the conflict probe before round 1', () => {
  const PROBE = { probeMs: 200, probes: 2 };
  const warn = { conflictCheck: { action: 'warn' as const, ...PROBE } };
  const fail = { conflictCheck: { action: 'fail' as const, ...PROBE } };
  beforeEach(() => void h.pod.addresses.push(fakeAddress(2, '10.88.0.6')));

  /** What went out: `<ifindex> probe <ip>` (sender IP 0.0.0.0, target IP) or `<ifindex> garp <ip>`. */
  const described = () =>
    h.sent.map(({ index, frame }) => {
      const sender = frame.subarray(28, 32).join('.');
      return sender === '0.0.0.0' ? `${index} probe ${frame.subarray(38, 42).join('.')}` : `${index} garp ${sender}`;
    });
  const BOTH_PROBED_TWICE = ['2 probe 10.88.0.5', '2 probe 10.88.0.6', '2 probe 10.88.0.5', '2 probe 10.88.0.6'];
  const probeDone = (conflicts: number, addresses = 2) => ({
    level: 'debug',
    msg: 'conflict probe done',
    fields: { addresses, probes: 2, conflicts },
  });
  const cannotRun = () => {
    const ctx = h.ctx();
    ctx.open.receivers = () => {
      throw new Error('socket(AF_PACKET): EPERM');
    };
    return ctx;
  };

  describe('conflictCheck warn', () => {
    const leavesOutTitle =
      'probes every IPv4 address over the window, leaves out the one another host answers for, now and in later ' +
      'rounds';
    it(leavesOutTitle, async () => {
      h.timers.advance(500);
      h.arpIn.set(2, [arpReply(SQUATTER, '10.88.0.5')]);
      await h.add({ plan: planOf(TWO), ...warn });
      expect(described()).toEqual([...BOTH_PROBED_TWICE, '2 garp 10.88.0.6']);
      expect(h.receiversOpened).toEqual([[2]]);
      const msg =
        'address conflict: not announcing 10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 (it answered ' +
        'ARP for that address on eth0)';
      const fields = { address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0' };
      expect(h.said(msg)).toEqual([{ level: 'warn', msg, fields }]);
      expect(h.said('conflict probe done')).toEqual([probeDone(1)]);
      expect(h.readBack().job).toMatchObject({ interfaces: [{ name: 'eth0', ipv4: ['10.88.0.6'] }], conflicts: 1 });
      const handed = [{ added: 'c1@eth0.json', job: true, sent: ONE_GARP, conflicts: 1, gateway: OFF_VERDICT }];
      // The receiver is closed in the background once the window is over, the packet socket once round 1 is out.
      expect(h.left()).toMatchObject({ handed, released: [RECEIVER_FD, PACKET_FD] });
    });

    it('leaves no job when every address of the attachment is in use', async () => {
      h.arpIn.set(2, [arpReply(SQUATTER, '10.88.0.5')]);
      await h.add(warn);
      expect(described()).toEqual(['2 probe 10.88.0.5']); // nothing left to learn: the window ends
      expect(h.left()).toMatchObject({ record: false, handed: [{ added: 'c1@eth0.json', job: false, conflicts: 1 }] });
    });

    it('keeps a job for the interfaces that have addresses left', async () => {
      h.podWithNet1();
      h.arpIn.set(2, [arpReply(SQUATTER, '10.88.0.5')]);
      await h.add({ plan: planOf(PLAN.interfaces[0]!, iface('net1', ['10.89.0.7'])), ...warn });
      expect(h.receiversOpened).toEqual([[2, 3]]);
      expect(h.readBack().job?.interfaces).toEqual([
        { name: 'eth0', ipv4: [], ipv6: [] },
        { name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] },
      ]);
    });

    it(
      "takes no ARP from the pod's own interfaces for a " + 'conflict (a link without MAC beside them is fine)',
      async () => {
        h.pod.links = [
          fakeLink({ index: 9, name: 'tun0', mac: undefined }),
          ...h.pod.links,
          fakeLink({ index: 3, name: 'net1', mac: NET1_MAC }),
        ];
        h.arpIn.set(2, [arpReply(NET1_MAC, '10.88.0.5')]);
        await h.add(warn);
        expect(described()).toEqual(['2 probe 10.88.0.5', '2 probe 10.88.0.5', '2 garp 10.88.0.5']);
        expect(h.said('conflict probe done')).toEqual([probeDone(0, 1)]);
        expect(h.timers.now()).toBe(200); // the whole window
      },
    );

    it('probes nothing when round 1 has no IPv4 address', async () => {
      h.pod.addresses = [fakeAddress(2, 'fd00::5')];
      await h.add({ plan: planOf(iface('eth0', [], ['fd00::5'])), ...warn });
      expect(h.receiversOpened).toEqual([]);
      expect(h.left()).toMatchObject({ sent: 1, handed: [{ conflicts: 0 }] });
    });

    it('logs a probe that cannot be sent, naming the interface, and keeps the window going', async () => {
      let probes = 0;
      h.sendError = () => (probes++ === 0 ? new Error('sendto: ENETDOWN') : undefined);
      h.arpIn.set(2, [arpReply(SQUATTER, '10.88.0.5')]);
      await h.add(warn);
      const fields = { interface: 'eth0', error: 'sendto: ENETDOWN' };
      expect(h.said('sending an ARP probe failed')).toEqual([
        { level: 'error', msg: 'sending an ARP probe failed', fields },
      ]);
      expect(described()).toEqual(['2 probe 10.88.0.5']); // the second probe, which the other host answers
      expect(h.said('conflict probe done')).toEqual([probeDone(1, 1)]);
    });

    it('announces unprobed, logging why, when the probe cannot run', async () => {
      await h.add(warn, cannotRun());
      expect(described()).toEqual(['2 garp 10.88.0.5']);
      expect(h.said('conflict probe failed: announcing without it')).toMatchObject([
        { level: 'error', fields: { error: 'socket(AF_PACKET): EPERM' } },
      ]);
      expect(h.readBack().job).toMatchObject({ interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'] }], conflicts: 0 });
      expect(h.handed[0]).toMatchObject({ conflicts: 0 });
    });
  });

  describe('conflictCheck fail', () => {
    it('announces after a window in which nobody answered, waiting on the receiver between probes', async () => {
      await h.add({ plan: planOf(TWO), ...fail });
      expect(described()).toEqual([...BOTH_PROBED_TWICE, '2 garp 10.88.0.5', '2 garp 10.88.0.6']);
      const wait = { fds: [RECEIVER_FD], ms: 100 };
      expect(h.left()).toMatchObject({ handed: [{ conflicts: 0 }], waited: [wait, wait] });
    });

    it('fails ADD at the first conflict, announcing nothing, and puts the original MAC back', async () => {
      h.arpIn.set(2, [arpReply(SQUATTER, '10.88.0.5', DERIVED)]);
      const err = await h.add({ plan: planOf({ ...TWO, targetMac: DERIVED }), ...fail }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AddressConflictError);
      expect((err as AddressConflictError).conflicts).toEqual([
        { address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0', kind: 'reply' },
      ]);
      expect(described()).toEqual(['2 probe 10.88.0.5', '2 probe 10.88.0.6']); // the window ended at the conflict
      expect(h.said('conflict probe done')).toEqual([probeDone(1)]);
      expect(h.left()).toMatchObject({
        at: 0,
        macs: SET_AND_RESTORED,
        record: false,
        released: [RECEIVER_FD, PACKET_FD],
      });
    });

    it('fails ADD with the probe error when the probe cannot run, keeping the set MAC recorded for DEL', async () => {
      const err = await h
        .add({ plan: planOf({ ...TWO, targetMac: DERIVED }), ...fail }, cannotRun())
        .catch((e: unknown) => e);
      expect((err as Error).message).toBe('socket(AF_PACKET): EPERM');
      expect(h.left()).toMatchObject({ sent: 0, macs: ['0a580a580063'] });
      expect(h.readBack().originalMacs).toEqual([{ name: 'eth0', mac: '0a:58:0a:58:00:05' }]);
    });
  });
});

describe("the gateway check's part after round 1", () => {
  const GW = { interface: 'eth0', gateway: '10.88.0.1' };
  const GW_MAC = Buffer.from('525400123456', 'hex');
  const check = (mode: AddGatewayCheck['mode'], gateways = [GW]) => ({
    gatewayCheck: { mode, windowMs: 500, gateways },
  });
  const oneRound = { plan: plan({ schedule: [0] }) };
  /** The gateway's ARP reply to the pod's `to`. */
  const gatewayReply = (to = '10.88.0.5') => arpReply(GW_MAC, '10.88.0.1', POD_MAC, to);
  /** The ARP requests that went out, GARPs and probes (sender 0.0.0.0) left out: `sender > target`. */
  const requests = () =>
    h.sent.flatMap(({ frame }) => {
      const arp = parseArp(frame);
      if (arp?.op !== 1 || arp.senderIp.equals(arp.targetIp) || arp.senderIp.every((b) => b === 0)) return [];
      return [`${arp.senderIp.join('.')} > ${arp.targetIp.join('.')}`];
    });

  it('off: an OFF verdict, no request and no record', async () => {
    await h.add({ ...check('off'), ...oneRound });
    expect(requests()).toEqual([]);
    expect(h.left()).toMatchObject({ record: false, handed: [{ gateway: OFF_VERDICT }] });
  });

  it('no routed gateway: final at once, nothing asked, nothing recorded and no job for it', async () => {
    await h.add({ ...check('require', []), ...oneRound });
    const gateway = { result: 'no-gateway', answered: [], unanswered: [], asks: 0 };
    expect({ requests: requests(), receivers: h.receiversOpened }).toEqual({ requests: [], receivers: [] });
    expect(h.left()).toMatchObject({ record: false, handed: [{ job: false, gateway }] });
  });

  it('report asks nothing in ADD: the verdict is pending, and even a one-round job carries the check', async () => {
    h.arpIn.set(2, [gatewayReply()]);
    await h.add({ ...check('report'), ...oneRound });
    expect(requests()).toEqual([]);
    expect(h.handed[0]).toMatchObject({ job: true, gateway: { result: 'pending', unanswered: [GW] } });
    expect(h.readBack().job?.gatewayCheck).toEqual({ windowMs: 500, gateways: [GW] });
    expect(h.timers.now()).toBe(0);
  });

  describe('require', () => {
    it('sends one ARP request after round 1 and takes the answer, with the MAC that gave it', async () => {
      h.arpIn.set(2, [gatewayReply()]);
      await h.add(check('require'));
      expect(requests()).toEqual(['10.88.0.5 > 10.88.0.1']);
      expect(h.sent).toHaveLength(2);
      expect(parseArp(h.sent[0]!.frame)?.targetIp).toEqual(parseIPv4('10.88.0.5')); // round 1's GARP first
      const answered = [{ ...GW, mac: '52:54:00:12:34:56', afterMs: 0 }];
      const verdict = { result: 'answered', answered, unanswered: [], asks: 1 };
      expect(h.handed[0]).toMatchObject({ gateway: verdict });
      expect(h.readBack().gateway).toEqual(verdict);
      expect(h.said('gateway check: answered: 10.88.0.1 by 52:54:00:12:34:56 after 0 ms (eth0)')).toMatchObject([
        { level: 'info' },
      ]);
    });

    it(
      'fails ADD at once when no pod address can ask the ' + 'gateway (routed through an interface not announced)',
      async () => {
        const elsewhere = { interface: 'net1', gateway: '10.88.0.1' };
        const err = await h.add(check('require', [elsewhere])).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(GatewayUnansweredError);
        expect((err as GatewayUnansweredError).unanswered).toEqual([elsewhere]);
        expect((err as Error).message).toContain('no pod address could ask it');
        expect([requests(), h.timers.now()]).toEqual([[], 0]);
      },
    );

    it('fails ADD after exactly gatewayCheckMs without an answer, restoring the MAC and leaving nothing', async () => {
      const plan = planOf({ ...PLAN.interfaces[0]!, targetMac: DERIVED });
      const err = await h.add({ ...check('require'), plan }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayUnansweredError);
      expect((err as GatewayUnansweredError).unanswered).toEqual([GW]);
      expect((err as Error).message).toBe(
        'gateway 10.88.0.1 (eth0) did not answer: 1 requests sent, no answer within 500 ms (gatewayCheck: require)',
      );
      // No job handed; any work the table had ends.
      expect(h.left()).toEqual({
        sent: 2,
        record: false,
        handed: [{ cancel: 'c1@eth0.json' }],
        released: [RECEIVER_FD, PACKET_FD],
        at: 500,
        waited: [{ fds: [RECEIVER_FD], ms: 500 }],
        macs: SET_AND_RESTORED,
      });
    });

    it('never asks from an address the conflict probe left out', async () => {
      h.pod.addresses.push(fakeAddress(2, '10.88.0.6'));
      h.arpIn.set(2, [arpReply(Buffer.from('5254000000aa', 'hex'), '10.88.0.5')]);
      const ctx = h.ctx();
      const { receivers } = ctx.open;
      let opened = 0;
      // The gateway answers the check's request, which comes after the probe's receivers were opened.
      ctx.open.receivers = (netns, ifindexes, ethertype) => {
        if (++opened === 2) h.arpIn.set(2, [gatewayReply('10.88.0.6')]);
        return receivers(netns, ifindexes, ethertype);
      };
      const conflictCheck = { action: 'warn' as const, probeMs: 200, probes: 1 };
      await h.add({ ...check('require'), conflictCheck, plan: planOf({ ...PLAN.interfaces[0]!, ...TWO }) }, ctx);
      expect(requests()).toEqual(['10.88.0.6 > 10.88.0.1']);
      expect(h.handed[0]).toMatchObject({ gateway: { result: 'answered' } });
    });

    it('acts as report, and says so, for a pod not ready within addWaitMs', async () => {
      notReady();
      await h.add({ ...check('require'), addWaitMs: 1000, readyTimeoutMs: 5000 });
      const msg = 'gatewayCheck require acts as report: the pod was not ready within addWaitMs';
      expect(h.said(msg)).toEqual([{ level: 'warn', msg, fields: { addWaitMs: 1000 } }]);
      expect(h.sent).toEqual([]);
      expect(h.readBack().job?.gatewayCheck).toEqual({ windowMs: 500, gateways: [GW] });
    });
  });
});
