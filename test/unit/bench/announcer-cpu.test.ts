import { describe, expect, it } from 'vitest';
import { runNsSince, statCpuMs } from '../../../scripts/bench/announcer-cpu';

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

describe('runNsSince', () => {
  it("sums each thread's own difference and a new thread's whole run time; an exited thread counts nothing", () => {
    const before = new Map([
      ['10', 500],
      ['11', 900],
      ['12', 7000],
    ]);
    const after = new Map([
      ['10', 800],
      ['11', 900],
      ['13', 40],
    ]);
    expect(runNsSince(before, after)).toEqual({ ns: 300 + 0 + 40, exited: 1 });
  });
});
