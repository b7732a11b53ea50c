// The kernel structs of src/sys/abi/structs.ts, byte for byte against hand-checked hex
// (glibc's layouts on x86-64 and arm64 alike: see kernel-abi.test.ts).
import { describe, expect, it } from 'vitest';
import { pollfds, readUcred, revents, sockaddrLl, sockaddrNl, timespecMs } from '../../../src/sys/abi/structs';

describe('kernel structs', () => {
  it('sockaddr_nl: AF_NETLINK, padding, port id, no groups', () => {
    expect(sockaddrNl().toString('hex')).toBe('1000' + '0000' + '00000000' + '00000000');
  });

  it('sockaddr_ll to bind: AF_PACKET, the protocol in network order, ifindex, the rest zero', () => {
    const expected = '1100' + '0806' + '07000000' + '0000' + '00' + '00' + '0000000000000000';
    expect(sockaddrLl(7, 0x0806).toString('hex')).toBe(expected);
  });

  it('pollfd array: fd, events, revents per entry; revents read back', () => {
    const set = pollfds([3, 0x01020304], 0x1);
    expect(set.toString('hex')).toBe('03000000' + '0100' + '0000' + '04030201' + '0100' + '0000');
    set.writeInt16LE(0x8, 14);
    expect([revents(set, 0), revents(set, 1)]).toEqual([0, 0x8]);
  });

  it('ucred and timespec read back', () => {
    expect(readUcred(Buffer.from('39300000' + 'e8030000' + 'e9030000', 'hex'))).toEqual({ pid: 12345, uid: 1000 });
    expect(timespecMs(Buffer.from('0200000000000000' + '40420f0000000000', 'hex'))).toBe(2001);
  });
});
