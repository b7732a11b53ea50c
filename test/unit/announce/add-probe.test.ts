// ADD's conflict check before round 1 (add-probe.ts, probe-pod.ts), driven
// through announceOnAdd in the fake world of test/support/add-harness.ts:
// another host answers an ARP probe on the pod's interface.
import { existsSync, readFileSync } from 'node:fs';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd } from '../../../src/announce/announce-on-add';
import { AddressConflictError } from '../../../src/announce/errors';
import { recordPath, type AttachmentRecord } from '../../../src/announce/state';
import type { AnnouncePlan, InterfacePlan } from '../../../src/plan';
import { AddHarness, PACKET_FD, PLAN, POD_MAC, RECEIVER_FD } from '../../support/add-harness';
import { fakeAddress, fakeLink } from '../../support/fake-rtnl';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  h.pod.addresses.push(fakeAddress(2, '10.88.0.6'));
});
afterEach(() => h.cleanup());

const file = () => recordPath(h.stateDir, 'c1', 'eth0');
const readBack = (): AttachmentRecord => JSON.parse(readFileSync(file(), 'utf8')) as AttachmentRecord;
const SQUATTER = Buffer.from('525400123456', 'hex');
const NET1_MAC = Buffer.from('02000000aa03', 'hex');
const ip = (text: string) => Buffer.from(text.split('.').map(Number));

/** A unicast ARP reply from `mac` saying it has `address`, to `to` (what Linux answers a probe with). */
function replyFrom(mac: Buffer, address: string, to: Buffer = POD_MAC): Buffer {
  return Buffer.concat([to, mac, Buffer.from('08060001080006040002', 'hex'), mac, ip(address), to, Buffer.alloc(4)]);
}

const TWO: InterfacePlan = {
  name: 'eth0',
  resultIndex: 0,
  addresses: [],
  ipv4: ['10.88.0.5', '10.88.0.6'],
  ipv6: [],
  targetMac: undefined,
  gateways: { ipv4: [], ipv6: [] },
};
const planOf = (...interfaces: InterfacePlan[]): AnnouncePlan => ({ ...PLAN, interfaces });
const PROBE = { probeMs: 200, probes: 2 };

/** What went out: `probe <ip>` (sender IP 0.0.0.0, target IP) or `garp <ip>`, with the interface index. */
function described(): string[] {
  return h.sent.map(({ index, frame }) => {
    const sender = frame.subarray(28, 32).join('.');
    return sender === '0.0.0.0' ? `${index} probe ${frame.subarray(38, 42).join('.')}` : `${index} garp ${sender}`;
  });
}

describe('conflictCheck warn', () => {
  const probesEveryIPv4Title =
    'probes every IPv4 address over the window, leaves out the one another ' +
    'host answers for, now and in later rounds';
  it(probesEveryIPv4Title, async () => {
    h.timers.advance(500);
    h.arpIn.set(2, [replyFrom(SQUATTER, '10.88.0.5')]);
    await announceOnAdd(h.deps(), h.job({ plan: planOf(TWO), conflictCheck: { action: 'warn', ...PROBE } }));
    expect(described()).toEqual([
      '2 probe 10.88.0.5',
      '2 probe 10.88.0.6',
      '2 probe 10.88.0.5',
      '2 probe 10.88.0.6',
      '2 garp 10.88.0.6',
    ]);
    expect(h.receiversOpened).toEqual([[2]]);
    expect(h.lines).toContainEqual(
      'WARN address conflict: not announcing 10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 ' +
        '(it answered ARP for that address on eth0) address=10.88.0.5 mac=52:54:00:12:34:56 interface=eth0',
    );
    expect(h.lines).toContainEqual('DEBUG conflict probe done addresses=2 probes=2 conflicts=1');
    expect(readBack().job).toMatchObject({
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.6'], ipv6: [] }],
      conflicts: 1,
    });
    expect(h.handed).toEqual([
      {
        added: 'c1@eth0.json',
        job: true,
        sent: { garpRequest: 1, garpReply: 0, na: 0 },
        conflicts: 1,
        gateway: OFF_VERDICT,
      },
    ]);
    // The receiver is released once the window is over, the packet socket once round 1 is out: neither closed by ADD
    // itself.
    expect(h.released).toEqual([[RECEIVER_FD], [PACKET_FD]]);
    expect(h.closed).toEqual([]);
  });

  it('leaves no job when every address of the attachment is in use', async () => {
    h.arpIn.set(2, [replyFrom(SQUATTER, '10.88.0.5')]);
    await announceOnAdd(h.deps(), h.job({ conflictCheck: { action: 'warn', ...PROBE } }));
    expect(described()).toEqual(['2 probe 10.88.0.5']); // nothing left to learn: the window ends
    expect(existsSync(file())).toBe(false);
    expect(h.handed).toEqual([expect.objectContaining({ added: 'c1@eth0.json', job: false, conflicts: 1 })]);
  });

  it('keeps a job for the interfaces that have addresses left', async () => {
    h.pod.links.push(fakeLink({ index: 3, name: 'net1', mac: NET1_MAC }));
    h.pod.addresses.push(fakeAddress(3, '10.89.0.7'));
    h.arpIn.set(2, [replyFrom(SQUATTER, '10.88.0.5')]);
    const net1: InterfacePlan = {
      name: 'net1',
      resultIndex: 1,
      addresses: [],
      ipv4: ['10.89.0.7'],
      ipv6: [],
      targetMac: undefined,
      gateways: { ipv4: [], ipv6: [] },
    };
    await announceOnAdd(
      h.deps(),
      h.job({ plan: planOf(PLAN.interfaces[0]!, net1), conflictCheck: { action: 'warn', ...PROBE } }),
    );
    expect(h.receiversOpened).toEqual([[2, 3]]);
    expect(readBack().job?.interfaces).toEqual([
      { name: 'eth0', ipv4: [], ipv6: [] },
      { name: 'net1', ipv4: ['10.89.0.7'], ipv6: [] },
    ]);
  });

  it("takes no ARP from the pod's own interfaces for a conflict (a link without MAC beside them is fine)", async () => {
    h.pod.links = [
      fakeLink({ index: 9, name: 'tun0', mac: undefined }),
      ...h.pod.links,
      fakeLink({ index: 3, name: 'net1', mac: NET1_MAC }),
    ];
    h.arpIn.set(2, [replyFrom(NET1_MAC, '10.88.0.5')]);
    await announceOnAdd(h.deps(), h.job({ conflictCheck: { action: 'warn', ...PROBE } }));
    expect(described()).toEqual(['2 probe 10.88.0.5', '2 probe 10.88.0.5', '2 garp 10.88.0.5']);
    expect(h.lines).toContainEqual('DEBUG conflict probe done addresses=1 probes=2 conflicts=0');
    expect(h.timers.now()).toBe(200); // the whole window
  });

  it('probes nothing when round 1 has no IPv4 address', async () => {
    h.pod.addresses = [fakeAddress(2, 'fd00::5')];
    const v6: InterfacePlan = { ...TWO, ipv4: [], ipv6: ['fd00::5'] };
    await announceOnAdd(h.deps(), h.job({ plan: planOf(v6), conflictCheck: { action: 'warn', ...PROBE } }));
    expect(h.receiversOpened).toEqual([]);
    expect(h.sent).toHaveLength(1);
    expect(h.handed[0]).toMatchObject({ conflicts: 0 });
  });

  it('announces unprobed, logging why, when the probe cannot run', async () => {
    const deps = h.deps();
    deps.open.receivers = () => {
      throw new Error('socket(AF_PACKET): EPERM');
    };
    await announceOnAdd(deps, h.job({ conflictCheck: { action: 'warn', ...PROBE } }));
    expect(described()).toEqual(['2 garp 10.88.0.5']);
    expect(h.lines).toContainEqual(
      'ERROR conflict probe failed: announcing without it error="socket(AF_PACKET): EPERM"',
    );
    expect(readBack().job).toMatchObject({
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
      conflicts: 0,
    });
    expect(h.handed[0]).toMatchObject({ conflicts: 0 });
  });
});

describe('conflictCheck fail', () => {
  const DERIVED = Buffer.from('0a580a580063', 'hex');

  it('announces after a window in which nobody answered', async () => {
    await announceOnAdd(h.deps(), h.job({ plan: planOf(TWO), conflictCheck: { action: 'fail', ...PROBE } }));
    expect(described()).toEqual([
      '2 probe 10.88.0.5',
      '2 probe 10.88.0.6',
      '2 probe 10.88.0.5',
      '2 probe 10.88.0.6',
      '2 garp 10.88.0.5',
      '2 garp 10.88.0.6',
    ]);
    expect(h.handed[0]).toMatchObject({ conflicts: 0 });
    // Between probes ADD waits on the receiver through the injected waits, never on its own.
    expect(h.waited).toEqual([
      { fds: [RECEIVER_FD], ms: 100 },
      { fds: [RECEIVER_FD], ms: 100 },
    ]);
  });

  it('fails ADD at the first conflict, announcing nothing, and puts the original MAC back', async () => {
    h.arpIn.set(2, [replyFrom(SQUATTER, '10.88.0.5', DERIVED)]);
    const plan = planOf({ ...TWO, targetMac: DERIVED });
    const err = await announceOnAdd(h.deps(), h.job({ plan, conflictCheck: { action: 'fail', ...PROBE } })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AddressConflictError);
    expect((err as AddressConflictError).conflicts).toEqual([
      { address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0', kind: 'reply' },
    ]);
    expect(described()).toEqual(['2 probe 10.88.0.5', '2 probe 10.88.0.6']); // the window ended at the conflict
    expect(h.lines).toContainEqual('DEBUG conflict probe done addresses=2 probes=2 conflicts=1');
    expect(h.timers.now()).toBe(0);
    expect(h.pod.setMacs).toEqual([
      { index: 2, mac: '0a580a580063' },
      { index: 2, mac: '0a580a580005' },
    ]);
    expect(existsSync(file())).toBe(false);
    expect(h.released).toEqual([[RECEIVER_FD], [PACKET_FD]]);
  });

  it('fails ADD with the probe error when the probe cannot run, keeping the set MAC recorded for DEL', async () => {
    const deps = h.deps();
    deps.open.receivers = () => {
      throw new Error('socket(AF_PACKET): EPERM');
    };
    const err = await announceOnAdd(
      deps,
      h.job({ plan: planOf({ ...TWO, targetMac: DERIVED }), conflictCheck: { action: 'fail', ...PROBE } }),
    ).catch((e: unknown) => e);
    expect((err as Error).message).toBe('socket(AF_PACKET): EPERM');
    expect(h.sent).toEqual([]);
    expect(h.pod.setMacs).toEqual([{ index: 2, mac: '0a580a580063' }]);
    expect(readBack().originalMacs).toEqual([{ name: 'eth0', mac: '0a:58:0a:58:00:05' }]);
  });
});
