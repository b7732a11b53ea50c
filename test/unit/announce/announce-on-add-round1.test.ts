// ADD's round 1: which interfaces are worth waiting for, what a readiness
// timeout leaves, the node-wide budget's wait, and what the record and the
// background announcer get. The fake world is test/support/add-harness.ts.
import { existsSync, readFileSync } from 'node:fs';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd } from '../../../src/announce/announce-on-add';
import type { FrameBudget } from '../../../src/announce/budget';
import { recordPath, type AttachmentRecord } from '../../../src/announce/state';
import type { AnnouncePlan, InterfacePlan } from '../../../src/plan';
import { AddHarness, NETNS, NETNS_ID, PACKET_FD, PLAN } from '../../support/add-harness';
import { fakeAddress, fakeLink } from '../../support/fake-rtnl';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
});
afterEach(() => h.cleanup());

const file = () => recordPath(h.stateDir, 'c1', 'eth0');
const readBack = (): AttachmentRecord => JSON.parse(readFileSync(file(), 'utf8')) as AttachmentRecord;
const NONE = { garpRequest: 0, garpReply: 0, na: 0 };
const ONE_GARP = { garpRequest: 1, garpReply: 0, na: 0 };

function iface(name: string, ipv4: string[], ipv6: string[] = []): InterfacePlan {
  return {
    name,
    resultIndex: undefined,
    addresses: [],
    ipv4,
    ipv6,
    targetMac: undefined,
    gateways: { ipv4: [], ipv6: [] },
  };
}
function plan(extra: Partial<AnnouncePlan>): AnnouncePlan {
  return { ...PLAN, ...extra };
}

describe('round 1', () => {
  const logsWhatItTitle =
    'logs what it sent, hands the rest to the announcer with exact counts, ' +
    'and leaves a job due by the readiness deadline';
  it(logsWhatItTitle, async () => {
    await announceOnAdd(h.deps(), h.job());
    expect(h.lines).toContainEqual('INFO announced round=1 of=3 frames=1 ips="[\\"10.88.0.5\\"]"');
    expect(h.lines).toContainEqual('DEBUG background work handed over rounds=3');
    expect(readBack().job).toEqual({
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      netns: NETNS,
      netnsId: NETNS_ID,
      logLevel: 'info',
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
      hostPeerNames: [],
      arpOps: ['request'],
      schedule: [0, 1000, 3000],
      readyDeadline: 1_000_000 + 5000, // boot clock at the start of ADD + readyTimeoutMs
      conflicts: 0,
      firstRoundAt: 1_000_000,
    });
    expect(h.lockReleases).toBe(1);
  });

  it('carries IPv6 addresses into the job and announces an interface with one address of each family', async () => {
    h.pod.addresses.push(fakeAddress(2, 'fd00::5'));
    await announceOnAdd(
      h.deps(),
      h.job({ plan: plan({ interfaces: [iface('eth0', ['10.88.0.5'], ['fd00::5'])], schedule: [0, 1000] }) }),
    );
    expect(h.sent).toHaveLength(2);
    expect(readBack().job?.interfaces).toEqual([{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00::5'] }]);
  });

  const leavesNoJobTitle =
    'leaves no job when the schedule has one round: the announcer only counts the frames, and is not started';
  it(leavesNoJobTitle, async () => {
    await announceOnAdd(h.deps(), h.job({ plan: plan({ schedule: [0] }) }));
    expect(h.sent).toHaveLength(1);
    expect(existsSync(file())).toBe(false);
    expect(h.handed).toEqual([
      { added: 'c1@eth0.json', job: false, sent: ONE_GARP, conflicts: 0, gateway: OFF_VERDICT },
    ]);
    expect(h.released).toEqual([[PACKET_FD]]); // released, not closed by ADD itself
    expect(h.closed).toEqual([]);
    expect(h.lockReleases).toBe(1);
  });

  describe('sends nothing, waits for nothing and leaves no job', () => {
    async function nothingFor(extra: Parameters<AddHarness['job']>[0]) {
      await announceOnAdd(h.deps(), h.job(extra));
      expect(h.sent).toEqual([]);
      expect(h.timers.now()).toBe(0);
      expect(existsSync(file())).toBe(false);
      expect(h.handed).toEqual([{ added: 'c1@eth0.json', job: false, sent: NONE }]);
      expect(h.waited).toEqual([]);
      expect(h.lines.filter((l) => l.startsWith('INFO announced'))).toEqual([]);
    }

    it('when the attachment opted out, and says so', async () => {
      await nothingFor({ announce: false });
      expect(h.lines).toContainEqual('INFO announcements disabled for this attachment: sending nothing');
    });

    it('when the schedule is empty', async () => {
      h.pod.links[0] = { ...h.pod.links[0]!, running: false }; // would make ADD wait
      await nothingFor({ plan: plan({ schedule: [] }) });
    });

    it('when the interface has no address to announce', async () => {
      h.pod.links[0] = { ...h.pod.links[0]!, running: false };
      await nothingFor({ plan: plan({ interfaces: [iface('eth0', [])] }) });
      expect(h.lines).toContainEqual('DEBUG no addresses to announce interface=eth0');
    });

    it.each(['l3', 'l3s'] as const)('on an ipvlan in %s mode (no L2 neighbours)', async (mode) => {
      h.pod.links[0] = { ...h.pod.links[0]!, kind: 'ipvlan', ipvlanMode: mode, running: false };
      await nothingFor({});
      expect(h.lines).toContainEqual(
        `INFO ipvlan in L3 mode has no L2 neighbours to update: sending nothing interface=eth0 mode=${mode}`,
      );
    });
  });

  it('announces an ipvlan in l2 mode', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, kind: 'ipvlan', ipvlanMode: 'l2' };
    await announceOnAdd(h.deps(), h.job());
    expect(h.sent).toHaveLength(1);
  });

  it('judges each interface by its own link: an L3 ipvlan beside a veth leaves the veth announced', async () => {
    h.pod.links = [
      fakeLink({ index: 2, name: 'eth0', kind: 'ipvlan', ipvlanMode: 'l3' }),
      fakeLink({ index: 3, name: 'net1' }),
    ];
    h.pod.addresses = [fakeAddress(2, '10.88.0.5'), fakeAddress(3, '10.89.0.7')];
    await announceOnAdd(
      h.deps(),
      h.job({ plan: plan({ interfaces: [iface('eth0', ['10.88.0.5']), iface('net1', ['10.89.0.7'])] }) }),
    );
    expect(h.sent.map((s) => s.index)).toEqual([3]);
    expect(readBack().job?.interfaces).toEqual([{ name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] }]);
  });
});

describe('when the pod is not ready within addWaitMs', () => {
  const NO_CARRIER = JSON.stringify(JSON.stringify(['eth0 has no carrier'])); // a logged list is JSON, quoted
  beforeEach(() => {
    h.pod.links[0] = { ...h.pod.links[0]!, running: false };
  });

  const handsEveryRoundTitle =
    'hands every round to the background announcer when readiness may still come (readyTimeoutMs > addWaitMs)';
  it(handsEveryRoundTitle, async () => {
    await announceOnAdd(h.deps(), h.job({ addWaitMs: 1000, readyTimeoutMs: 1001 }));
    expect(h.timers.now()).toBe(1000);
    expect(h.sent).toEqual([]);
    expect(h.lines).toContainEqual(
      `INFO pod not ready yet: announcing from the background once it is waitedMs=1000 waitingFor=${NO_CARRIER}`,
    );
    const job = readBack().job!;
    expect(job.firstRoundAt).toBeUndefined();
    expect(job.conflicts).toBeUndefined();
    expect(job.readyDeadline).toBe(1_000_000 + 1001);
    expect(h.handed).toEqual([{ added: 'c1@eth0.json', job: true, sent: NONE }]);
  });

  const givesUpSendingTitle =
    'gives up, sending nothing and leaving no job, when readiness would come too late (readyTimeoutMs ≤ addWaitMs)';
  it(givesUpSendingTitle, async () => {
    await announceOnAdd(h.deps(), h.job({ addWaitMs: 1000, readyTimeoutMs: 1000 }));
    expect(h.timers.now()).toBe(1000);
    expect(h.sent).toEqual([]);
    expect(existsSync(file())).toBe(false);
    expect(h.lines).toContainEqual(`WARN pod not ready in time: not announcing waitedMs=1000 waitingFor=${NO_CARRIER}`);
    expect(h.handed).toEqual([{ added: 'c1@eth0.json', job: false, sent: NONE }]);
  });

  it('waits only readyTimeoutMs when that is shorter', async () => {
    await announceOnAdd(h.deps(), h.job({ addWaitMs: 1000, readyTimeoutMs: 400 }));
    expect(h.timers.now()).toBe(400);
  });
});

describe('round 1 and the node-wide budget', () => {
  /**
   * A budget that refuses metered takes `refusals` times (asking to wait `waitMs`), then grants; every take is
   * recorded.
   */
  function budget(refusals: number, waitMs: number) {
    const takes: { frames: number; clock: number; onCredit: boolean; at: number }[] = [];
    const b: FrameBudget = {
      take: async (frames, clock, onCredit, send) => {
        takes.push({ frames, clock: clock(), onCredit, at: h.timers.now() });
        if (!onCredit && takes.length <= refusals) return { ok: false, waitMs };
        send();
        return { ok: true };
      },
    };
    return { b, takes };
  }

  it('waits as long as the budget says, logging the wait once, and reads the boot clock for the bucket', async () => {
    const { b, takes } = budget(2, 300);
    h.budget = b;
    await h.drive(announceOnAdd(h.deps(), h.job()));
    expect(takes).toEqual([
      { frames: 1, clock: 1_000_000, onCredit: false, at: 0 },
      { frames: 1, clock: 1_000_300, onCredit: false, at: 300 },
      { frames: 1, clock: 1_000_600, onCredit: false, at: 600 },
    ]);
    expect(h.timers.requested).toEqual([300, 300]);
    expect(h.lines.filter((l) => l.includes('rate limit'))).toEqual([
      'INFO node-wide rate limit: round 1 waits its turn waitMs=300',
    ]);
    expect(h.sent).toHaveLength(1);
    expect(h.handed[0]).toMatchObject({ sent: ONE_GARP });
  });

  it('logs a single wait too', async () => {
    h.budget = budget(1, 300).b;
    await h.drive(announceOnAdd(h.deps(), h.job()));
    expect(h.lines.filter((l) => l.includes('rate limit'))).toEqual([
      'INFO node-wide rate limit: round 1 waits its turn waitMs=300',
    ]);
  });

  it('goes on credit addWaitMs after readiness, sleeping no longer than that', async () => {
    const { b, takes } = budget(Infinity, 60_000);
    h.budget = b;
    await h.drive(announceOnAdd(h.deps(), h.job({ addWaitMs: 1000 })));
    expect(takes.map((t) => [t.at, t.onCredit])).toEqual([
      [0, false],
      [1000, true],
    ]);
    expect(h.timers.requested).toEqual([1000]);
    expect(h.sent).toHaveLength(1);
  });

  const goesOnCreditTitle =
    'goes on credit half the lock grace before a waiter for the attachment lock gives up, when readiness came late';
  it(goesOnCreditTitle, async () => {
    // Ready at 30 s of a 30 s addWaitMs (readiness is read at the end of the wait here):
    // addWaitMs from readiness would be 60 s, past lockWaitMs (40 s); the lock's deadline is 40 s - 5 s.
    const { b, takes } = budget(Infinity, 60_000);
    h.budget = b;
    h.pod.links[0] = { ...h.pod.links[0]!, running: false };
    const links = h.pod.links;
    Object.defineProperty(h.pod, 'links', {
      get: () => links.map((l) => ({ ...l, running: h.timers.now() >= 25_000 })),
      set: () => undefined,
    });
    await h.drive(announceOnAdd(h.deps(), h.job({ addWaitMs: 30_000, readyTimeoutMs: 60_000 })));
    expect(takes.map((t) => [t.at, t.onCredit])).toEqual([
      [30_000, false],
      [35_000, true],
    ]);
  });
});
