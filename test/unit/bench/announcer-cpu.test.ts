import { describe, expect, it } from 'vitest';
import { statCpuMs } from '../../../scripts/bench/announcer-cpu';

// A /proc/PID/stat line whose command name holds a space and a parenthesis; utime 250, stime 50, cutime 7, cstime 3.
const STAT = '4242 (bun (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 7 3 20 0 12 0 3881 1 2';

describe('statCpuMs', () => {
  it('reads utime + stime past a command name with spaces and parentheses, in ms', () => {
    expect(statCpuMs(STAT)).toBe(3000);
  });

  it("reads the reaped children's cutime + cstime when asked for fields 16 and 17", () => {
    expect(statCpuMs(STAT, [16, 17])).toBe(100);
  });
});
