// ADD's IP-derived MACs and its record: what is recorded before a MAC changes,
// what a repeated ADD keeps, and what a failure leaves for DEL. The fake world
// is test/support/add-harness.ts.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd } from '../../../src/announce/announce-on-add';
import { NotWantedError, StateError } from '../../../src/announce/errors';
import type { Gate } from '../../../src/daemon/admission';
import { UnsafeDirError } from '../../../src/sys/private-dir';
import { recordPath, writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import type { AnnouncePlan, InterfacePlan } from '../../../src/plan';
import { AddHarness, NETNS, NETNS_ID, PLAN } from '../../support/add-harness';
import { fakeAddress, fakeLink } from '../../support/fake-rtnl';
import { RecordMemory } from '../../../src/announce/record-memory';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
});
afterEach(() => h.cleanup());

const file = () => recordPath(h.stateDir, 'c1', 'eth0');
const readBack = (): AttachmentRecord => JSON.parse(readFileSync(file(), 'utf8')) as AttachmentRecord;
const DERIVED = Buffer.from('0a580a580063', 'hex'); // for 10.88.0.99
const ORIGINAL = '0a:58:0a:58:00:05'; // POD_MAC

function withMac(extra: Partial<InterfacePlan> = {}): AnnouncePlan {
  return { ...PLAN, interfaces: [{ ...PLAN.interfaces[0]!, targetMac: DERIVED, ...extra }] };
}

/** A record an earlier ADD of the attachment left. */
function previous(extra: Partial<AttachmentRecord>): AttachmentRecord {
  const record: AttachmentRecord = {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: NETNS,
    netnsId: NETNS_ID,
    originalMacs: [],
    ...extra,
  };
  writeRecord(h.stateDir, record, new RecordMemory());
  return record;
}

describe('IP-derived MACs', () => {
  const recordsOriginalMACTitle =
    'records the original MAC before setting the new one, announces with ' +
    'the new one, and returns it by result index';
  it(recordsOriginalMACTitle, async () => {
    let recordedBeforeSet: unknown;
    const deps = h.deps();
    const open = deps.open;
    deps.open = {
      ...open,
      pod: (netns) => {
        const pod = open.pod(netns);
        const setMac = pod.rtnl.setMac.bind(pod.rtnl);
        pod.rtnl.setMac = (index, mac) => {
          recordedBeforeSet = readBack().originalMacs;
          setMac(index, mac);
        };
        return pod;
      },
    };
    expect(await announceOnAdd(deps, h.job({ plan: withMac({ resultIndex: 1 }) }))).toEqual(
      new Map([[1, '0a:58:0a:58:00:63']]),
    );
    expect(recordedBeforeSet).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
    expect(h.sent[0]!.frame.subarray(6, 12)).toEqual(DERIVED);
    expect(readBack().originalMacs).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
    expect(h.lines).toContainEqual(
      'INFO set IP-derived MAC interface=eth0 from=0a:58:0a:58:00:05 to=0a:58:0a:58:00:63',
    );
  });

  it('sets the MAC of an interface without a result index, and returns none for it', async () => {
    expect(await announceOnAdd(h.deps(), h.job({ plan: withMac({ resultIndex: undefined }) }))).toEqual(new Map());
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
  });

  it('changes and records nothing when the interface already has the MAC, but still returns it', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, mac: DERIVED };
    expect(await announceOnAdd(h.deps(), h.job({ plan: withMac({ resultIndex: 0 }) }))).toEqual(
      new Map([[0, '0a:58:0a:58:00:63']]),
    );
    expect(h.pod.setMacs).toEqual([]);
    expect(readBack().originalMacs).toEqual([]);
  });

  it('keeps the MAC recorded by an earlier ADD in the same netns, not the one it set', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, mac: Buffer.from('0a580a580001', 'hex') }; // an earlier derived MAC
    previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    await announceOnAdd(h.deps(), h.job({ plan: withMac() }));
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
    expect(readBack().originalMacs).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
  });

  it('keeps the record of the original MACs when no background work is left, also after an earlier ADD', async () => {
    previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    await announceOnAdd(h.deps(), h.job({ plan: { ...withMac(), schedule: [0] } }));
    expect(readBack()).toEqual({
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      netns: NETNS,
      netnsId: NETNS_ID,
      originalMacs: [{ name: 'eth0', mac: ORIGINAL }],
    });
  });

  it('records the original MAC of another interface beside one an earlier ADD recorded', async () => {
    h.pod.links.push(fakeLink({ index: 3, name: 'net1', mac: Buffer.from('02000000aa03', 'hex') }));
    h.pod.addresses.push(fakeAddress(3, '10.89.0.7'));
    previous({ originalMacs: [{ name: 'eth0', mac: ORIGINAL }] });
    const net1: InterfacePlan = {
      name: 'net1',
      resultIndex: 1,
      addresses: [],
      ipv4: ['10.89.0.7'],
      ipv6: [],
      targetMac: DERIVED,
      gateways: { ipv4: [], ipv6: [] },
    };
    await announceOnAdd(h.deps(), h.job({ plan: { ...PLAN, interfaces: [PLAN.interfaces[0]!, net1] } }));
    expect(readBack().originalMacs).toEqual([
      { name: 'eth0', mac: ORIGINAL },
      { name: 'net1', mac: '02:00:00:00:aa:03' },
    ]);
  });

  it('sets no MAC on an interface that left the pod after it was found, and fails ADD as gone', async () => {
    let looks = 0;
    const links = h.pod.links;
    Object.defineProperty(h.pod, 'links', { get: () => (++looks > 1 ? [] : links), set: () => undefined });
    await expect(announceOnAdd(h.deps(), h.job({ plan: withMac() }))).rejects.toThrow(
      `pod interface "eth0" disappeared from ${NETNS}`,
    );
    expect(h.pod.setMacs).toEqual([]);
    expect(h.lines).toContainEqual(
      'WARN interface has no Ethernet address: not setting the IP-derived MAC interface=eth0',
    );
  });

  it('sets the MAC of the interface the plan names, by name', async () => {
    h.pod.links.push(fakeLink({ index: 3, name: 'net1', mac: Buffer.from('02000000aa03', 'hex') }));
    h.pod.addresses.push(fakeAddress(3, '10.89.0.7'));
    const interfaces: InterfacePlan[] = [
      { ...PLAN.interfaces[0]!, resultIndex: 0 },
      {
        name: 'net1',
        resultIndex: 2,
        addresses: ['10.89.0.7/24'],
        ipv4: ['10.89.0.7'],
        ipv6: [],
        targetMac: DERIVED,
        gateways: { ipv4: [], ipv6: [] },
      },
    ];
    expect(await announceOnAdd(h.deps(), h.job({ plan: { ...PLAN, interfaces } }))).toEqual(
      new Map([[2, '0a:58:0a:58:00:63']]),
    );
    expect(h.pod.setMacs).toEqual([{ index: 3, mac: '0a580a580063' }]);
    expect(readBack().originalMacs).toEqual([{ name: 'net1', mac: '02:00:00:00:aa:03' }]);
  });

  it('leaves an ipvlan alone: it shares its parent MAC', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, kind: 'ipvlan', ipvlanMode: 'l2' };
    expect(await announceOnAdd(h.deps(), h.job({ plan: withMac() }))).toEqual(new Map());
    expect(h.pod.setMacs).toEqual([]);
    expect(h.lines).toContainEqual('WARN ipvlan shares its parent MAC: not setting the IP-derived MAC interface=eth0');
  });

  it.each([
    ['no MAC', undefined],
    ['a MAC that is not Ethernet', Buffer.alloc(20, 0x80)],
  ])('leaves a link with %s alone', async (_what, mac) => {
    h.pod.links[0] = { ...h.pod.links[0]!, mac };
    expect(await announceOnAdd(h.deps(), h.job({ plan: withMac() }))).toEqual(new Map());
    expect(h.pod.setMacs).toEqual([]);
    expect(h.lines).toContainEqual(
      'WARN interface has no Ethernet address: not setting the IP-derived MAC interface=eth0',
    );
  });

  it('keeps the original MAC in the record for DEL when ADD then fails', async () => {
    let looks = 0;
    const links = h.pod.links;
    // Resolved, MAC set, then gone while ADD waits for it.
    Object.defineProperty(h.pod, 'links', {
      get: () => (++looks > 3 ? [] : links.map((l) => ({ ...l, running: false }))),
      set: () => undefined,
    });
    await expect(announceOnAdd(h.deps(), h.job({ plan: withMac() }))).rejects.toThrow(
      `pod interface "eth0" disappeared from ${NETNS}`,
    );
    expect(readBack().originalMacs).toEqual([{ name: 'eth0', mac: ORIGINAL }]);
    expect(readBack().job).toBeUndefined();
  });
});

describe('the previous record', () => {
  const isTakenOverTitle =
    'is taken over without its original MACs when it was for another netns at ' +
    'the same path (another device), and says so';
  it(isTakenOverTitle, async () => {
    previous({ netnsId: { dev: 5, ino: NETNS_ID.ino }, originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }] });
    await announceOnAdd(h.deps(), h.job());
    expect(readBack().originalMacs).toEqual([]);
    expect(h.lines).toContainEqual(
      `INFO the previous record was for another netns: not keeping its original MACs netns=${NETNS}`,
    );
  });

  it('of another netns with no MACs to keep is replaced without a word', async () => {
    previous({ netnsId: { dev: 4, ino: 1 } });
    await announceOnAdd(h.deps(), h.job());
    expect(h.lines.filter((l) => l.includes('previous record'))).toEqual([]);
  });
});

describe('state failures', () => {
  it('carry the cause: an unusable stateDir', async () => {
    rmSync(h.stateDir, { recursive: true });
    writeFileSync(h.stateDir, 'not a directory');
    const err = await announceOnAdd(h.deps(), h.job()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect((err as StateError).cause).toBeInstanceOf(UnsafeDirError);
    rmSync(h.stateDir);
    mkdirSync(h.stateDir);
  });

  it('carry the cause: a lock that cannot be taken', async () => {
    const cause = new Error('EACCES: permission denied');
    const err = await announceOnAdd({ ...h.deps(), lockFile: async () => Promise.reject(cause) }, h.job()).catch(
      (e: unknown) => e,
    );
    expect((err as StateError).cause).toBe(cause);
    expect(h.lockReleases).toBe(0);
  });

  it('fail ADD when the original MAC cannot be recorded, before the MAC changes; the lock is released', async () => {
    mkdirSync(join(file(), 'blocker'), { recursive: true }); // the record's name is taken by a directory
    const err = await announceOnAdd(h.deps(), h.job({ plan: withMac() })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot write state in ${h.stateDir}: `));
    expect((err as StateError).cause).toBeInstanceOf(Error);
    expect(h.pod.setMacs).toEqual([]);
    expect(h.lines).toContainEqual(expect.stringMatching(/^ERROR cannot record the original MACs error=/));
    expect(h.lockReleases).toBe(1);
  });

  it('fail ADD when the record of an earlier ADD cannot be removed', async () => {
    previous({});
    h.onOpen = () => {
      rmSync(file());
      mkdirSync(join(file(), 'blocker'), { recursive: true });
    };
    const err = await announceOnAdd(h.deps(), h.job({ announce: false })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot remove the state record ${file()}: `));
    expect((err as StateError).cause).toMatchObject({ code: 'EISDIR' });
    expect(existsSync(file())).toBe(true);
    expect(h.released).toEqual([[expect.any(Number)]]); // the pod session, closed though the pod part went well
  });
});

describe("a caller that no longer waits, or an announcer that stops (the command's gate)", () => {
  it('stops before setting a MAC: nothing set, nothing sent, no record', async () => {
    h.wanted = () => false;
    await expect(announceOnAdd(h.deps(), h.job({ plan: withMac() }))).rejects.toBeInstanceOf(NotWantedError);
    expect({ macs: h.pod.setMacs, sent: h.sent.length, record: existsSync(file()) }).toEqual({
      macs: [],
      sent: 0,
      record: false,
    });
  });

  it('gone before round 1: restores the MAC it set, sends nothing, leaves no record', async () => {
    let asks = 0;
    h.wanted = () => ++asks <= 1; // wanted at the MAC, gone at round 1
    await expect(announceOnAdd(h.deps(), h.job({ plan: withMac() }))).rejects.toThrow('stopped before round 1');
    expect(h.pod.setMacs.map((s) => s.mac)).toEqual(['0a580a580063', ORIGINAL.replaceAll(':', '')]);
    expect({ sent: h.sent.length, record: existsSync(file()) }).toEqual({ sent: 0, record: false });
  });

  it('gone after round 1: counts and logs the frames sent before, restores the MAC, writes no job', async () => {
    let asks = 0;
    h.wanted = () => ++asks <= 2; // wanted at the MAC and at round 1, gone before the record
    await expect(announceOnAdd(h.deps(), h.job({ plan: withMac() }))).rejects.toThrow(/1 frames sent before/);
    expect(h.sent).toHaveLength(1);
    expect(h.lines.some((l) => l.includes('the caller no longer waits') && l.includes('framesSentBefore=1'))).toBe(
      true,
    );
    expect(existsSync(file())).toBe(false);
  });

  const stoppedMidWaitTitle =
    'stopped by a stopping announcer while it waits for its pod (its wait rejects): restores the MAC it set, sends ' +
    'nothing, leaves no record; its gate says it acted (the MAC), so the announcer answers rather than passing it on';
  it(stoppedMidWaitTitle, async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, up: false }; // not ready: ADD waits
    const deps = h.deps();
    const stop = new NotWantedError('the end of its wait', 0, 'the announcer (pid 7) stops');
    const waits = { readable: async () => Promise.reject(stop) };
    await expect(announceOnAdd({ ...deps, waits }, h.job({ plan: withMac() }))).rejects.toBe(stop);
    expect(h.pod.setMacs.map((s) => s.mac)).toEqual(['0a580a580063', ORIGINAL.replaceAll(':', '')]);
    expect({ sent: h.sent.length, record: existsSync(file()), acted: (deps.gate as Gate).acted }).toEqual({
      sent: 0,
      record: false,
      acted: true,
    });
  });

  it('has not acted while it waits for its pod with no MAC to set: a stopping announcer passes it on', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, up: false };
    const deps = h.deps();
    const stop = new NotWantedError('the end of its wait', 0, 'the announcer (pid 7) stops: passed on');
    await expect(
      announceOnAdd({ ...deps, waits: { readable: async () => Promise.reject(stop) } }, h.job()),
    ).rejects.toBe(stop);
    expect({ sent: h.sent.length, record: existsSync(file()), acted: (deps.gate as Gate).acted }).toEqual({
      sent: 0,
      record: false,
      acted: false,
    });
  });
});
