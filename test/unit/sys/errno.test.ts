import { constants } from 'node:os';
import { describe, expect, it } from 'vitest';
import { EAGAIN, EINTR, EINVAL, EIO, ENAMETOOLONG, errnoName, errnoNumber } from '../../../src/sys/errno';

describe('errno', () => {
  it('agrees with node:os on every name and number', () => {
    for (const [name, n] of Object.entries(constants.errno)) {
      expect(errnoNumber(name), name).toBe(n);
      expect(errnoNumber(errnoName(n)!), `${n}`).toBe(n);
    }
  });

  it('uses the usual name of a number with two', () => {
    expect(errnoName(11)).toBe('EAGAIN');
    expect(errnoName(95)).toBe('ENOTSUP');
    expect(errnoName(19)).toBe('ENODEV');
    expect(errnoName(41)).toBeUndefined();
    expect(errnoName(9999)).toBeUndefined();
  });

  it('declares each named constant with its number', () => {
    for (const [name, n] of Object.entries({ EINTR, EIO, EAGAIN, EINVAL, ENAMETOOLONG })) {
      expect(n, name).toBe(constants.errno[name as keyof typeof constants.errno]);
      expect(errnoName(n)).toBe(name);
    }
  });
});
