import { describe, it, expect, vi } from 'vitest';
import { Rtnl, RtnlEvents } from '../../../src/sys/rtnl';
import { SysError } from '../../../src/sys/sys-error';
import { decodeMessages, encodeAttr, encodeMessage, NLMSG_DONE, NLMSG_ERROR } from '../../../src/wire/netlink';
import {
  AF_BRIDGE,
  parseNeighChange,
  RTM_DELNEIGH,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWNEIGH,
} from '../../../src/wire/rtnetlink';
import { fakeLibc } from '../../support/fake-libc';

const NLM_F_MULTI = 0x2;
const errno = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(-n, 0);
  return b;
};

/** ifinfomsg for ifindex `index` named `name`, up and running. */
function link(index: number, name: string, state?: number): Buffer {
  const msg = Buffer.alloc(16);
  msg.writeInt32LE(index, 4);
  msg.writeUInt32LE(0x41, 8);
  const attrs = [encodeAttr(3, Buffer.from(`${name}\0`))];
  if (state !== undefined) attrs.push(encodeAttr(12 | 0x8000, encodeAttr(1, Buffer.from([state]))));
  return Buffer.concat([msg, ...attrs]);
}

/** An FDB entry (ndmsg AF_BRIDGE, learned) of `mac` on port `index` of bridge `master`. */
function fdb(index: number, mac: string, master: number): Buffer {
  const msg = Buffer.alloc(12);
  msg[0] = 7;
  msg.writeInt32LE(index, 4);
  msg.writeUInt16LE(0x02, 8);
  const bridge = Buffer.alloc(4);
  bridge.writeUInt32LE(master, 0);
  return Buffer.concat([msg, encodeAttr(2, Buffer.from(mac, 'hex')), encodeAttr(9, bridge)]);
}

function ipv4(index: number, address: string): Buffer {
  const msg = Buffer.alloc(8);
  msg[0] = 2;
  msg[1] = 24;
  msg.writeUInt32LE(index, 4);
  return Buffer.concat([msg, encodeAttr(2, Buffer.from(address.split('.').map(Number)))]);
}

/**
 * A kernel stand-in: each request is answered by `reply(request)` with a list
 * of datagrams; sent requests are kept for inspection.
 */
function kernel(reply: (req: { type: number; flags: number; seq: number }) => Buffer[][]) {
  const queue: Buffer[] = [];
  const sent: { type: number; flags: number; seq: number; payload: string }[] = [];
  const closed: number[] = [];
  const libc = fakeLibc({
    sendto: (_fd, frame) => {
      const [m] = decodeMessages(Buffer.from(frame));
      sent.push({ type: m!.type, flags: m!.flags, seq: m!.seq, payload: m!.payload.toString('hex') });
      for (const datagram of reply(m!)) queue.push(Buffer.concat(datagram));
      return frame.length;
    },
    recvNow: (_fd, buf) => {
      const next = queue.shift();
      if (!next) return undefined;
      buf.set(next);
      return next.length;
    },
    pollIn: (fds) => fds.map(() => queue.length > 0),
    close: (fd) => void closed.push(fd),
  });
  return { libc, sent, closed };
}

describe('Rtnl', () => {
  it('asks for one link and decodes the single reply', () => {
    const k = kernel((req) => [[encodeMessage(RTM_NEWLINK, 0, req.seq, link(4, 'eth0'))]]);
    const rtnl = new Rtnl(k.libc, 3);
    expect(rtnl.linkByName('eth0')).toMatchObject({ index: 4, name: 'eth0', up: true, running: true });
    expect(k.sent.map((s) => [s.type, s.flags])).toEqual([[18, 0x1]]); // RTM_GETLINK, NLM_F_REQUEST
  });

  it('turns ENODEV into "no such link" and other errors into SysError with the errno', () => {
    const k = kernel((req) => [[encodeMessage(NLMSG_ERROR, 0, req.seq, errno(req.seq === 1 ? 19 : 1))]]);
    const rtnl = new Rtnl(k.libc, 3);
    expect(rtnl.linkByIndex(99)).toBeUndefined();
    const eperm = expect.objectContaining({ name: 'SysError', code: 'EPERM', message: 'set MAC of ifindex 4: EPERM' });
    expect(() => rtnl.setMac(4, Buffer.alloc(6))).toThrow(eperm);
  });

  it('sets a MAC with NLM_F_ACK and returns on the ACK', () => {
    const k = kernel((req) => [[encodeMessage(NLMSG_ERROR, 0, req.seq, errno(0))]]);
    new Rtnl(k.libc, 3).setMac(4, Buffer.from('0a580a580005', 'hex'));
    expect(k.sent[0]).toMatchObject({ type: 19, flags: 0x5 });
  });

  it('collects a dump over several datagrams up to NLMSG_DONE, skipping replies to other requests', () => {
    const k = kernel((req) => [
      [encodeMessage(RTM_NEWLINK, 0, req.seq + 100, link(1, 'stale'))], // a late reply to an earlier request
      [
        encodeMessage(RTM_NEWADDR, NLM_F_MULTI, req.seq, ipv4(3, '10.0.0.3')),
        encodeMessage(RTM_NEWADDR, NLM_F_MULTI, req.seq, ipv4(4, '10.88.0.5')),
      ],
      [
        encodeMessage(RTM_NEWADDR, NLM_F_MULTI, req.seq, ipv4(4, '10.88.0.6')),
        encodeMessage(NLMSG_DONE, NLM_F_MULTI, req.seq, errno(0)),
      ],
    ]);
    const found = new Rtnl(k.libc, 3).addresses(4).map((a) => [...a.bytes].join('.'));
    expect(found).toEqual(['10.88.0.5', '10.88.0.6']);
    expect(k.sent[0]).toMatchObject({ type: 22, flags: 0x301 });
  });

  it('finds a bridge port state in the AF_BRIDGE dump', () => {
    const k = kernel((req) => [
      [
        encodeMessage(RTM_NEWLINK, NLM_F_MULTI, req.seq, link(7, 'veth1', 1)),
        encodeMessage(RTM_NEWLINK, NLM_F_MULTI, req.seq, link(9, 'veth2', 3)),
        encodeMessage(NLMSG_DONE, NLM_F_MULTI, req.seq, errno(0)),
      ],
    ]);
    const rtnl = new Rtnl(k.libc, 3);
    expect(rtnl.bridgePortState(9)).toBe(3);
    expect(rtnl.bridgePortState(8)).toBeUndefined();
  });

  it('dumps the neighbours of one family (RTM_GETNEIGH, NLM_F_DUMP, ndmsg of that family)', () => {
    const k = kernel((req) => [
      [
        encodeMessage(RTM_NEWNEIGH, NLM_F_MULTI, req.seq, fdb(4, '0a580a580905', 2)),
        encodeMessage(RTM_NEWNEIGH, NLM_F_MULTI, req.seq, Buffer.alloc(3)), // too short: skipped
      ],
      [
        encodeMessage(RTM_NEWNEIGH, NLM_F_MULTI, req.seq, fdb(5, '0a580a580906', 2)),
        encodeMessage(NLMSG_DONE, NLM_F_MULTI, req.seq, errno(0)),
      ],
    ]);
    const found = new Rtnl(k.libc, 3).neighbours(AF_BRIDGE);
    const got = found.map((n) => [n.ifindex, n.lladdr?.toString('hex'), n.master]);
    expect(got).toEqual([
      [4, '0a580a580905', 2],
      [5, '0a580a580906', 2],
    ]);
    expect(k.sent).toEqual([{ type: 30, flags: 0x301, seq: 1, payload: '070000000000000000000000' }]);
  });

  it('names the family of a failed neighbour dump', () => {
    const k = kernel((req) => [[encodeMessage(NLMSG_ERROR, 0, req.seq, errno(95))]]);
    expect(() => new Rtnl(k.libc, 3).neighbours(AF_BRIDGE)).toThrow('RTM_GETNEIGH dump family 7: ENOTSUP');
  });

  it('gives up with ETIMEDOUT when no reply comes', () => {
    vi.useFakeTimers({ toFake: ['hrtime'] });
    try {
      const polls: number[] = [];
      const waiting = {
        ...kernel(() => []).libc,
        pollIn: (_fds: readonly number[], ms: number) => {
          polls.push(ms);
          vi.advanceTimersByTime(ms);
          return [false];
        },
      };
      expect(() => new Rtnl(waiting, 3).linkByIndex(4)).toThrow('RTM_GETLINK ifindex 4: ETIMEDOUT');
      expect(polls).toEqual([5000]); // one wait for the whole deadline
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('RtnlEvents.take', () => {
  /** A socket whose queue holds `datagrams`; `overflowAt` throws ENOBUFS on that receive (1-based). */
  function socket(datagrams: Buffer[], overflowAt?: number) {
    let calls = 0;
    const libc = fakeLibc({
      recvNow: (_fd, buf) => {
        calls++;
        if (calls === overflowAt) throw new SysError('recv', 105);
        const next = datagrams.shift();
        if (!next) return undefined;
        buf.set(next);
        return next.length;
      },
    });
    return new RtnlEvents(libc, 5);
  }

  it('hands back every queued notification, decoded and copied out of the receive buffer', () => {
    const events = socket([
      Buffer.concat([
        encodeMessage(RTM_NEWNEIGH, 0, 0, fdb(4, '0a580a580905', 2)),
        encodeMessage(RTM_DELNEIGH, 0, 0, fdb(6, '0a580a580905', 2)),
      ]),
      encodeMessage(RTM_NEWNEIGH, 0, 0, fdb(7, '0a580a5809ff', 2)),
    ]);
    const { messages, overflowed } = events.take();
    expect(overflowed).toBe(false);
    const changes = messages.map((m) => parseNeighChange(m)!);
    const got = changes.map((c) => [c.deleted, c.entry.ifindex, c.entry.lladdr?.toString('hex')]);
    expect(got).toEqual([
      [false, 4, '0a580a580905'],
      [true, 6, '0a580a580905'],
      [false, 7, '0a580a5809ff'],
    ]);
    expect(events.take()).toEqual({ messages: [], overflowed: false });
  });

  it('says when the kernel dropped notifications (ENOBUFS) and still reads the rest', () => {
    const events = socket([encodeMessage(RTM_NEWNEIGH, 0, 0, fdb(4, '0a580a580905', 2))], 1);
    const { messages, overflowed } = events.take();
    expect([overflowed, messages.length]).toEqual([true, 1]);
  });

  it('passes other receive errors on', () => {
    const libc = fakeLibc({
      recvNow: () => {
        throw new SysError('recv', 9);
      },
    });
    expect(() => new RtnlEvents(libc, 5).take()).toThrow('recv: EBADF');
    expect(() => new RtnlEvents(libc, 5).drain()).toThrow('recv: EBADF');
  });
});
