import { describe, expect, it } from 'vitest';
import { compareVersions, isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS } from '../../../src/cni/versions';

describe('versions', () => {
  it('lists the five supported versions, oldest first', () => {
    expect(SUPPORTED_VERSIONS).toEqual(['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
    expect(LATEST_VERSION).toBe('1.1.0');
  });

  it.each(SUPPORTED_VERSIONS)('supports %s', (v) => {
    expect(isSupportedVersion(v)).toBe(true);
  });

  it.each([['0.2.0'], ['0.1.0'], ['1.2.0'], ['1.0'], [''], [1], [undefined], [null]])('does not support %j', (v) => {
    expect(isSupportedVersion(v)).toBe(false);
  });

  it('compares versions by their order', () => {
    expect(compareVersions('0.3.1', '0.4.0')).toBeLessThan(0);
    expect(compareVersions('1.0.0', '0.4.0')).toBeGreaterThan(0);
    expect(compareVersions('1.1.0', '1.1.0')).toBe(0);
  });
});
