// glibc before 2.34 (RHEL 8 has 2.28) lacks posix_spawn_file_actions_addclosefrom_np.
// loadLibc must still load, and a detached child must still inherit nothing but
// stdio and the fds handed to it: the fallback closes each open fd instead.
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import koffi from 'koffi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLibc, type LibcLibrary } from '../../../src/sys/libc';
import { spawnDetached } from '../../../src/sys/spawn-detached';
import { openLeakyFd, type LeakyFd } from '../../support/leaky-fd';

const CLOSEFROM = 'posix_spawn_file_actions_addclosefrom_np';
const realLibc = koffi.load('libc.so.6');

/** libc as glibc 2.28 has it: binding closefrom_np fails as koffi fails on a missing symbol. */
function libcWithout(symbol: string): LibcLibrary & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    func: ((definition: string) => {
      asked.push(definition);
      if (definition.includes(symbol)) throw new Error(`Cannot find function '${symbol}' in shared library`);
      return realLibc.func(definition);
    }) as LibcLibrary['func'],
  };
}

/** The fds of `pid` that point at `target` (posix_spawn and node's spawn return once the child has exec'd). */
function fdsOf(pid: number, target: string): string[] {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === target;
    } catch {
      return false; // closed since the listing
    }
  });
}

const KEEP_ALIVE = 'setTimeout(() => {}, 30000)';

describe('spawnDetached without posix_spawn_file_actions_addclosefrom_np', () => {
  let leaky: LeakyFd;
  beforeAll(() => {
    leaky = openLeakyFd('announcer-closefrom-');
    expect(leaky.fd).toBeGreaterThan(2);
  });
  afterAll(() => leaky.close());

  it('the marker fd would leak into a child that closes nothing (control)', () => {
    const child = spawn(process.execPath, ['-e', KEEP_ALIVE], { stdio: 'ignore' });
    try {
      expect(fdsOf(child.pid!, leaky.file)).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('loads, binds the symbol only when spawning, and closes every other fd in the child', () => {
    const lib = libcWithout(CLOSEFROM);
    const libc = loadLibc(lib);
    expect(lib.asked.filter((d) => d.includes(CLOSEFROM))).toEqual([]);
    const child = spawnDetached(libc, [process.execPath, '-e'], [KEEP_ALIVE]);
    try {
      expect(lib.asked.filter((d) => d.includes(CLOSEFROM))).toHaveLength(1);
      expect(fdsOf(child.pid, leaky.file)).toEqual([]);
      for (const fd of [0, 1, 2]) expect(readlinkSync(`/proc/${child.pid}/fd/${fd}`)).toBe('/dev/null');
    } finally {
      process.kill(child.pid, 'SIGKILL');
    }
  });

  it('still hands over the fds it is given, at 3, 4, …', () => {
    const libc = loadLibc(libcWithout(CLOSEFROM));
    const [readEnd, writeEnd] = libc.pipe();
    const child = spawnDetached(libc, [process.execPath, '-e'], [KEEP_ALIVE], [leaky.fd, readEnd]);
    try {
      expect(fdsOf(child.pid, leaky.file)).toEqual(['3']);
      const pipe = readlinkSync(`/proc/self/fd/${readEnd}`);
      expect(fdsOf(child.pid, pipe)).toEqual(['4']);
    } finally {
      process.kill(child.pid, 'SIGKILL');
      libc.close(readEnd);
      libc.close(writeEnd);
    }
  });

  it('uses closefrom_np where glibc has it, with the same result', () => {
    const lib = libcWithout('no-such-symbol');
    const child = spawnDetached(loadLibc(lib), [process.execPath, '-e'], [KEEP_ALIVE]);
    try {
      expect(fdsOf(child.pid, leaky.file)).toEqual([]);
    } finally {
      process.kill(child.pid, 'SIGKILL');
    }
  });
});
