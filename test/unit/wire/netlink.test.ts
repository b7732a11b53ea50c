import { describe, it, expect } from 'vitest';
import { decodeMessages, encodeAttr, encodeMessage, errorOf, NLMSG_DONE, NLMSG_ERROR } from '../../../src/wire/netlink';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

describe('encodeMessage', () => {
  it('writes struct nlmsghdr (len, type, flags, seq, pid 0) in host (little-endian) order and pads to 4', () => {
    // len 21 = 16 + 5 (unpadded), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq 7, pid 0 (the kernel); payload, padding
    const expected = bytes('15000000 1200 0103 07000000 00000000 0102030405 000000');
    expect(encodeMessage(18, 0x301, 7, bytes('0102030405')).toString('hex')).toBe(expected.toString('hex'));
  });
});

describe('decodeMessages', () => {
  it('splits a datagram into aligned messages', () => {
    const datagram = Buffer.concat([
      encodeMessage(16, 2, 5, bytes('aabbcc')),
      encodeMessage(NLMSG_DONE, 2, 5, bytes('00000000')),
    ]);
    const messages = decodeMessages(datagram);
    expect(messages.map((m) => [m.type, m.flags, m.seq, m.payload.toString('hex')])).toEqual([
      [16, 2, 5, 'aabbcc'],
      [NLMSG_DONE, 2, 5, '00000000'],
    ]);
  });

  it('drops a truncated tail and a header with an impossible length', () => {
    const one = encodeMessage(16, 0, 1, bytes('01'));
    expect(decodeMessages(Buffer.concat([one, one.subarray(0, 10)]))).toHaveLength(1);
    expect(decodeMessages(bytes('08000000 1000 0000 01000000 00000000'))).toEqual([]);
    expect(decodeMessages(bytes('20000000 1000 0000 01000000 00000000 aabbccdd'))).toEqual([]); // 32 claimed, 20 held
  });

  it('reads a message that is a header alone', () => {
    const [done, ...rest] = decodeMessages(encodeMessage(NLMSG_DONE, 2, 9, Buffer.alloc(0)));
    expect([done?.type, done?.seq, done?.payload.length, rest]).toEqual([NLMSG_DONE, 9, 0, []]);
  });
});

describe('errorOf', () => {
  it('reads the negative errno of NLMSG_ERROR as a positive number, 0 for an ACK', () => {
    const [enodev] = decodeMessages(encodeMessage(NLMSG_ERROR, 0, 1, bytes('edffffff')));
    const [ack] = decodeMessages(encodeMessage(NLMSG_ERROR, 0, 1, bytes('00000000')));
    expect(errorOf(enodev!)).toBe(19);
    expect(errorOf(ack!)).toBe(0);
    const [short] = decodeMessages(encodeMessage(NLMSG_ERROR, 0, 1, bytes('ed')));
    expect(errorOf(short!)).toBe(0); // too short to hold an errno
  });
});

describe('encodeAttr', () => {
  it('writes len (header + value, unpadded), type, value, padding', () => {
    expect(encodeAttr(3, Buffer.from('eth0\0')).toString('hex')).toBe(
      bytes('0900 0300 6574683000 000000').toString('hex'),
    );
  });
});
