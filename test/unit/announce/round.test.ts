import { describe, expect, it } from 'vitest';
import type { RoundInput } from '../../../src/announce/session';
import { buildRound, NO_FRAMES, sendFrames, totalFrames, type OutgoingFrame } from '../../../src/announce/round';
import { silentLogger } from '../../../src/log';
import type { PacketSocket } from '../../../src/sys/packet-socket';
import { gratuitousArp } from '../../../src/wire/arp';
import { unsolicitedNeighborAdvert } from '../../../src/wire/ndp';
import { recordingLog } from '../../support/add-harness';

const MAC = Buffer.from('0a580a580005', 'hex');
const V4 = Buffer.from([10, 88, 0, 5]);
const V6 = Buffer.from('fd000000000000000000000000000005', 'hex');

const eth0: RoundInput = {
  index: 2,
  name: 'eth0',
  mac: MAC,
  noarp: false,
  ipv4: [V4],
  ipv6: [{ bytes: V6, optimistic: false }],
  skipped: [],
};

describe('buildRound', () => {
  it('builds each interface its frames, ARP ops in order then NAs, tagged with the interface', () => {
    const { log, records } = recordingLog();
    const out = buildRound([eth0], ['request', 'reply'], true, log);
    expect(out).toEqual([
      { index: 2, name: 'eth0', frame: gratuitousArp({ mac: MAC, ip: V4, op: 'request' }) },
      { index: 2, name: 'eth0', frame: gratuitousArp({ mac: MAC, ip: V4, op: 'reply' }) },
      { index: 2, name: 'eth0', frame: unsolicitedNeighborAdvert({ mac: MAC, ip: V6, router: true, override: true }) },
    ]);
    expect(records()).toEqual([]);
  });

  it('logs the addresses left out, and an interface whose frames cannot be built, and builds the others', () => {
    const { log, records } = recordingLog();
    const broken: RoundInput = { ...eth0, index: 3, name: 'net1', mac: Buffer.from('01005e000001', 'hex') };
    const skipping: RoundInput = { ...eth0, ipv6: [], skipped: ['10.88.0.6 (not on eth0)', 'fd00::6 (not on eth0)'] };
    const out = buildRound([broken, skipping], ['request'], false, log);
    expect(out).toEqual([{ index: 2, name: 'eth0', frame: gratuitousArp({ mac: MAC, ip: V4, op: 'request' }) }]);
    const skipped = (address: string) => ({
      level: 'warn',
      msg: 'not announcing address',
      fields: { interface: 'eth0', address },
    });
    expect(records()).toEqual([
      {
        level: 'error',
        msg: 'cannot build announcements',
        fields: { interface: 'net1', error: 'source MAC 01:00:5e:00:00:01 is multicast' },
      },
      skipped('10.88.0.6 (not on eth0)'),
      skipped('fd00::6 (not on eth0)'),
    ]);
  });

  it('builds nothing from no input', () => {
    expect(buildRound([], ['request'], false, silentLogger)).toEqual([]);
  });
});

describe('sendFrames', () => {
  const socket = (send: PacketSocket['send']): PacketSocket => ({ send, close: () => undefined, release: () => 60 });
  const frames: OutgoingFrame[] = buildRound(
    [eth0, { ...eth0, index: 3, name: 'net1', ipv6: [] }],
    ['request', 'reply'],
    false,
    silentLogger,
  ); // eth0: request, reply, NA; net1: request, reply

  it('sends every frame out of its interface and counts them by kind', () => {
    const sent: [number, Buffer][] = [];
    const packet = socket((index, frame) => void sent.push([index, Buffer.from(frame)]));
    expect(sendFrames(packet, frames, silentLogger)).toEqual({ garpRequest: 2, garpReply: 2, na: 1 });
    expect(sent).toEqual(frames.map((f) => [f.index, f.frame]));
  });

  it('logs a frame that cannot be sent, does not count it, and sends the rest', () => {
    const { log, records } = recordingLog();
    let calls = 0;
    const packet = socket(() => {
      if (++calls === 3) throw new Error('sendto: ENETDOWN');
    });
    expect(sendFrames(packet, frames, log)).toEqual({ garpRequest: 2, garpReply: 2, na: 0 });
    expect(calls).toBe(5);
    expect(records()).toEqual([
      { level: 'error', msg: 'sending announcement failed', fields: { interface: 'eth0', error: 'sendto: ENETDOWN' } },
    ]);
  });
});

describe('totalFrames', () => {
  it('adds the three kinds', () => {
    expect(totalFrames({ garpRequest: 1, garpReply: 2, na: 4 })).toBe(7);
    expect(totalFrames(NO_FRAMES)).toBe(0);
  });
});
