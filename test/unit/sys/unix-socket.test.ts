// The announcer socket's syscalls for real, in a temp dir: a SOCK_STREAM
// socket mode 0600, SO_PEERCRED, bytes both ways in pieces, a full buffer,
// end of stream, EPIPE without SIGPIPE, and poll(2) for input and room.
import { mkdirSync, readdirSync, readlinkSync, renameSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { sockaddrUn, SUN_PATH_MAX, withSocketAddress } from '../../../src/sys/unix-socket';
import { useTempDir } from '../../support/temp-dir';

const libc = loadLibc();
let dir: string;
let opened: number[];

useTempDir('unix-socket-', (d) => {
  dir = d;
  opened = [];
});
afterEach(() => {
  for (const fd of opened) {
    try {
      libc.close(fd);
    } catch {
      // closed by the test
    }
  }
});

const track = (fd: number): number => (opened.push(fd), fd);

/** A listening socket, a connected client and the accepted server end. */
function pair(): { listener: number; client: number; server: { fd: number; pid: number; uid: number } } {
  const path = join(dir, 's.sock');
  const listener = track(libc.listen(path));
  const client = track(libc.connect(path));
  const server = libc.accept(listener)!;
  track(server.fd);
  return { listener, client, server };
}

describe('sockaddr_un', () => {
  it('holds a path of up to sun_path less its NUL, and refuses a longer one or a NUL', () => {
    expect(SUN_PATH_MAX).toBe(107);
    const address = sockaddrUn('/a');
    expect(address.toString('hex')).toBe('0100' + '2f61' + '00');
    expect(sockaddrUn(`/${'x'.repeat(106)}`)).toHaveLength(2 + 107 + 1);
    expect(() => sockaddrUn(`/${'x'.repeat(107)}`)).toThrow(/ENAMETOOLONG/);
    expect(() => sockaddrUn('/a\0b')).toThrow(/ENAMETOOLONG/);
  });
});

describe('unix SOCK_STREAM sockets', () => {
  it('listens at mode 0600 and tells who is calling (SO_PEERCRED); accept says undefined when nobody waits', () => {
    const { listener, server } = pair();
    expect(statSync(join(dir, 's.sock')).isSocket()).toBe(true);
    expect(statSync(join(dir, 's.sock')).mode & 0o777).toBe(0o600);
    expect([server.pid, server.uid]).toEqual([process.pid, process.getuid!()]);
    expect(libc.accept(listener)).toBeUndefined();
  });

  const carriesBytesBothTitle =
    'carries bytes both ways as a stream: writes merge, reads take what fits, undefined when nothing is queued';
  it(carriesBytesBothTitle, () => {
    const { client, server } = pair();
    const buf = Buffer.alloc(4);
    expect(libc.recvNow(server.fd, buf)).toBeUndefined();
    expect(libc.send(client, Buffer.from('abc'))).toBe(3);
    expect(libc.send(client, Buffer.from('def\n'))).toBe(4);
    expect(libc.recvNow(server.fd, buf)).toBe(4); // a partial read: no message boundaries
    expect(buf.toString()).toBe('abcd');
    expect(libc.recvNow(server.fd, buf)).toBe(3);
    expect(buf.subarray(0, 3).toString()).toBe('ef\n');
    expect(libc.recvNow(server.fd, buf)).toBeUndefined();
    expect(libc.send(server.fd, Buffer.from('ok'))).toBe(2);
    expect(libc.recvNow(client, buf)).toBe(2);
  });

  it('a full socket takes part of a write, then 0, and poll(2) says when there is room again', () => {
    const { client, server } = pair();
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const counts: number[] = [];
    while (counts.at(-1) !== 0 && counts.length < 10_000) counts.push(libc.send(server.fd, chunk));
    const written = counts.reduce((a, b) => a + b, 0);
    expect(counts.at(-1)).toBe(0);
    expect(counts.filter((n) => n > 0 && n < chunk.length).length).toBeGreaterThan(0); // a write that went in part
    expect(libc.pollInOut([client], [server.fd], 0)).toEqual({ readable: new Set([client]), writable: new Set() });
    const buf = Buffer.alloc(1024 * 1024);
    let read = 0;
    for (let n = libc.recvNow(client, buf); n !== undefined; n = libc.recvNow(client, buf)) read += n;
    expect(read).toBe(written);
    expect(libc.pollInOut([client], [server.fd], 0)).toEqual({ readable: new Set(), writable: new Set([server.fd]) });
  });

  it('says end of stream (0) once the peer closed, and EPIPE on a write to it, with no SIGPIPE', () => {
    const { client, server } = pair();
    libc.send(client, Buffer.from('x'));
    libc.close(client);
    opened.splice(opened.indexOf(client), 1);
    const buf = Buffer.alloc(8);
    expect(libc.recvNow(server.fd, buf)).toBe(1);
    expect(libc.pollInOut([server.fd], [], 0).readable).toEqual(new Set([server.fd])); // EOF stays readable
    expect(libc.recvNow(server.fd, buf)).toBe(0);
    expect(() => libc.send(server.fd, Buffer.from('late'))).toThrow(/EPIPE/);
  });

  it('says ENOENT when nobody listens at the path, ECONNREFUSED when the socket file is left behind', () => {
    expect(() => libc.connect(join(dir, 'none.sock'))).toThrow(/ENOENT/);
    const path = join(dir, 's.sock');
    libc.close(libc.listen(path));
    expect(() => libc.connect(path)).toThrow(/ECONNREFUSED/);
    expect(() => libc.listen(path)).toThrow(/EADDRINUSE/);
  });

  const shutdownTitle =
    'a listener shut down for reading refuses every new connect (ECONNREFUSED), and still hands out the ones ' +
    'queued before, with their bytes; then accept says none is left';
  it(shutdownTitle, () => {
    const path = join(dir, 's.sock');
    const listener = track(libc.listen(path));
    const queued = track(libc.connect(path));
    libc.send(queued, Buffer.from('request\n'));
    libc.shutdownListener(listener);
    expect(() => libc.connect(path)).toThrow(/ECONNREFUSED/);
    const server = libc.accept(listener)!;
    track(server.fd);
    const buf = Buffer.alloc(64);
    expect(buf.subarray(0, libc.recvNow(server.fd, buf)!).toString()).toBe('request\n');
    expect(libc.accept(listener)).toBeUndefined();
  });

  it("removes the socket file it bound, and only while the path is still that file (a successor's stays)", () => {
    const path = join(dir, 's.sock');
    libc.close(libc.listen(path));
    const first = libc.socketFile(path);
    renameSync(path, `${path}.away`); // kept: its inode cannot be reused by the next
    libc.close(libc.listen(path)); // a successor's socket at the same path
    expect(libc.removeSocketFile(path, first)).toBe(false);
    expect(statSync(path).isSocket()).toBe(true);
    expect(libc.removeSocketFile(path, libc.socketFile(path))).toBe(true);
    expect(() => statSync(path)).toThrow(/ENOENT/);
    expect(libc.removeSocketFile(path, first)).toBe(false); // gone: nothing to remove
  });
});

describe('withSocketAddress', () => {
  const fdOf = (address: string): string => /^(\/proc\/self\/fd\/\d+)\/announcer\.sock$/.exec(address)?.[1] ?? '';
  const target = (path: string): string | undefined => {
    try {
      return readlinkSync(path);
    } catch {
      return undefined;
    }
  };
  /** A stateDir whose socket path is longer than sun_path. */
  const longStateDir = (): string => {
    const stateDir = join(dir, 'd'.repeat(60), 'e'.repeat(60));
    mkdirSync(stateDir, { recursive: true });
    return stateDir;
  };

  it("is the socket's path in stateDir when sun_path holds it", () => {
    expect(withSocketAddress('/run/cni-announcer', (a) => a)).toBe('/run/cni-announcer/announcer.sock');
  });

  it('reaches a socket in a long stateDir through an O_PATH fd of it, bound and connected there, then closed', () => {
    const stateDir = longStateDir();
    let held = '';
    const listener = withSocketAddress(stateDir, (address) => {
      held = fdOf(address);
      expect(target(held)).toBe(stateDir);
      return track(libc.listen(address));
    });
    expect(target(held)).not.toBe(stateDir); // closed: gone, or already another file
    expect(readdirSync(stateDir)).toEqual(['announcer.sock']);
    track(withSocketAddress(stateDir, (address) => libc.connect(address)));
    expect(libc.accept(listener)).toBeDefined();
  });

  it('holds the fd until a promise `use` returns has settled, fulfilled or rejected', async () => {
    const stateDir = longStateDir();
    let held = '';
    let release: (value: string) => void = () => undefined;
    const answer = withSocketAddress(stateDir, (address) => {
      held = fdOf(address);
      return new Promise<string>((resolve) => (release = resolve));
    });
    await new Promise((r) => setImmediate(r));
    expect(target(held)).toBe(stateDir);
    release('done');
    expect(await answer).toBe('done');
    expect(target(held)).not.toBe(stateDir);
    const failing = withSocketAddress(stateDir, async (address) => {
      held = fdOf(address);
      throw new Error('refused');
    });
    await expect(failing).rejects.toThrow('refused');
    expect(target(held)).not.toBe(stateDir);
  });

  it('throws when a long stateDir is missing or a symlink, and closes the fd when `use` throws', () => {
    const stateDir = longStateDir();
    expect(() => withSocketAddress(`${stateDir}-missing`, (a) => a)).toThrow(/ENOENT/);
    symlinkSync(stateDir, `${stateDir}-link`);
    expect(() => withSocketAddress(`${stateDir}-link`, (a) => a)).toThrow(/ENOTDIR|ELOOP/);
    let held = '';
    expect(() =>
      withSocketAddress(stateDir, (address) => {
        held = fdOf(address);
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(target(held)).not.toBe(stateDir);
  });
});
