// The CNI commands as the announcer hosts them: the same dispatcher (its error
// objects unchanged), each command's config shown to the announcer (node options
// in it are said once, never applied), packet sockets closed on another thread,
// and sleeps that go to the loop.
import { Gate } from '../../../src/daemon/admission';
import type { JobHost } from '../../../src/announce/job-host';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNLIMITED } from '../../../src/announce/budget';
import { cniRunner, type CniHostDeps } from '../../../src/daemon/cni-host';
import { MemoryLocks } from '../../../src/daemon/memory-locks';
import { LoopWaits } from '../../../src/daemon/loop-waits';
import type { PluginConfig } from '../../../src/cni/config';
import { jobIn, makeStateDir, writeJob } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { ManualTimers } from '../../support/manual-timers';
import { identityView } from '../../support/caller-view-fakes';
import type { CallerViews } from '../../../src/sys/caller-view';
import { RecordMemory } from '../../../src/announce/record-memory';

let dir: string;
let noted: Pick<PluginConfig, 'name' | 'nodeOptions'>[];
let closed: number[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cni-host-'));
  noted = [];
  closed = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const NO_HOST: JobHost = { added: () => false, cancel: () => false };

function runner(jobHost: CniHostDeps['jobHost'] = () => NO_HOST, timers = new ManualTimers()) {
  return cniRunner({
    libc: fakeLibc({ openPacketSocket: () => 77, tryLock: () => true }),
    timers,
    frameBudget: () => UNLIMITED,
    waits: new LoopWaits(() => timers.now()),
    attachmentLock: new MemoryLocks(() => new Promise(() => undefined)).take,
    written: new RecordMemory(),
    jobHost,
    closeInBackground: (fd) => void closed.push(fd),
    noteConfig: (config) => void noted.push({ name: config.name, nodeOptions: config.nodeOptions }),
    views: { mine: identityView } as CallerViews,
  });
}

const status = (extra: object) =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'net', type: 'announcer', stateDir: join(dir, 'state'), ...extra });

describe('cniRunner', () => {
  const runsSTATUSThroughTitle =
    "runs STATUS through dispatch: the announcer is shown the config's node options (accepted " +
    'unchecked), and the packet socket is closed on another thread';
  it(runsSTATUSThroughTitle, async () => {
    const done = await runner()(
      { CNI_COMMAND: 'STATUS' },
      status({ idleExitMs: 'soon', metricsFile: '/run/x.prom' }),
      new Gate(() => true),
    );
    expect(done).toEqual({ exit: 0, stdout: '' });
    expect(noted).toEqual([{ name: 'net', nodeOptions: { idleExitMs: 'soon', metricsFile: '/run/x.prom' } }]);
    expect(closed).toEqual([77]);
  });

  it('answers bad input with the CNI error object dispatch prints in a CNI process, and shows no config', async () => {
    const done = await runner()({ CNI_COMMAND: 'STATUS' }, status({ count: 'many' }), new Gate(() => true));
    expect(done.exit).toBe(1);
    expect(JSON.parse(done.stdout)).toMatchObject({ code: 7, msg: expect.stringContaining('count') });
    expect(noted).toEqual([]);
  });

  it("hands a command the announcer's table of work as seen from when that command was taken (boot ms)", async () => {
    const state = makeStateDir();
    try {
      writeJob(state, jobIn(state));
      const timers = new ManualTimers();
      const seen: { op: string; takenAt: number }[] = [];
      const run = runner(
        (takenAt) => ({
          added: () => expect.fail('DEL adds no job'),
          cancel: () => (seen.push({ op: 'cancel', takenAt }), true),
        }),
        timers,
      );
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
      const done = await run(env, config, new Gate(() => true));
      expect(done.exit).toBe(0);
      expect(seen).toEqual([{ op: 'cancel', takenAt }]);
    } finally {
      state.remove();
    }
  });
});
