// The control socket's syscalls for real, in a temp dir: listen, connect,
// SO_PEERCRED, one message each way, and an fd passed along (SCM_RIGHTS).
import { mkdtempSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { controlRights, rightsIn, sockaddrUn } from '../../../src/sys/unix-socket';

const libc = loadLibc();
const sockets = libc;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'unix-socket-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('SCM_RIGHTS control messages', () => {
  it('carry fds in a cmsghdr (len 16 + 4 per fd, SOL_SOCKET, SCM_RIGHTS), padded to 8', () => {
    const control = controlRights([7, 9]);
    expect(control.toString('hex')).toBe('1800000000000000' + '01000000' + '01000000' + '07000000' + '09000000');
    expect(rightsIn(control, control.length)).toEqual([7, 9]);
    expect(controlRights([])).toHaveLength(0);
    expect(rightsIn(Buffer.alloc(32), 0)).toEqual([]);
  });
});

describe('unix SOCK_SEQPACKET sockets', () => {
  it('refuses a path longer than sun_path', () => {
    expect(() => sockaddrUn(`/${'x'.repeat(107)}`)).toThrow(/ENAMETOOLONG/);
  });

  it('connects, tells who is calling, keeps message boundaries and passes an fd along', () => {
    const path = join(dir, 's.sock');
    const listener = sockets.listen(path);
    const client = sockets.connect(path);
    const [readEnd, writeEnd] = libc.pipe();
    try {
      expect(statSync(path).isSocket()).toBe(true);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const peer = sockets.accept(listener)!;
      expect([peer.pid, peer.uid]).toEqual([process.pid, process.getuid!()]);
      expect(sockets.accept(listener)).toBeUndefined(); // nothing else pending
      expect(sockets.send(client, Buffer.from('one'), [readEnd])).toBe(true);
      expect(sockets.send(client, Buffer.from('two'))).toBe(true);
      const buf = Buffer.alloc(64);
      const first = sockets.receive(peer.fd, buf)!;
      expect([buf.subarray(0, first.length).toString(), first.fds.length]).toEqual(['one', 1]);
      expect(readlinkSync(`/proc/self/fd/${first.fds[0]}`)).toBe(readlinkSync(`/proc/self/fd/${readEnd}`));
      const second = sockets.receive(peer.fd, buf)!;
      expect([buf.subarray(0, second.length).toString(), second.fds]).toEqual(['two', []]);
      expect(sockets.receive(peer.fd, buf)).toBeUndefined();
      sockets.close(first.fds[0]!);
      sockets.close(client);
      expect(sockets.receive(peer.fd, buf)).toEqual({ length: 0, fds: [] }); // end of stream
      sockets.close(peer.fd);
    } finally {
      libc.close(readEnd);
      libc.close(writeEnd);
      sockets.close(listener);
    }
  });

  it('says ECONNREFUSED or ENOENT when nobody listens', () => {
    expect(() => sockets.connect(join(dir, 'none.sock'))).toThrow(/ENOENT/);
  });
});
