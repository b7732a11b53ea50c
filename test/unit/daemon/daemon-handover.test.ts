// Upgrades: an announcer whose executable was replaced serves no new command
// once one from another build comes, stops listening, lets the running ones
// end, writes where each burst stands and returns; the next announcer goes on
// from the next round: late within LATE_GRACE_MS rather than never, none twice.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeHandover } from '../../../src/daemon/handover';
import { ANNOUNCER_SOCKET, HANDOVER_FILE } from '../../../src/state-files';
import type { SysError } from '../../../src/sys/sys-error';
import { link, POD_EVENTS_FD, writeJob } from '../../support/daemon-fakes';
import { DaemonLoop } from '../../support/daemon-loop';

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

const handoverFile = (): string => join(d.state.dir, HANDOVER_FILE);

/** The next announcer on the same stateDir, its clock where the first one's stopped (plus `later` ms). */
function nextAnnouncer(later = 0): DaemonLoop {
  const next = new DaemonLoop(d.state);
  next.timers.advance(d.timers.now() + later);
  return next;
}

describe('runDaemon: hand-over to a new build', () => {
  it('serves a command of another build while its own executable is in place', async () => {
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    const add = d.cniAt(10, 'b2');
    d.poll.at(50, () => d.commands[0]!.end({ exit: 0, stdout: 'done' }));
    await d.run();
    expect(add.client!.lines()).toEqual([{ ack: true }, { exit: 0, stdout: 'done' }]);
    expect(existsSync(handoverFile())).toBe(false);
  });

  const onceReplacedRefusesTitle =
    'once replaced: refuses with "handover", stops listening, lets the running command that acted end (bursts go ' +
    "on meanwhile), writes each burst's next round; the next announcer sends the rest, none twice";
  it(onceReplacedRefusesTitle, async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 2000, 6000] }));
    const running = d.cniAt(500);
    d.poll.at(600, () => d.commands[0]!.gate.acting());
    d.poll.at(1100, () => void (d.replaced = true));
    const newBuild = d.cniAt(1100, 'b2');
    const sameBuild = d.cniAt(1100);
    let connectAfter: string | undefined;
    d.poll.at(1200, () => {
      try {
        d.sockets.connect(join(d.state.dir, ANNOUNCER_SOCKET));
      } catch (err) {
        connectAfter = (err as SysError).code;
      }
    });
    d.poll.at(2500, () => d.commands[0]!.end({ exit: 0, stdout: 'ok' }));
    await d.run();
    expect(newBuild.client!.lines()).toEqual([{ refused: 'handover' }]);
    expect(sameBuild.client!.lines()).toEqual([{ refused: 'handover' }]);
    expect(d.commands).toHaveLength(1);
    expect({ paths: d.sockets.paths, connectAfter }).toEqual({ paths: [], connectAfter: 'ENOENT' });
    expect(running.client!.lines().at(-1)).toEqual({ exit: 0, stdout: 'ok' });
    expect(running.client!.ended).toBe(true);
    expect(d.timers.now()).toBeLessThan(2600); // returned once the command ended, not idle
    expect(d.pod.sent).toHaveLength(2); // rounds 2 (1000) and 3 (2000): bursts go on while the running command ends
    const written = JSON.parse(readFileSync(handoverFile(), 'utf8'));
    expect(written).toEqual({
      'c1@eth0.json': { job: expect.objectContaining({ containerId: 'c1', firstRoundAt: 1_000_000 }), next: 3 },
    });
    expect(
      d.logged('executable replaced: handing over to the new build').filter((l) => l.includes('newBuild=b2')),
    ).toHaveLength(1);
    expect(d.lines.at(-1)).toContain('handedOver=1');

    // The next one starts 3 s later: round 4 (6000) is then 500 ms late, within LATE_GRACE_MS.
    const next = nextAnnouncer(3000);
    await next.run();
    expect(existsSync(handoverFile())).toBe(false);
    expect(next.logged('how="handed over"').length + next.logged('how=handed').length).toBeGreaterThan(0);
    expect(next.pod.sent).toHaveLength(1);
    expect(next.logged('INFO announced').map((l) => /round=(\d)/.exec(l)![1])).toEqual(['4']);
  });

  it('while handing over, bursts go on and the loop does not spin on a round falling due or a pod event', async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000] }));
    writeJob(
      d.state,
      d.sentAt(0, { containerId: 'c2', firstRoundAt: undefined, readyDeadline: d.timers.bootMs() + 60_000 }),
    );
    d.pod.links = [link({ up: false })]; // c2 waits for its pod: its event socket is polled
    d.cniAt(100);
    d.poll.at(200, () => void (d.replaced = true));
    d.cniAt(200, 'b2');
    d.pod.onDrain = (fd) => void d.poll.ready.delete(fd);
    d.poll.at(300, () => void d.poll.ready.add(POD_EVENTS_FD)); // the pod changed: the deferred wait drains it
    d.poll.at(2500, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect(d.poll.spun).toBe(false);
    expect(d.poll.calls.filter((c) => c.at > 200 && c.at < 2500).length).toBeLessThan(30);
    expect(d.pod.sent).toEqual([]); // the (one fake) pod is down: c1's round 2 is skipped, c2 still waits
  });

  const roundHandedOverTitle =
    'a round handed over that fell due more than LATE_GRACE_MS before is skipped and counted, the next one sent';
  it(roundHandedOverTitle, async () => {
    const job = d.sentAt(-4500, { schedule: [0, 1000, 3000, 6000] }); // round 3 due 1500 ms ago
    writeJob(d.state, job);
    writeHandover(d.state.dir, new Map([['c1@eth0.json', { job, next: 2 }]]));
    const status = d.controlAt(100, { op: 'status' });
    await d.run();
    expect(d.logged('INFO announced').map((l) => /round=(\d)/.exec(l)![1])).toEqual(['4']);
    const counters = (
      status.client!.lines()[0] as { control: { status: { counters: { rounds: { skippedLate: number } } } } }
    ).control.status.counters;
    expect(counters.rounds.skippedLate).toBe(1);
  });

  const withoutHandOverTitle =
    'without the hand-over, a burst read from its record alone skips a round already due (it may have gone out)';
  it(withoutHandOverTitle, async () => {
    writeJob(d.state, d.sentAt(-3500, { schedule: [0, 1000, 3000, 6000] }));
    await d.run();
    expect(d.logged('INFO announced').map((l) => /round=(\d)/.exec(l)![1])).toEqual(['4']);
  });

  it('ignores and removes an invalid hand-over file: the records alone say what to do', async () => {
    writeJob(d.state, d.sentAt(-500, { schedule: [0, 1000] }));
    writeFileSync(handoverFile(), '{"c1@eth0.json": {"next": "soon"');
    await d.run();
    expect(existsSync(handoverFile())).toBe(false);
    expect(d.pod.sent).toHaveLength(1);
    expect(d.logged('how=recovered')).toHaveLength(1);
    expect(d.logged('cannot read the hand-over')).toEqual([]);
  });
});
