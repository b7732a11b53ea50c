import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { processStartTime } from '../../../src/sys/processes';
import { detachedEnv, spawnDetached } from '../../../src/sys/spawn-detached';
import { openLeakyFd, type LeakyFd } from '../../support/leaky-fd';


/**
 * `pid`'s environment once its exec has written it: posix_spawn returns when the child's
 * new address space is in place, a moment before the kernel has set up argv and envp in it.
 */
async function environOnceExeced(pid: number): Promise<string[]> {
  let environ = '';
  for (let i = 0; i < 250 && (environ = readFileSync(`/proc/${pid}/environ`, 'latin1')) === ''; i++) await sleep(20);
  return environ.split('\0');
}

/**
 * The fd numbers `pid` (a sleep(1)) has open once it sleeps: while it starts it
 * opens and closes files of its own (its libraries, the locale), and none after.
 */
async function fdsOnceAsleep(pid: number): Promise<string[]> {
  for (let i = 0; i < 250 && !readFileSync(`/proc/${pid}/wchan`, 'latin1').includes('nanosleep'); i++) await sleep(20);
  return readdirSync(`/proc/${pid}/fd`).sort();
}

describe('spawnDetached (posix_spawn through koffi)', () => {
  let leaky: LeakyFd;
  beforeAll(() => {
    leaky = openLeakyFd('announcer-spawn-');
  });
  afterAll(() => leaky.close());

  it('starts a process in its own session with stdio on /dev/null, the fds handed to it at 3, 4, … and no other fd', async () => {
    const libc = loadLibc();
    const [readEnd, writeEnd] = libc.pipe();
    const child = spawnDetached(libc, ['/bin/sleep'], ['30'], [readEnd]);
    try {
      expect(processStartTime(child.pid)).toBe(child.startTime);
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      expect(Number(fields[3])).toBe(child.pid); // session id (field 6) == pid: a session leader
      // Whatever its number: nothing of this process's but the one fd handed over (not `leaky`, not the pipe's write end).
      expect(await fdsOnceAsleep(child.pid)).toEqual(['0', '1', '2', '3']);
      for (const fd of [0, 1, 2]) expect(readlinkSync(`/proc/${child.pid}/fd/${fd}`)).toBe('/dev/null');
      expect(readlinkSync(`/proc/${child.pid}/fd/3`)).toBe(readlinkSync(`/proc/self/fd/${readEnd}`));
      expect(readlinkSync(`/proc/self/fd/${leaky.fd}`)).toBe(leaky.file); // still open here
    } finally {
      process.kill(child.pid, 'SIGKILL'); // our child, never reaped: its pid cannot be reused
      libc.close(readEnd);
      libc.close(writeEnd);
    }
  });

  it('gives the process PATH alone as its environment (no CNI_* of one pod, no LD_LIBRARY_PATH of the runtime) and / as its directory', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c0ffee', LD_LIBRARY_PATH: '/opt/containerd/lib:', PATH: '/announcer-test/bin:/usr/bin:/bin' });
    let child;
    try {
      child = spawnDetached(loadLibc(), ['/bin/sleep'], ['30']);
    } finally {
      for (const k of ['CNI_COMMAND', 'CNI_CONTAINERID', 'LD_LIBRARY_PATH', 'PATH']) {
        if (k in saved) process.env[k] = saved[k];
        else delete process.env[k];
      }
    }
    try {
      expect(process.cwd()).not.toBe('/'); // else the directory would prove nothing
      // The file actions (chdir among them) run before exec, and environ is there once exec is done.
      expect(await environOnceExeced(child.pid)).toEqual(['PATH=/announcer-test/bin:/usr/bin:/bin', '']);
      expect(readlinkSync(`/proc/${child.pid}/cwd`)).toBe('/');
    } finally {
      process.kill(child.pid, 'SIGKILL');
    }
  });
});

describe('detachedEnv', () => {
  it("keeps this process's PATH and nothing else", () => {
    expect(detachedEnv({ PATH: '/a:/b', HOME: '/root', CNI_COMMAND: 'ADD', LD_LIBRARY_PATH: '/x:' })).toEqual(['PATH=/a:/b']);
  });

  it('gives a default PATH when this process has none, or an empty one', () => {
    const standard = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'];
    expect(detachedEnv({})).toEqual(standard);
    expect(detachedEnv({ PATH: '' })).toEqual(standard);
  });
});
