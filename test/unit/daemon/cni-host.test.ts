// The CNI commands as the announcer hosts them: the same dispatcher (its error
// objects unchanged), the announcer's own settings taken from each command's
// config, packet sockets closed on another thread, and sleeps that go to the loop.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cniRunner, type CniHostDeps } from '../../../src/daemon/cni-host';
import { MemoryLocks } from '../../../src/daemon/memory-locks';
import { LoopWaits } from '../../../src/daemon/loop-waits';
import type { DaemonSettings } from '../../../src/daemon/settings';
import { jobIn, makeStateDir, writeJob } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { ManualTimers } from '../../support/manual-timers';

let dir: string;
let settings: DaemonSettings[];
let closed: number[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cni-host-'));
  settings = [];
  closed = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function runner(control: CniHostDeps['control'] = () => ({ ok: true }), timers = new ManualTimers()) {
  return cniRunner({
    libc: fakeLibc({ openPacketSocket: () => 77, tryLock: () => true }),
    timers,
    waits: new LoopWaits(() => timers.now()),
    attachmentLock: new MemoryLocks(() => new Promise(() => undefined)).take,
    control,
    closeInBackground: (fd) => void closed.push(fd),
    useSettings: (s) => void settings.push(s),
  });
}

const status = (extra: object) =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'net', type: 'announcer', stateDir: join(dir, 'state'), ...extra });

describe('cniRunner', () => {
  it("runs STATUS through dispatch: the announcer takes the config's idleExitMs and metricsFile, and the packet socket is closed on another thread", async () => {
    const done = await runner()(
      { CNI_COMMAND: 'STATUS' },
      status({ idleExitMs: 1234, metricsFile: '/run/x.prom' }),
      () => true,
    );
    expect(done).toEqual({ exit: 0, stdout: '' });
    expect(settings).toEqual([{ idleExitMs: 1234, metricsFile: '/run/x.prom' }]);
    expect(closed).toEqual([77]);
  });

  it('answers bad input with the CNI error object dispatch prints in a CNI process, and takes no settings from it', async () => {
    const done = await runner()({ CNI_COMMAND: 'STATUS' }, status({ idleExitMs: 'soon' }), () => true);
    expect(done.exit).toBe(1);
    expect(JSON.parse(done.stdout)).toMatchObject({ code: 7, msg: expect.stringContaining('idleExitMs') });
    expect(settings).toEqual([]);
  });

  it('tells the announcer, with each request a command makes, when that command was taken (boot ms)', async () => {
    const state = makeStateDir();
    try {
      writeJob(state, jobIn(state));
      const timers = new ManualTimers();
      const seen: { op: string; takenAt: number }[] = [];
      const run = runner((request, takenAt) => (seen.push({ op: request.op, takenAt }), { ok: true }), timers);
      timers.advance(5000); // taken now, not when the runner was made
      const config = JSON.stringify({ cniVersion: '1.0.0', name: 'net', type: 'announcer', stateDir: state.dir });
      const env = {
        CNI_COMMAND: 'DEL',
        CNI_CONTAINERID: 'c1',
        CNI_IFNAME: 'eth0',
        CNI_NETNS: state.netns,
        CNI_PATH: '/opt/cni/bin',
      };
      const takenAt = timers.bootMs();
      const done = await run(env, config, () => true);
      expect(done.exit).toBe(0);
      expect(seen).toEqual([{ op: 'cancel', takenAt }]);
    } finally {
      state.remove();
    }
  });
});
