// The fd holder for real: a detached child gets the pipe's read end as fd 3
// and our socket as fd 4, nothing else, and exits once our write end closes.
import { readdirSync, readlinkSync } from 'node:fs';
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

describe('hold-fds: a holder that outlives nothing but its parent', () => {
  it('inherits exactly the fds handed to it, and exits when the parent side of the pipe closes', async () => {
    const libc = loadLibc();
    const [readEnd, writeEnd] = libc.pipe();
    const socket = libc.openNetlinkSocket(); // a socket, as ADD hands over its packet socket
    // The child runs holdUntilParentExits' loop: read fd 3 until EOF.
    const script = "const b=Buffer.alloc(1);try{while(require('fs').readSync(3,b,0,1,null)>0);}catch{}";
    const child = spawnDetached(libc, [process.execPath, '-e'], [script], [readEnd, socket]);
    const running = (): boolean => processStartTime(child.pid) === child.startTime;
    try {
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
