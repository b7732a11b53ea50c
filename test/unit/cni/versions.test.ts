import { describe, expect, it } from 'vitest';
import { MAX_STDIN_BYTES } from '../../../src/cni/decode';
import {
  compareVersions,
  isSupportedVersion,
  LATEST_VERSION,
  SUPPORTED_VERSIONS,
  versionReply,
} from '../../../src/cni/versions';

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

describe('versionReply: the answer to VERSION', () => {
  const stdin = (version: string, pad = 0) => `{"cniVersion":"${version}"}${' '.repeat(pad)}`;
  const at = (bytes: number) => bytes - stdin('0.4.0').length;
  it.each([
    ['stdin naming a supported version', stdin('0.4.0'), '0.4.0'],
    ['stdin longer than MAX_STDIN_BYTES', stdin('0.4.0', at(MAX_STDIN_BYTES + 1)), LATEST_VERSION],
    ['an unsupported version', stdin('0.2.0'), LATEST_VERSION],
    ['stdin that is not JSON', '{', LATEST_VERSION],
    ['no stdin', undefined, LATEST_VERSION],
  ])('answers %s with its cniVersion, or the latest', (_, input, cniVersion) => {
    expect(versionReply(input)).toEqual({ cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] });
  });
});
