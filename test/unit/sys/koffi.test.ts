import { describe, expect, it } from 'vitest';
import { loadKoffi } from '../../../src/sys/koffi';

describe('loadKoffi', () => {
  it('returns koffi, the same module each time', () => {
    const koffi = loadKoffi();
    expect(typeof koffi.load).toBe('function');
    expect(loadKoffi()).toBe(koffi);
  });
});
