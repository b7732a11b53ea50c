// ADD of one attachment (announceOnAdd) under its lock: its record (the original MACs first, then round 1's job), what
// a repeated ADD takes over, what a failure leaves for DEL, and a caller that stops waiting. Round 1 itself is
// first-round.test.ts. The fake world is test/support/add-harness.ts.
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AddJob } from '../../../src/announce/add';
import { lockWaitMs } from '../../../src/announce/context';
import { NotWantedError, StateError } from '../../../src/announce/errors';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import type { CniError } from '../../../src/cni/errors';
import { toCniError } from '../../../src/commands/errors';
import type { InterfacePlan } from '../../../src/plan';
import { UnsafeDirError } from '../../../src/sys/private-dir';
import {
  AddHarness,
  BOOT,
  DERIVED,
  iface,
  NETNS,
  NETNS_ID,
  PACKET_FD,
  PLAN,
  pendingJob,
} from '../../support/add-harness';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  return () => h.cleanup();
});

const ORIGINAL = '0a:58:0a:58:00:05'; // POD_MAC
const NET1_ORIGINAL = '02:00:00:00:aa:03';
/** net1 (ifindex 3, 10.89.0.7) with the derived MAC, result index 1. */
const NET1: InterfacePlan = { ...iface('net1', ['10.89.0.7'], [], DERIVED), resultIndex: 1 };
/** PLAN with the derived MAC on eth0 (`eth0` replaces any of its fields), and `more` interfaces. */
const withMac = (eth0: Partial<InterfacePlan> = {}, ...more: InterfacePlan[]): Partial<AddJob> => ({
  plan: { ...PLAN, interfaces: [{ ...PLAN.interfaces[0]!, targetMac: DERIVED, ...eth0 }, ...more] },
});
/** The background work an earlier ADD of c1/eth0 left pending. */
const PENDING = pendingJob({ firstRoundAt: BOOT - 1000, readyDeadline: BOOT + 4000 });

/** What the runtime would get from a failing ADD: the CNI error's code and message, and its cause. */
async function failure(run: Promise<unknown>): Promise<{ code: number; msg: string; cause: unknown }> {
  const err = await run.then(
    () => expect.fail('ADD succeeded'),
    (e: unknown) => e,
  );
  const { code, msg } = (toCniError(err, 'ADD') as CniError).toSpec('1.1.0');
  return { code, msg, cause: (err as Error).cause };
}

describe('announceOnAdd', () => {
  const handsOverTitle =
    "writes the job round 1 leaves to the record and hands it over with round 1's counts; its packet socket is " +
    'closed in the background and the lock is free again';
  it(handsOverTitle, async () => {
    expect(await h.add()).toEqual(new Map());
    // Round 1 at the start of ADD (BOOT), the job due by readyTimeoutMs (5 s) after it, no address left out.
    const job = pendingJob({ conflicts: 0 });
    const { network, containerId, ifname, netns, netnsId, caller } = job;
    expect(h.readBack()).toEqual({ network, containerId, ifname, netns, netnsId, caller, originalMacs: [], job });
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    expect(h.handed).toEqual([{ added: 'c1@eth0.json', job: true, sent, conflicts: 0, gateway: OFF_VERDICT }]);
    expect(h.said('background work handed over')).toMatchObject([{ level: 'debug', fields: { rounds: 3 } }]);
    expect(h.released).toEqual([PACKET_FD]);
    expect(await h.locks.take('c1@eth0', 0)).toBeDefined();
  });

  const keptTitle =
    'leaves its pod session open when the table keeps it (for the gateway check), and closes it when that throws';
  it(keptTitle, async () => {
    const kept: unknown[] = [];
    const keeping = h.ctx();
    keeping.table = { ...keeping.table, added: (_name, _record, _report, session) => (kept.push(session), true) };
    await h.add({}, keeping);
    expect({ kept: kept.length, released: h.released }).toEqual({ kept: 1, released: [] });
    const throwing = h.ctx();
    throwing.table = {
      ...throwing.table,
      added: () => {
        throw new Error('the table broke');
      },
    };
    await expect(h.add({}, throwing)).rejects.toThrow('the table broke');
    expect(h.released).toEqual([PACKET_FD]);
  });

  describe('fails', () => {
    it('with code 105 when stateDir is not private, naming the fix; nothing is sent, recorded or handed', async () => {
      chmodSync(h.stateDir, 0o770);
      const { stateDir } = h;
      expect(await failure(h.add())).toEqual({
        code: 105,
        msg: `unsafe stateDir: ${stateDir} is writable by group or others (mode 0770): chmod 0700 ${stateDir}`,
        cause: expect.any(UnsafeDirError),
      });
      expect(h.left()).toMatchObject({ sent: 0, record: false, handed: [] });
    });

    it(
      'with code 11 after lockWaitMs while another command ' + "holds the attachment's lock, having done nothing",
      async () => {
        const held = (await h.locks.take('c1@eth0', 0))!;
        expect(await failure(h.drive(h.add(), 1000))).toMatchObject({
          code: 11,
          msg: `another command on this attachment still runs after ${lockWaitMs(1000)} ms: try again later`,
        });
        expect(h.left()).toMatchObject({ at: lockWaitMs(1000), sent: 0, handed: [] });
        held.release();
      },
    );

    const notFoundTitle =
      'with code 101 when the pod has no such interface: no job, any work the table had ends, the packet socket is ' +
      'closed in the background';
    it(notFoundTitle, async () => {
      h.pod.links = [];
      expect(await failure(h.add())).toMatchObject({ code: 101, msg: `pod interface "eth0" not found in ${NETNS}` });
      const cancel = [{ cancel: 'c1@eth0.json' }];
      expect(h.left()).toMatchObject({ sent: 0, record: false, handed: cancel, released: [PACKET_FD] });
    });

    const leavesTitle =
      'with code 101 when the interface leaves the pod while ADD waits for it; the pending job of an earlier ADD is ' +
      'dropped';
    it(leavesTitle, async () => {
      h.previous({ job: PENDING });
      h.eth0({ running: false });
      h.onWait = () => void (h.pod.links = []);
      expect(await failure(h.add())).toMatchObject({
        code: 101,
        msg: `pod interface "eth0" disappeared from ${NETNS}`,
      });
      expect(h.left()).toMatchObject({ record: false, handed: [{ cancel: 'c1@eth0.json' }] });
    });
  });
});

describe('a repeated ADD', () => {
  it("takes the attachment over: a new job replaces the pending one in the announcer's table", async () => {
    const earlier = h.previous({ job: PENDING, originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }] });
    h.timers.advance(500);
    await h.add();
    const now = h.readBack();
    expect(now.originalMacs).toEqual(earlier.originalMacs); // same netns: still to restore on DEL
    expect(now.job!.firstRoundAt).toBe(h.timers.bootMs());
    expect(now.job!.readyDeadline).not.toBe(PENDING.readyDeadline); // the announcer tells the jobs apart by it
    expect(h.handed).toEqual([expect.objectContaining({ added: 'c1@eth0.json', job: true })]);
  });

  it('ends the pending work when it has none of its own', async () => {
    h.previous({ job: PENDING });
    await h.add({ announce: false });
    expect(h.left()).toMatchObject({ sent: 0, record: false, handed: [{ added: 'c1@eth0.json', job: false }] });
  });

  it.each([
    ['another device', { dev: 5, ino: NETNS_ID.ino }],
    ['another inode', { dev: NETNS_ID.dev, ino: 1 }],
  ])(
    'takes over a record of another netns at the same path (%s) without its original MACs, and says so',
    async (_what, netnsId) => {
      h.previous({ netnsId, originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }] });
      await h.add();
      expect(h.readBack().originalMacs).toEqual([]);
      const msg = 'the previous record was for another netns: not keeping its original MACs';
      expect(h.said(msg)).toEqual([{ level: 'info', msg, fields: { netns: NETNS } }]);
    },
  );

  it('replaces a record of another netns with no MACs to keep without a word', async () => {
    h.previous({ netnsId: { dev: 4, ino: 1 } });
    await h.add();
    expect(h.records().filter((r) => r.msg.includes('previous record'))).toEqual([]);
  });
});

describe('IP-derived MACs', () => {
  const recordsFirstTitle =
    'records the original MAC before setting the new one, announces with the new one, and returns it by result index';
  it(recordsFirstTitle, async () => {
    let recordedBeforeSet: unknown;
    h.pod.setMacError = () => void (recordedBeforeSet = h.readBack().originalMacs);
    expect(await h.add(withMac({ resultIndex: 1 }))).toEqual(new Map([[1, '0a:58:0a:58:00:63']]));
    expect(recordedBeforeSet).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
    expect(h.sent[0]!.frame.subarray(6, 12)).toEqual(DERIVED);
    expect(h.readBack().originalMacs).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
    expect(h.said('set IP-derived MAC')).toMatchObject([
      { level: 'info', fields: { interface: 'eth0', from: ORIGINAL, to: '0a:58:0a:58:00:63' } },
    ]);
  });

  it('sets the MAC of an interface without a result index, and returns none for it', async () => {
    expect(await h.add(withMac({ resultIndex: undefined }))).toEqual(new Map());
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
  });

  it('changes and records nothing when the interface already has the MAC, but still returns it', async () => {
    h.eth0({ mac: DERIVED });
    expect(await h.add(withMac({ resultIndex: 0 }))).toEqual(new Map([[0, '0a:58:0a:58:00:63']]));
    expect({ set: h.pod.setMacs, recorded: h.readBack().originalMacs }).toEqual({ set: [], recorded: [] });
  });

  it('sets the MAC of the interface the plan names, by name', async () => {
    h.podWithNet1();
    expect(await h.add(withMac({ targetMac: undefined }, { ...NET1, resultIndex: 2 }))).toEqual(
      new Map([[2, '0a:58:0a:58:00:63']]),
    );
    expect(h.pod.setMacs).toEqual([{ index: 3, mac: '0a580a580063' }]);
    expect(h.readBack().originalMacs).toEqual([{ name: 'net1', mac: NET1_ORIGINAL }]);
  });

  it('keeps the MAC recorded by an earlier ADD in the same netns, not the one it set', async () => {
    h.eth0({ mac: Buffer.from('0a580a580001', 'hex') }); // an earlier derived MAC
    h.previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    await h.add(withMac());
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
    expect(h.readBack().originalMacs).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
  });

  it('keeps the record of the original MACs when no background work is left, also after an earlier ADD', async () => {
    const earlier = h.previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    await h.add({ plan: { ...withMac().plan!, schedule: [0] } });
    expect(h.readBack()).toEqual(earlier);
  });

  it('records the original MAC of another interface beside one an earlier ADD recorded', async () => {
    h.podWithNet1();
    h.previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    await h.add(withMac({ targetMac: undefined }, NET1));
    expect(h.readBack().originalMacs).toEqual([
      { name: 'eth0', mac: ORIGINAL },
      { name: 'net1', mac: NET1_ORIGINAL },
    ]);
  });

  const NO_ETHERNET = 'interface has no Ethernet address: not setting the IP-derived MAC';
  const IPVLAN = 'ipvlan shares its parent MAC: not setting the IP-derived MAC';
  it.each([
    ['an ipvlan (it shares its parent MAC)', { kind: 'ipvlan', ipvlanMode: 'l2' }, IPVLAN],
    ['a link with no MAC', { mac: undefined }, NO_ETHERNET],
    ['a link with a MAC that is not Ethernet', { mac: Buffer.alloc(20, 0x80) }, NO_ETHERNET],
  ] as const)('leaves %s alone, and says so', async (_what, link, msg) => {
    h.eth0({ ...link });
    expect(await h.add(withMac())).toEqual(new Map());
    expect(h.pod.setMacs).toEqual([]);
    expect(h.said(msg)).toEqual([{ level: 'warn', msg, fields: { interface: 'eth0' } }]);
  });

  it('sets no MAC on an interface that left the pod after it was found, and fails ADD as gone', async () => {
    let looks = 0;
    const links = h.pod.links;
    Object.defineProperty(h.pod, 'links', { get: () => (++looks > 1 ? [] : links) });
    await expect(h.add(withMac())).rejects.toThrow(`pod interface "eth0" disappeared from ${NETNS}`);
    expect(h.pod.setMacs).toEqual([]);
    expect(h.said(NO_ETHERNET)).toHaveLength(1);
  });

  it('keeps the original MAC in the record for DEL when ADD then fails', async () => {
    h.eth0({ running: false });
    h.onWait = () => void (h.pod.links = []); // the MAC is set, then the interface leaves while ADD waits for it
    await expect(h.add(withMac())).rejects.toThrow(`pod interface "eth0" disappeared from ${NETNS}`);
    const { job, originalMacs } = h.readBack();
    expect({ job, originalMacs }).toEqual({ job: undefined, originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
  });
});

describe('state failures', () => {
  it('fail ADD when the original MAC cannot be recorded, before the MAC changes; the lock is released', async () => {
    mkdirSync(join(h.file(), 'blocker'), { recursive: true }); // the record's name is taken by a directory
    const err = await h.add(withMac()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot write state in ${h.stateDir}: `));
    expect((err as StateError).cause).toBeInstanceOf(Error);
    expect(h.pod.setMacs).toEqual([]);
    expect(h.said('cannot record the original MACs')).toMatchObject([{ level: 'error' }]);
    expect(await h.locks.take('c1@eth0', 0)).toBeDefined();
  });

  it('fail ADD when the record of an earlier ADD cannot be removed; the pod session is closed', async () => {
    h.previous();
    h.onOpen = () => {
      rmSync(h.file());
      mkdirSync(join(h.file(), 'blocker'), { recursive: true });
    };
    const err = await h.add({ announce: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot remove the state record ${h.file()}: `));
    expect((err as StateError).cause).toMatchObject({ code: 'EISDIR' });
    expect(existsSync(h.file())).toBe(true);
    expect(h.released).toEqual([PACKET_FD]);
  });
});

describe("a caller that no longer waits, or an announcer that stops (the command's gate)", () => {
  const SET_AND_RESTORED = ['0a580a580063', ORIGINAL.replaceAll(':', '')];

  it('stops before setting a MAC: nothing set, nothing sent, no record', async () => {
    h.wanted = () => false;
    await expect(h.add(withMac())).rejects.toBeInstanceOf(NotWantedError);
    expect(h.left()).toMatchObject({ macs: [], sent: 0, record: false });
  });

  it('gone before round 1: restores the MAC it set, sends nothing, leaves no record', async () => {
    let asks = 0;
    h.wanted = () => ++asks <= 1; // wanted at the MAC, gone at round 1
    await expect(h.add(withMac())).rejects.toThrow('stopped before round 1');
    expect(h.left()).toMatchObject({ macs: SET_AND_RESTORED, sent: 0, record: false });
    expect(h.said('restored the original MAC')).toEqual([
      { level: 'info', msg: 'restored the original MAC', fields: { interface: 'eth0', mac: ORIGINAL } },
    ]);
  });

  const undoneInPartTitle =
    'gone before round 1, a MAC it cannot put back: restores the others, logs why, and keeps that one (and one of ' +
    'an interface no longer in the pod) recorded for DEL';
  it(undoneInPartTitle, async () => {
    h.podWithNet1();
    h.previous({ originalMacs: [{ name: 'gone0', mac: '02:42:0a:5a:00:09' }] });
    let asks = 0;
    h.wanted = () => ++asks <= 2; // wanted at both MACs, gone at round 1
    h.pod.setMacError = (index) =>
      index === 3 && h.pod.setMacs.some((s) => s.index === 3) ? new Error('set MAC of ifindex 3: EBUSY') : undefined;
    await expect(h.add(withMac({}, NET1))).rejects.toThrow('stopped before round 1');
    expect(h.left().macs).toEqual(['0a580a580063', ...SET_AND_RESTORED]);
    expect(h.said('cannot restore the original MAC: DEL will try again')).toMatchObject([
      { level: 'error', fields: { interface: 'net1', mac: NET1_ORIGINAL, error: 'set MAC of ifindex 3: EBUSY' } },
    ]);
    expect(h.readBack().originalMacs).toEqual([
      { name: 'gone0', mac: '02:42:0a:5a:00:09' },
      { name: 'net1', mac: NET1_ORIGINAL },
    ]);
  });

  it('gone after round 1: counts and logs the frames sent before, restores the MAC, writes no job', async () => {
    let asks = 0;
    h.wanted = () => ++asks <= 2; // wanted at the MAC and at round 1, gone before the record
    await expect(h.add(withMac())).rejects.toThrow(/1 frames sent before/);
    expect(h.left()).toMatchObject({ sent: 1, macs: SET_AND_RESTORED, record: false });
    expect(h.said('the caller no longer waits: ADD stops and undoes what it did')).toMatchObject([
      { level: 'warn', fields: { before: 'writing the record', framesSentBefore: 1 } },
    ]);
  });

  const stoppedMidWaitTitle =
    'stopped by a stopping announcer while it waits for its pod (its wait rejects): restores the MAC it set, sends ' +
    'nothing, leaves no record; its gate says it acted (the MAC), so the announcer answers rather than passing it on';
  const passedOnTitle =
    'has not acted while it waits for its pod with no MAC to set: a stopping announcer passes it on';
  it.each([
    [stoppedMidWaitTitle, withMac(), SET_AND_RESTORED, true],
    [passedOnTitle, {}, [], false],
  ])('%s', async (_title, extra, macs, acted) => {
    h.eth0({ up: false }); // not ready: ADD waits
    const stop = new NotWantedError('the end of its wait', 0, 'the announcer (pid 7) stops');
    await expect(h.add(extra, { ...h.ctx(), waits: { readable: async () => Promise.reject(stop) } })).rejects.toBe(
      stop,
    );
    expect(h.left()).toMatchObject({ macs, sent: 0, record: false });
    expect(h.gate.acted).toBe(acted);
  });
});
