// Route messages against payloads this kernel sent for `ip route add default via 10.88.0.1 dev d0` (and the IPv6
// twin) in a netns where d0 is ifindex 3, read with a plain AF_NETLINK dump.
import { describe, expect, it } from 'vitest';
import { parseRoute, routeDumpPayload } from '../../../src/wire/route';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');

/** default via 10.88.0.1 dev d0 (main table, RTN_UNICAST). */
const V4_DEFAULT = hex('02000000 fe030001 00000000 08000f00 fe000000 08000500 0a580001 08000400 03000000');
/** 10.88.0.0/24 dev d0 proto kernel scope link: no gateway. */
const V4_LINK = hex(
  '02180000 fe02fd01 00000000 08000f00 fe000000 08000100 0a580000 08000700 0a580005 08000400 03000000',
);
/** local 10.88.0.5 dev d0 table local (RTN_LOCAL): not a unicast route. */
const V4_LOCAL = hex(
  '02200000 ff02fe02 00000000 08000f00 ff000000 08000100 0a580005 08000700 0a580005 08000400 03000000',
);
/** default via fd00:88::1 dev d0 metric 1024 (with RTA_PRIORITY and RTA_CACHEINFO). */
const V6_DEFAULT = hex(
  '0a000000 fe030001 00000000 08000f00 fe000000 08000600 00040000 14000500 fd000088 00000000 00000000 00000001' +
    '08000400 03000000 24000c00' +
    '00'.repeat(32) +
    '05001400 00000000',
);

describe('routeDumpPayload', () => {
  it('is an rtmsg of the family, all else zero (every table)', () => {
    expect(routeDumpPayload(2).toString('hex')).toBe('020000000000000000000000');
    expect(routeDumpPayload(10).toString('hex')).toBe('0a0000000000000000000000');
  });
});

describe('parseRoute', () => {
  it('reads the family, prefix length, table, out link and gateway of a default route', () => {
    expect(parseRoute(V4_DEFAULT)).toEqual({
      family: 2,
      dstLen: 0,
      table: 254,
      oif: 3,
      gateway: Buffer.from([10, 88, 0, 1]),
    });
    expect(parseRoute(V6_DEFAULT)).toEqual({
      family: 10,
      dstLen: 0,
      table: 254,
      oif: 3,
      gateway: hex('fd000088000000000000000000000001'),
    });
  });

  it('gives a direct route without a gateway, and no entry for a local route or a short payload', () => {
    expect(parseRoute(V4_LINK)).toEqual({ family: 2, dstLen: 24, table: 254, oif: 3 });
    expect(parseRoute(V4_LOCAL)).toBeUndefined();
    expect(parseRoute(V4_DEFAULT.subarray(0, 11))).toBeUndefined();
  });

  it('leaves out a table, an out link or a gateway whose attribute has the wrong length', () => {
    // rtm_table 100; RTA_TABLE of 2 bytes, RTA_OIF of 2 bytes (each padded to 4), RTA_GATEWAY of 5 (padded to 8).
    const bad = hex('02000000 64030001 00000000 06000f00 fe000000 06000400 03000000 09000500 0a58000101000000');
    expect(parseRoute(bad)).toEqual({ family: 2, dstLen: 0, table: 100 });
  });

  it('takes RTA_TABLE over rtm_table (a table number over 255 has rtm_table RT_TABLE_COMPAT)', () => {
    const big = Buffer.from(V4_DEFAULT);
    big[4] = 252;
    big.writeUInt32LE(1000, 16);
    expect(parseRoute(big)?.table).toBe(1000);
    // An rtmsg alone: a unicast route without attributes.
    expect(parseRoute(V4_DEFAULT.subarray(0, 12))).toEqual({ family: 2, dstLen: 0, table: 254 });
  });

  it('takes the table from rtm_table when RTA_TABLE is absent', () => {
    const noTableAttr = Buffer.concat([V4_DEFAULT.subarray(0, 12), V4_DEFAULT.subarray(20)]);
    expect(parseRoute(noTableAttr)?.table).toBe(254);
    const other = Buffer.from(noTableAttr);
    other[4] = 100;
    expect(parseRoute(other)?.table).toBe(100);
  });
});
