import { describe, expect, it } from 'vitest';
import { isDaemonOf } from '../../../scripts/bench/announcer-proc';

describe('isDaemonOf', () => {
  it('takes only `<program> daemon <stateDir>` of that very stateDir, with a shim’s ready fd or none', () => {
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'daemon', '/tmp/b/state'], '/tmp/b/state')).toBe(true);
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'daemon', '/tmp/b/state', '--ready-fd=3'], '/tmp/b/state')).toBe(true);
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'daemon', '/tmp/b/state', '--ready-fd=4'], '/tmp/b/state')).toBe(
      false,
    );
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'daemon', '/tmp/b/state-other'], '/tmp/b/state')).toBe(false);
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'status', '/tmp/b/state'], '/tmp/b/state')).toBe(false);
    expect(isDaemonOf(['/opt/cni/bin/announcer', 'daemon', '/tmp/b/state', 'x'], '/tmp/b/state')).toBe(false);
    expect(isDaemonOf(['daemon', '/tmp/b/state'], '/tmp/b/state')).toBe(false);
  });
});
