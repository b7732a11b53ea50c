// The fd holder for real: a detached child running the `hold-fds` verb
// (src/main.ts from source, under the pinned Bun, as the built binary runs it)
// gets the pipe's read end as fd 3 and our socket as fd 4, nothing else, waits
// in read(2) on fd 3, and exits once our write end closes.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { processStartTime } from '../../../src/sys/processes';
import { spawnDetached } from '../../../src/sys/spawn-detached';

/** Where fd `fd` of `pid` points; undefined once it is closed (node opens and closes files while it starts). */
function linkOf(pid: number, fd: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`);
  } catch {
    return undefined;
  }
}

const BUN = fileURLToPath(new URL('../../../node_modules/.bin/bun', import.meta.url));
const MAIN = fileURLToPath(new URL('../../../src/main.ts', import.meta.url));
/** read(2)'s syscall number. */
const SYS_READ = process.arch === 'arm64' ? 63 : 0;

/** Whether `pid` is blocked in read(2) on `fd` (/proc/PID/syscall: number, then the arguments). */
function blockedInRead(pid: number, fd: number): boolean {
  try {
    const [nr, first] = readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ');
    return Number(nr) === SYS_READ && Number(first) === fd;
  } catch {
    return false;
  }
}

describe('hold-fds: a holder that outlives nothing but its parent', () => {
  it('inherits exactly the fds handed to it, and exits when the parent side of the pipe closes', async () => {
    const libc = loadLibc();
    const [readEnd, writeEnd] = libc.pipe();
    const socket = libc.openNetlinkSocket(); // a socket, as ADD hands over its packet socket
    const child = spawnDetached(libc, [BUN], [MAIN, 'hold-fds'], [readEnd, socket]);
    const running = (): boolean => processStartTime(child.pid) === child.startTime;
    try {
      // holdUntilParentExits waits on fd 3; a holder that stopped waiting would never get here.
      for (let i = 0; i < 400 && !blockedInRead(child.pid, 3); i++) await sleep(25);
      expect(blockedInRead(child.pid, 3), 'the holder waits in read(2) on fd 3').toBe(true);
      const mine = readlinkSync(`/proc/self/fd/${socket}`);
      libc.close(readEnd);
      libc.close(socket);
      // The child keeps the socket alive after we closed ours.
      expect(readlinkSync(`/proc/${child.pid}/fd/4`)).toBe(mine);
      const pipe = readlinkSync(`/proc/self/fd/${writeEnd}`);
      expect(readlinkSync(`/proc/${child.pid}/fd/3`)).toBe(pipe);
      // Only the read end: a copy of the write end in the child would keep it waiting forever.
      const ends = readdirSync(`/proc/${child.pid}/fd`).filter((fd) => linkOf(child.pid, fd) === pipe);
      expect(ends).toEqual(['3']);
      expect(running()).toBe(true);
      libc.close(writeEnd); // "the parent exits"
      for (let i = 0; i < 200 && running(); i++) await sleep(25);
      expect(running()).toBe(false);
    } finally {
      process.kill(child.pid, 'SIGKILL'); // our child, never reaped: its pid cannot be reused
    }
  });
});
