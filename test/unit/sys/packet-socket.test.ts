import { describe, it, expect } from 'vitest';
import type { Libc } from '../../../src/sys/libc';
import { frameReceiver, packetSocket, readFrames, sockaddrLl } from '../../../src/sys/packet-socket';
import { gratuitousArp } from '../../../src/wire/arp';
import { unsolicitedNeighborAdvert } from '../../../src/wire/ndp';
import { fakeLibc } from '../../support/fake-libc';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const MAC = bytes('02420a580005');
const ARP = gratuitousArp({ mac: MAC, ip: bytes('0a580005'), op: 'request' });
const NA = unsolicitedNeighborAdvert({
  mac: MAC,
  ip: bytes('fd000088000000000000000000000005'),
  router: false,
  override: true,
});

/** A Libc that records sendto/close and refuses everything else. */
function recordingLibc(): { libc: Libc; sends: { fd: number; frame: string; address: string }[]; closes: number[] } {
  const sends: { fd: number; frame: string; address: string }[] = [];
  const closes: number[] = [];
  const libc = fakeLibc({
    sendto: (fd, frame, address) => {
      sends.push({ fd, frame: Buffer.from(frame).toString('hex'), address: Buffer.from(address).toString('hex') });
      return frame.length;
    },
    close: (fd) => {
      closes.push(fd);
    },
  });
  return { libc, sends, closes };
}

describe('sockaddrLl', () => {
  it('addresses an ARP frame to an ifindex', () => {
    // sll_family AF_PACKET (17, host order: LE), sll_protocol ETH_P_ARP (network order), sll_ifindex 3 (LE),
    // sll_hatype ARPHRD_ETHER (LE), sll_pkttype, sll_halen 6, sll_addr: the destination MAC, zero-filled to 8
    expect(sockaddrLl(3, ARP).toString('hex')).toBe('1100 0806 03000000 0100 00 06 ffffffffffff0000'.replace(/ /g, ''));
  });

  it('takes the protocol and destination from an NA frame, ifindex little-endian', () => {
    const expected = '1100 86dd 04030201 0100 00 06 3333000000010000'.replace(/ /g, '');
    expect(sockaddrLl(0x01020304, NA).toString('hex')).toBe(expected);
  });
});

describe('packetSocket', () => {
  it('sends each frame with sendto on its fd, addressed by sockaddr_ll', () => {
    const { libc, sends } = recordingLibc();
    const socket = packetSocket(libc, 7);
    socket.send(3, ARP);
    socket.send(4, NA);
    expect(sends).toEqual([
      { fd: 7, frame: ARP.toString('hex'), address: sockaddrLl(3, ARP).toString('hex') },
      { fd: 7, frame: NA.toString('hex'), address: sockaddrLl(4, NA).toString('hex') },
    ]);
  });

  it('refuses to send after close', () => {
    const { libc, sends } = recordingLibc();
    const socket = packetSocket(libc, 7);
    socket.close();
    expect(() => socket.send(3, ARP)).toThrow('packet socket is closed');
    expect(sends).toEqual([]);
  });

  it('closes its fd once, however often it is closed', () => {
    const { libc, closes } = recordingLibc();
    const socket = packetSocket(libc, 7);
    expect(closes).toEqual([]);
    socket.close();
    socket.close();
    expect(closes).toEqual([7]);
  });

  it('lets a sendto failure through', () => {
    const { libc } = recordingLibc();
    libc.sendto = () => {
      throw new Error('sendto: ENETDOWN');
    };
    expect(() => packetSocket(libc, 7).send(3, ARP)).toThrow('sendto: ENETDOWN');
  });
});

/** A Libc whose recv hands out the queued frames of each fd, and whose poll reports the fds with frames. */
function queueLibc(queues: Map<number, Buffer[]>) {
  const polls: { fds: number[]; timeoutMs: number }[] = [];
  const closes: number[] = [];
  const libc = fakeLibc({
    pollIn: (fds, timeoutMs) => {
      polls.push({ fds: [...fds], timeoutMs });
      return fds.map((fd) => (queues.get(fd)?.length ?? 0) > 0);
    },
    recvNow: (fd, buf) => {
      const next = queues.get(fd)?.shift();
      if (!next) return undefined;
      buf.set(next);
      return next.length;
    },
    close: (fd) => void closes.push(fd),
  });
  return { libc, polls, closes };
}

describe('readFrames', () => {
  it('polls every receiver with the timeout and drains each one that is readable', () => {
    const queues = new Map([
      [5, [Buffer.from('aa01', 'hex'), Buffer.from('aa02', 'hex')]],
      [6, []],
      [7, [Buffer.from('bb01', 'hex')]],
    ]);
    const { libc, polls } = queueLibc(queues);
    const receivers = [frameReceiver(libc, 5, 2), frameReceiver(libc, 6, 3), frameReceiver(libc, 7, 4)];
    const frames = readFrames(libc, receivers, 40);
    expect(polls).toEqual([{ fds: [5, 6, 7], timeoutMs: 40 }]);
    const got = frames.map((f) => [f.ifindex, f.frame.toString('hex')]);
    expect(got).toEqual([
      [2, 'aa01'],
      [2, 'aa02'],
      [4, 'bb01'],
    ]);
  });

  it('returns nothing when nothing came in time, and does not poll without receivers', () => {
    const { libc, polls } = queueLibc(new Map([[5, []]]));
    expect(readFrames(libc, [frameReceiver(libc, 5, 2)], 10)).toEqual([]);
    expect(readFrames(libc, [], 10)).toEqual([]);
    expect(polls).toHaveLength(1);
  });

  it('reads at most 256 frames per receiver and call, so that a flood cannot hold it', () => {
    const flood = Array.from({ length: 300 }, () => Buffer.from('cc', 'hex'));
    const { libc } = queueLibc(new Map([[5, flood]]));
    const receiver = frameReceiver(libc, 5, 2);
    expect(readFrames(libc, [receiver], 0)).toHaveLength(256);
    expect(readFrames(libc, [receiver], 0)).toHaveLength(44);
  });

  it('returns frames that do not share the read buffer', () => {
    const { libc } = queueLibc(new Map([[5, [Buffer.from('0102', 'hex'), Buffer.from('0304', 'hex')]]]));
    const [a, b] = readFrames(libc, [frameReceiver(libc, 5, 2)], 0);
    expect([a!.frame.toString('hex'), b!.frame.toString('hex')]).toEqual(['0102', '0304']);
  });
});

describe('arpReceiver', () => {
  it('closes once, and refuses reads after close or release', () => {
    const { libc, closes } = queueLibc(new Map());
    const closed = frameReceiver(libc, 5, 2);
    closed.close();
    closed.close();
    expect(closes).toEqual([5]);
    expect(() => closed.receive(Buffer.alloc(60))).toThrow('frame receiver is closed');
    const released = frameReceiver(libc, 6, 3);
    expect(released.release()).toBe(6);
    released.close();
    expect(closes).toEqual([5]);
    expect(() => released.receive(Buffer.alloc(60))).toThrow('frame receiver is closed');
  });
});
