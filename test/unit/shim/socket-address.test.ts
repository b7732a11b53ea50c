// The announcer's socket address: the path itself, or for a stateDir too long for sockaddr_un,
// the same socket through an O_PATH fd of stateDir, closed once the exchange has settled.
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exchange } from '../../../src/shim/shim';
import { withAnnouncerAddress } from '../../../src/shim/socket-address';
import { encodeLine } from '../../../src/protocol';
import { connectUnix } from '../../../src/sys/unix-stream';
import { fakeAnnouncer, fakeClock, type FakeAnnouncer } from './fakes';

let dir: string | undefined;
let announcer: FakeAnnouncer | undefined;
afterEach(async () => {
  await announcer?.stop();
  announcer = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function readlinkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

describe('withAnnouncerAddress', () => {
  it('is the socket path in stateDir when it fits sockaddr_un', async () => {
    expect(await withAnnouncerAddress('/run/cni-announcer', async (a) => a)).toBe('/run/cni-announcer/announcer.sock');
  });

  it('reaches a socket in a stateDir too long for sockaddr_un through an fd of it, then closes that fd', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shim-long-'));
    const stateDir = join(dir, 'd'.repeat(60), 'e'.repeat(60));
    mkdirSync(stateDir, { recursive: true });
    // The fake listens through an fd of its own: Node refuses the long path too.
    const fd = openSync(stateDir, 'r');
    let held = '';
    let heldWhileAnswering: string | undefined;
    try {
      announcer = await fakeAnnouncer(
        (t) => {
          heldWhileAnswering = readlinkTarget(held);
          t.socket.end(encodeLine({ exit: 0, stdout: 'far' }));
        },
        { dir: `/proc/self/fd/${fd}` },
      );
    } finally {
      closeSync(fd);
    }
    const outcome = await withAnnouncerAddress(stateDir, async (a) => {
      held = /^(\/proc\/self\/fd\/\d+)\/announcer\.sock$/.exec(a)?.[1] ?? '';
      expect(readlinkSync(held)).toBe(stateDir);
      return exchange(connectUnix, fakeClock(), a, { control: { op: 'status' } }, 'b', 1000);
    });
    expect(outcome).toEqual({ end: { exit: 0, stdout: 'far' } });
    expect(heldWhileAnswering).toBe(stateDir);
    // Closed: the fd is gone, or already reused for something else.
    expect(readlinkTarget(held)).not.toBe(stateDir);
    expect(readdirSync(stateDir)).toEqual(['announcer.sock']);
  });
});
