import { readFileSync, readlinkSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { isSameProcess, signalProcess } from '../../../src/sys/processes';
import { spawnDetached } from '../../../src/sys/spawn-detached';

describe('spawnDetached (posix_spawn through koffi)', () => {
  it('starts a process in its own session with stdio on /dev/null', () => {
    const script = 'setTimeout(() => {}, 30000)';
    const child = spawnDetached(loadLibc(), [process.execPath, '-e'], [script]);
    try {
      expect(isSameProcess(child)).toBe(true);
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      expect(Number(fields[3])).toBe(child.pid); // session id (field 6) == pid: a session leader
      const fds = readdirSync(`/proc/${child.pid}/fd`).map(Number).filter((fd) => fd <= 2);
      expect(fds.sort()).toEqual([0, 1, 2]);
      for (const fd of [0, 1, 2]) expect(readlinkSync(`/proc/${child.pid}/fd/${fd}`)).toBe('/dev/null');
    } finally {
      signalProcess(child, 'SIGKILL');
    }
  });
});
