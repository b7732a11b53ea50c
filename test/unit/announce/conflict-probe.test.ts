import type { AskingInterface } from '../../../src/announce/session';
import { describe, expect, it } from 'vitest';
import {
  ConflictProbe,
  describeConflict,
  dropConflicting,
  probeTargets,
  withoutConflicts,
} from '../../../src/announce/conflict-probe';
import type { OutgoingFrame } from '../../../src/announce/round';
import { arpProbe, gratuitousArp } from '../../../src/wire/arp';
import { unsolicitedNeighborAdvert } from '../../../src/wire/ndp';

const bytes = (hex: string): Buffer => Buffer.from(hex, 'hex');
const OURS = bytes('02420a580005');
const NET1 = bytes('02420a590007');
const SQUATTER = bytes('525400123456');
const A = bytes('0a580005'); // 10.88.0.5
const B = bytes('0a580006'); // 10.88.0.6
const C = bytes('0a590007'); // 10.89.0.7

const eth0: AskingInterface = { index: 2, name: 'eth0', mac: OURS, ipv4: [A, B] };
const net1: AskingInterface = { index: 3, name: 'net1', mac: NET1, ipv4: [C] };

/** A unicast ARP reply from `mac` saying it has `ip` (what Linux answers a probe with). */
function replyFrom(mac: Buffer, ip: Buffer, to: Buffer = OURS): Buffer {
  return Buffer.concat([to, mac, bytes('0806000108000604 0002'.replace(/ /g, '')), mac, ip, to, bytes('00000000')]);
}

const garp = (mac: Buffer, ip: Buffer, op: 'request' | 'reply' = 'request') => gratuitousArp({ mac, ip, op });
const na = (mac: Buffer, ip: string) =>
  unsolicitedNeighborAdvert({ mac, ip: bytes(ip), router: false, override: true });
/** The conflict a reply from SQUATTER for `address` on `iface` makes. */
const conflict = (address: string, iface = 'eth0') => ({
  address,
  mac: '52:54:00:12:34:56',
  interface: iface,
  kind: 'reply' as const,
});

const describeFrames = (frames: readonly OutgoingFrame[]) =>
  frames.map((f) => `${f.name}:${f.frame.subarray(38, 42).join('.')}`);

describe('ConflictProbe', () => {
  it('spreads the probes over the window: probe k at k × probeMs / probes, one frame per address', () => {
    const probe = new ConflictProbe([eth0, net1], [OURS, NET1], { probeMs: 90, probes: 3 }, 1000);
    const first = probe.due(1000);
    expect(describeFrames(first)).toEqual(['eth0:10.88.0.5', 'eth0:10.88.0.6', 'net1:10.89.0.7']);
    expect(first[0]!.frame.equals(arpProbe({ mac: OURS, ip: A }))).toBe(true);
    expect(first.map((f) => f.index)).toEqual([2, 2, 3]);
    expect(probe.waitMs(1000)).toBe(30);
    expect(probe.due(1029)).toEqual([]);
    expect(describeFrames(probe.due(1030))).toHaveLength(3);
    expect(probe.waitMs(1040)).toBe(20);
    expect(probe.due(1060)).toHaveLength(3);
    // All probes out: wait for the end of the window.
    expect(probe.waitMs(1060)).toBe(30);
    expect(probe.finished(1089)).toBe(false);
    expect(probe.finished(1090)).toBe(true);
    expect(probe.waitMs(1090)).toBe(0);
    expect(probe.due(2000)).toEqual([]);
  });

  it('hands out every overdue probe at once after a late wake-up', () => {
    const probe = new ConflictProbe([net1], [], { probeMs: 100, probes: 3 }, 0);
    expect(probe.due(70)).toHaveLength(3);
  });

  it('records one conflict per interface and address, with the first MAC seen', () => {
    const probe = new ConflictProbe([eth0, net1], [OURS, NET1], { probeMs: 100, probes: 2 }, 0);
    probe.receive(2, replyFrom(SQUATTER, A));
    probe.receive(2, replyFrom(bytes('5254000000aa'), A));
    expect(probe.conflicts()).toEqual([conflict('10.88.0.5')]);
  });

  it('ignores frames of our own MACs, of interfaces not probed, and of addresses probed elsewhere', () => {
    const probe = new ConflictProbe([eth0, net1], [OURS, NET1], { probeMs: 100, probes: 2 }, 0);
    probe.receive(2, arpProbe({ mac: OURS, ip: A })); // our own probe, seen going out
    probe.receive(2, replyFrom(NET1, A)); // the pod's other interface answering
    probe.receive(9, replyFrom(SQUATTER, A)); // an interface not probed
    probe.receive(2, replyFrom(SQUATTER, C)); // C is probed on net1, not eth0
    probe.receive(2, bytes('00')); // not ARP
    expect(probe.conflicts()).toEqual([]);
  });

  it('ends early once every address has a conflict, or at the first with stopAtFirst', () => {
    const all = new ConflictProbe([eth0], [OURS], { probeMs: 100, probes: 2 }, 0);
    all.receive(2, replyFrom(SQUATTER, A));
    expect(all.finished(10)).toBe(false);
    all.receive(2, garp(SQUATTER, B));
    expect(all.finished(10)).toBe(true);
    expect(all.conflicts().map((c) => [c.address, c.kind])).toEqual([
      ['10.88.0.5', 'reply'],
      ['10.88.0.6', 'request'],
    ]);
    const first = new ConflictProbe([eth0], [OURS], { probeMs: 100, probes: 2 }, 0, true);
    first.due(0);
    first.receive(2, replyFrom(SQUATTER, B));
    expect(first.finished(10)).toBe(true);
    expect(first.due(60)).toEqual([]);
  });

  it('waits no longer once every address conflicts before the window ends', () => {
    const probe = new ConflictProbe([net1], [NET1], { probeMs: 100, probes: 2 }, 0);
    probe.due(0);
    expect(probe.waitMs(10)).toBe(40);
    probe.receive(3, replyFrom(SQUATTER, C, NET1));
    expect(probe.waitMs(10)).toBe(0);
  });

  it.each([false, true])('has nothing to do without addresses (stopAtFirst %s)', (stopAtFirst) => {
    const probe = new ConflictProbe([{ ...eth0, ipv4: [] }], [OURS], { probeMs: 100, probes: 2 }, 0, stopAtFirst);
    expect({ finished: probe.finished(0), due: probe.due(0), waitMs: probe.waitMs(0) }).toEqual({
      finished: true,
      due: [],
      waitMs: 0,
    });
  });
});

describe('probeTargets and withoutConflicts', () => {
  const round: OutgoingFrame[] = [
    { index: 2, name: 'eth0', frame: garp(OURS, A) },
    { index: 2, name: 'eth0', frame: garp(OURS, A, 'reply') },
    { index: 2, name: 'eth0', frame: garp(OURS, B) },
    { index: 2, name: 'eth0', frame: na(OURS, 'fd000088000000000000000000000005') },
    { index: 3, name: 'net1', frame: garp(NET1, C) },
    { index: 4, name: 'net2', frame: na(NET1, 'fd000089000000000000000000000007') },
  ];

  const probesEachAnnouncedTitle =
    'probes each announced IPv4 address once, from its interface and MAC; ' +
    'IPv6-only interfaces have nothing to probe';
  it(probesEachAnnouncedTitle, () => {
    expect(probeTargets(round)).toEqual([
      { index: 2, name: 'eth0', mac: OURS, ipv4: [A, B] },
      { index: 3, name: 'net1', mac: NET1, ipv4: [C] },
    ]);
  });

  it('drops every ARP frame of a conflicting address on its interface, and nothing else', () => {
    expect(withoutConflicts(round, [conflict('10.88.0.5')])).toEqual([round[2], round[3], round[4], round[5]]);
    expect(withoutConflicts(round, [conflict('10.88.0.5', 'net1')])).toEqual(round);
    expect(withoutConflicts(round, [])).toEqual(round);
  });
});

describe('describeConflict', () => {
  it.each([
    ['reply', 'it answered ARP for that address'],
    ['request', 'it sent ARP from that address'],
    ['probe', 'it is probing for that address itself'],
  ] as const)('names the address, the MAC, the interface and how it was seen (%s)', (kind, how) => {
    expect(describeConflict({ address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0', kind })).toBe(
      `10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 (${how} on eth0)`,
    );
  });
});

describe('dropConflicting', () => {
  it('leaves the conflicting IPv4 addresses out of their interface only, IPv6 and other fields untouched', () => {
    const interfaces = [
      { name: 'eth0', ipv4: ['10.88.0.5', '10.88.0.6'], ipv6: ['fd00:88::5'] },
      { name: 'net1', ipv4: ['10.88.0.5'], ipv6: [] },
    ];
    expect(dropConflicting(interfaces, [conflict('10.88.0.5')])).toEqual([
      { name: 'eth0', ipv4: ['10.88.0.6'], ipv6: ['fd00:88::5'] },
      { name: 'net1', ipv4: ['10.88.0.5'], ipv6: [] },
    ]);
    expect(interfaces[0]!.ipv4).toHaveLength(2);
  });
});

describe('malformed ARP frames in a round', () => {
  // EtherType ARP, but a hardware type parseArp does not take.
  const odd = Buffer.from(garp(OURS, A));
  odd.writeUInt16BE(6, 14);
  const frames: OutgoingFrame[] = [
    { index: 2, name: 'eth0', frame: odd },
    { index: 2, name: 'eth0', frame: garp(OURS, B) },
    { index: 2, name: 'eth0', frame: garp(OURS, A) },
  ];

  it('are not probed', () => {
    expect(probeTargets(frames)).toEqual([{ index: 2, name: 'eth0', mac: OURS, ipv4: [B, A] }]);
  });

  it('are kept by withoutConflicts, which drops the frames of any conflicting address', () => {
    expect(withoutConflicts(frames, [conflict('10.88.0.6'), conflict('10.88.0.9')])).toEqual([frames[0], frames[2]]);
  });
});
