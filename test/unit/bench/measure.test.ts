import { describe, expect, it } from 'vitest';
import { cleanEnv, cleanPath } from '../../../scripts/bench/measure';

describe('cleanEnv', () => {
  it('holds PATH only, nothing inherited', () => {
    expect(Object.keys(cleanEnv())).toEqual(['PATH']);
  });

  it('adds the CNI_* variables that are given', () => {
    expect(
      cleanEnv({ command: 'ADD', containerId: 'c1', netns: '/var/run/netns/p', ifname: 'eth0', path: '/usr/lib/cni' }),
    ).toEqual({
      PATH: cleanPath(),
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/var/run/netns/p',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/usr/lib/cni',
    });
    expect(cleanEnv({ command: 'VERSION' })).toEqual({ PATH: cleanPath(), CNI_COMMAND: 'VERSION' });
  });
});

describe('cleanPath', () => {
  it("is a service unit's PATH, plus node's directory when that is elsewhere", () => {
    expect(cleanPath('/usr/bin')).toBe('/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
    expect(cleanPath('/opt/node/bin')).toBe(
      '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/node/bin',
    );
  });
});
