// ADD's announcement without root: a fake pod behind the injected socket
// opener, a manual clock with waits on it, a fake background announcer, and a real stateDir.
import { Gate } from '../../../src/daemon/admission';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd, type AddDeps, type AddJob } from '../../../src/announce/announce-on-add';
import { lockWaitMs } from '../../../src/announce/attachment-lock';
import { UNLIMITED, type FrameBudget } from '../../../src/announce/budget';
import type { SocketOpener } from '../../../src/announce/session';
import { recordPath, writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import type { BackgroundJob } from '../../../src/announce/background-job';
import type { CniError } from '../../../src/cni/errors';
import { toCniError } from '../../../src/commands/errors';
import type { Handed } from '../../support/add-harness';
import { createLogger } from '../../../src/log';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import type { AnnouncePlan } from '../../../src/plan';
import type { HostSockets, PodSockets } from '../../../src/sys/netns';
import type { Rtnl, RtnlEvents } from '../../../src/sys/rtnl';
import type { LinkInfo } from '../../../src/wire/rtnetlink';
import { fakeAddress, fakeLink } from '../../support/fake-rtnl';
import { fakeLibc } from '../../support/fake-libc';
import { ManualTimers, settle } from '../../support/manual-timers';
import { RecordMemory } from '../../../src/announce/record-memory';

const NETNS = '/run/netns/pod';
const NETNS_ID = { dev: 4, ino: 4026532999 };
const PACKET_FD = 60;
import { POD_MAC } from '../../support/daemon-fakes';

let stateDir: string;
let timers: ManualTimers;
let lines: string[];
let frames: Buffer[];
let handed: Handed[];
let released: number[];
let eth0: LinkInfo;

beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'announce-on-add-'));
  timers = new ManualTimers();
  lines = [];
  frames = [];
  handed = [];
  released = [];
  eth0 = fakeLink({ index: 2, name: 'eth0', mac: POD_MAC });
});

afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

/** The pod seen through its sockets: `links()` is read on every request, so a test can change it meanwhile. */
function fakeOpener(links: () => LinkInfo[]): SocketOpener {
  const rtnl = {
    linkByName: (name: string) => links().find((l) => l.name === name),
    linkByIndex: (index: number) => links().find((l) => l.index === index),
    links,
    addresses: (index: number) => (index === eth0.index ? [fakeAddress(index, '10.88.0.5')] : []),
    bridgePortState: () => undefined,
    setMac: () => undefined,
    close: () => undefined,
  } as unknown as Rtnl;
  const events = (fd: number) => ({ fd, drain: () => undefined, close: () => undefined }) as unknown as RtnlEvents;
  let packetOpen = true;
  const pod: PodSockets = {
    rtnl,
    events: events(50),
    packet: {
      send: (_index, frame) => void frames.push(Buffer.from(frame)),
      close: () => undefined,
      release: () => {
        packetOpen = false;
        return PACKET_FD;
      },
    },
    ipv6Forwarding: false,
    close: () => expect(packetOpen).toBe(false), // ADD always releases its packet socket
  };
  const host: HostSockets = {
    rtnl: { linkByIndex: () => undefined, linkByName: () => undefined } as unknown as Rtnl,
    events: events(51),
    close: () => undefined,
  };
  return { pod: () => pod, host: () => host, receivers: () => expect.fail('no conflict probe in these tests') };
}

/** ADD's dependencies; what it hands to the announcer's table of work goes to `handed`. */
function deps(links: () => LinkInfo[] = () => [eth0]): AddDeps {
  return {
    libc: fakeLibc({ close: () => expect.fail('ADD closes no socket itself') }),
    open: fakeOpener(links),
    timers,
    // A change in the pod wakes nothing here: a wait just lets the clock run to its end.
    waits: { readable: async (_fds, ms) => timers.advance(ms) },
    log: createLogger((line) => lines.push(line), 'debug'),
    gate: new Gate(() => true),
    host: {
      added: (name, record, report) => (handed.push({ added: name, job: record.job !== undefined, ...report }), false),
      cancel: (name) => (handed.push({ cancel: name }), true),
    },
    budget: UNLIMITED,
    lockFile: async (path) => ({ path, release: () => undefined }),
    written: new RecordMemory(),
    release: (fds) => void released.push(...fds),
  };
}

const PLAN: AnnouncePlan = {
  interfaces: [
    {
      name: 'eth0',
      resultIndex: 0,
      addresses: ['10.88.0.5/16'],
      ipv4: ['10.88.0.5'],
      ipv6: [],
      targetMac: undefined,
      gateways: { ipv4: [], ipv6: [] },
    },
  ],
  hostPeerNames: [],
  arpOps: ['request'],
  schedule: [0, 1000, 3000],
};

function job(extra: Partial<AddJob> = {}): AddJob {
  return {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: NETNS,
    netnsId: NETNS_ID,
    stateDir,
    plan: PLAN,
    announce: true,
    addWaitMs: 1000,
    readyTimeoutMs: 5000,
    logLevel: 'info',
    gatewayCheck: { mode: 'off', windowMs: 1000, gateways: [] },
    ...extra,
  };
}

const file = () => recordPath(stateDir, 'c1', 'eth0');
const readBack = (): AttachmentRecord => JSON.parse(readFileSync(file(), 'utf8')) as AttachmentRecord;

/** What the runtime would get: the CNI error object ADD prints. */
async function cniFailure(run: Promise<unknown>): Promise<{ code: number; msg: string }> {
  const err = await run.then(
    () => expect.fail('ADD succeeded'),
    (e: unknown) => e,
  );
  const { code, msg } = (toCniError(err, 'ADD') as CniError).toSpec('1.1.0');
  return { code, msg };
}

/** A record with background work still pending, as an earlier ADD of the attachment leaves it. */
function pendingRecord(extra: Partial<AttachmentRecord> = {}): AttachmentRecord {
  const pending: BackgroundJob = {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: NETNS,
    netnsId: NETNS_ID,
    interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
    hostPeerNames: [],
    arpOps: ['request'],
    schedule: [0, 1000, 3000],
    firstRoundAt: 999_000,
    readyDeadline: 1_004_000,
    logLevel: 'info',
  };
  const record: AttachmentRecord = {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: NETNS,
    netnsId: NETNS_ID,
    originalMacs: [],
    job: pending,
    ...extra,
  };
  writeRecord(stateDir, record, new RecordMemory());
  return record;
}

describe('announceOnAdd', () => {
  const sendsRoundHandsTitle =
    'sends round 1, hands the rest of the burst to the background announcer and releases its packet socket';
  it(sendsRoundHandsTitle, async () => {
    expect(await announceOnAdd(deps(), job())).toEqual(new Map());
    expect(frames).toHaveLength(1);
    expect(readBack().job).toMatchObject({
      schedule: [0, 1000, 3000],
      firstRoundAt: timers.bootMs(),
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'] }],
    });
    expect(handed).toEqual([
      {
        added: 'c1@eth0.json',
        job: true,
        sent: { garpRequest: 1, garpReply: 0, na: 0 },
        conflicts: 0,
        gateway: OFF_VERDICT,
      },
    ]);
    expect(released).toEqual([PACKET_FD]);
  });

  const keptTitle =
    'leaves its pod session open when the table keeps it (for the gateway check), and closes it when that throws';
  it(keptTitle, async () => {
    const kept: unknown[] = [];
    const keeping = deps();
    keeping.host = { ...keeping.host, added: (_name, _record, _report, session) => (kept.push(session), true) };
    await announceOnAdd(keeping, job());
    expect({ kept: kept.length, released }).toEqual({ kept: 1, released: [] });
    const throwing = deps();
    throwing.host = {
      ...throwing.host,
      added: () => {
        throw new Error('the table broke');
      },
    };
    await expect(announceOnAdd(throwing, job())).rejects.toThrow('the table broke');
    expect(released).toEqual([PACKET_FD]);
  });

  const sendsRoundOnTitle =
    'sends round 1 on credit before a command waiting for the attachment lock ' +
    'gives up, when the rate limit keeps it waiting';
  it(sendsRoundOnTitle, async () => {
    // Ready only after 25 s of ADD's 30 s readiness wait, and a node-wide budget that grants nothing
    // metered: waiting a full addWaitMs from readiness would hold the lock past lockWaitMs.
    const READY_AT = 25_000;
    const late = () => [{ ...eth0, running: timers.now() >= READY_AT }];
    let sentAt: number | undefined;
    const starved: FrameBudget = {
      take: async (_frames, _clock, onCredit, send) => {
        if (!onCredit) return { ok: false, waitMs: 60_000 };
        sentAt = timers.now();
        send();
        return { ok: true };
      },
    };
    const addWaitMs = 30_000;
    const adding = announceOnAdd({ ...deps(late), budget: starved }, job({ addWaitMs, readyTimeoutMs: 60_000 }));
    while (sentAt === undefined && timers.now() < 2 * addWaitMs) {
      await settle();
      timers.advance(100);
    }
    await adding;
    expect(frames).toHaveLength(1);
    expect(sentAt).toBeGreaterThan(READY_AT);
    expect(sentAt).toBeLessThan(lockWaitMs(addWaitMs));
  });

  it('says once, at debug, why it waits for the pod, then sends round 1 once the pod is ready', async () => {
    const late = () => [{ ...eth0, running: timers.now() >= 2000 }];
    await announceOnAdd(deps(late), job({ addWaitMs: 5000 }));
    const said = lines
      .map((l, i) => [i, l] as const)
      .filter(([, l]) => / DEBUG pod not ready: waiting for it /.test(l));
    expect(said).toHaveLength(1);
    expect(said[0]![1]).toMatch(/upToMs=5000 .*eth0 has no carrier/);
    expect(lines.findIndex((l) => / INFO announced /.test(l))).toBeGreaterThan(said[0]![0]);
    expect(frames).toHaveLength(1);
  });

  describe('fails with code 105 (state)', () => {
    it('when stateDir is not private, naming the fix; nothing is sent or recorded', async () => {
      chmodSync(stateDir, 0o770);
      expect(await cniFailure(announceOnAdd(deps(), job()))).toEqual({
        code: 105,
        msg: `unsafe stateDir: ${stateDir} is writable by group or others (mode 0770): chmod 0700 ${stateDir}`,
      });
      expect(frames).toEqual([]);
      expect(existsSync(file())).toBe(false);
      expect(handed).toEqual([]);
    });

    it('when the attachment lock cannot be taken', async () => {
      const failing = { ...deps(), lockFile: async () => Promise.reject(new Error('EACCES: permission denied')) };
      expect(await cniFailure(announceOnAdd(failing, job()))).toEqual({
        code: 105,
        msg: `cannot lock the attachment in ${stateDir}: EACCES: permission denied`,
      });
    });
  });

  it('fails with code 11 when another command keeps the attachment locked', async () => {
    const busy = { ...deps(), lockFile: async () => undefined };
    expect(await cniFailure(announceOnAdd(busy, job()))).toEqual({
      code: 11,
      msg: `another command on this attachment still runs after ${lockWaitMs(1000)} ms: try again later`,
    });
  });

  describe('fails with code 101 (interface not found)', () => {
    it('when the pod has no such interface; the packet socket is still released', async () => {
      expect(
        await cniFailure(
          announceOnAdd(
            deps(() => []),
            job(),
          ),
        ),
      ).toEqual({ code: 101, msg: `pod interface "eth0" not found in ${NETNS}` });
      expect(frames).toEqual([]);
      expect(existsSync(file())).toBe(false);
      expect(handed).toEqual([{ cancel: 'c1@eth0.json' }]); // no job handed; any work the table had ends
      expect(released).toEqual([PACKET_FD]);
    });

    const whenInterfaceLeavesTitle =
      'when the interface leaves the pod while ADD waits for it; the pending job of an earlier ADD is dropped';
    it(whenInterfaceLeavesTitle, async () => {
      pendingRecord();
      eth0 = { ...eth0, running: false };
      let looks = 0;
      const leaving = () => (++looks > 2 ? [] : [eth0]); // resolved, not ready, then gone
      expect(await cniFailure(announceOnAdd(deps(leaving), job()))).toEqual({
        code: 101,
        msg: `pod interface "eth0" disappeared from ${NETNS}`,
      });
      expect(existsSync(file())).toBe(false);
      expect(handed).toEqual([{ cancel: 'c1@eth0.json' }]);
    });
  });

  describe('repeated while the work of an earlier ADD is pending', () => {
    it("takes the attachment over: a new job replaces the pending one in the announcer's table", async () => {
      const earlier = pendingRecord({ originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }] });
      timers.advance(500);
      await announceOnAdd(deps(), job());
      const now = readBack();
      expect(now.originalMacs).toEqual(earlier.originalMacs); // same netns: still to restore on DEL
      expect(now.job!.firstRoundAt).toBe(timers.bootMs());
      expect(now.job!.readyDeadline).not.toBe(earlier.job!.readyDeadline); // the announcer tells the jobs apart by it
      expect(handed).toEqual([expect.objectContaining({ added: 'c1@eth0.json', job: true })]);
    });

    it('ends that work when it has none of its own', async () => {
      pendingRecord();
      await announceOnAdd(deps(), job({ announce: false }));
      expect(frames).toEqual([]);
      expect(existsSync(file())).toBe(false);
      expect(handed).toEqual([expect.objectContaining({ added: 'c1@eth0.json', job: false })]);
    });

    it('does not keep original MACs recorded in another netns', async () => {
      pendingRecord({ netnsId: { dev: 4, ino: 1 }, originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }] });
      await announceOnAdd(deps(), job());
      expect(readBack().originalMacs).toEqual([]);
      expect(lines).toContainEqual(
        expect.stringContaining('the previous record was for another netns: not keeping its original MACs'),
      );
    });
  });
});
