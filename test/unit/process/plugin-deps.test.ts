// The CNI process's side of ADD's host-neutral deps: blocking waits, closes, and
// an announcer client that answers undefined rather than throwing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pluginDeps } from '../../../src/process/plugin-deps';
import type { ProcessWiring } from '../../../src/process/wiring';
import type { Libc } from '../../../src/sys/libc';
import type { TcpSockets } from '../../../src/sys/tcp-socket';
import type { UnixSockets } from '../../../src/sys/unix-socket';
import { fakeLibc } from '../../support/fake-libc';
import { ManualTimers } from '../../support/manual-timers';

let stateDir: string;
let calls: string[];
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'plugin-deps-'));
  calls = [];
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

function wiring(
  libc: Partial<Libc & UnixSockets>,
  lockFile: ProcessWiring['lockFile'] = async () => undefined,
): ProcessWiring {
  const fake = fakeLibc(libc as Partial<Libc>) as Libc & UnixSockets & TcpSockets;
  return { libc: () => fake, timers: new ManualTimers(), lockFile };
}

describe('pluginDeps', () => {
  it('release closes every fd here, going on past one whose close fails', () => {
    const deps = pluginDeps(
      wiring({
        close: (fd) => {
          calls.push(`close ${fd}`);
          if (fd === 7) throw new Error('close: EBADF');
        },
      }),
    );
    expect(() => deps.release([7, 8])).not.toThrow();
    expect(calls).toEqual(['close 7', 'close 8']);
  });

  it('waits block in poll(2) on the fds given', async () => {
    const deps = pluginDeps(
      wiring({ pollIn: (fds, ms) => (calls.push(`poll ${fds.join(',')} ${ms}`), fds.map(() => false)) }),
    );
    await deps.waits.readable([50, 51], 300);
    expect(calls).toEqual(['poll 50,51 300']);
  });

  it('askAnnouncer answers undefined when no announcer listens', async () => {
    const deps = pluginDeps(wiring({}));
    await expect(deps.askAnnouncer(stateDir, { op: 'status' }, { start: false })).resolves.toBeUndefined();
  });
});
