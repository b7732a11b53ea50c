import { describe, expect, it } from 'vitest';
import { parseCidr } from '../../../src/cni/cidr';

describe('parseCidr', () => {
  it.each([
    ['10.88.0.5/24', { address: '10.88.0.5', family: 4, prefixLength: 24 }],
    ['0.0.0.0/0', { address: '0.0.0.0', family: 4, prefixLength: 0 }],
    ['10.0.0.1/32', { address: '10.0.0.1', family: 4, prefixLength: 32 }],
    ['fd00:88::5/64', { address: 'fd00:88::5', family: 6, prefixLength: 64 }],
    ['::1/128', { address: '::1', family: 6, prefixLength: 128 }],
  ])('parses %s', (text, cidr) => {
    expect(parseCidr(text)).toEqual(cidr);
  });

  it.each(['10.88.0.5', '10.88.0.5/33', 'fd00::5/129', '10.88.0/24', '10.88.0.5/', '10.88.0.5/-1', '10.88.0.5/2 4', 'x/24', '', '/24'])(
    'rejects %j',
    (text) => {
      expect(parseCidr(text)).toBeUndefined();
    },
  );
});
