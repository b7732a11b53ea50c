// The DaemonSet's announcer (`--resident`): it never exits for being idle; an
// announcer a shim started hands over to it on `{"op":"handover"}` as on an
// upgrade; it refuses to hand over to another resident one; on SIGTERM (its
// pod restarts) it hands over to whichever announcer comes next.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RESIDENT_REFUSAL } from '../../../src/daemon/protocol';
import { withDaemonLock, type TakeOverDeps } from '../../../src/daemon/take-over';
import { ANNOUNCER_SOCKET, HANDOVER_FILE } from '../../../src/state-files';
import { SysError } from '../../../src/sys/sys-error';
import { isResidentLock, keptLog, makeStateDir, writeJob, type StateDir } from '../../support/daemon-fakes';
import { answerOf, DaemonLoop } from '../../support/daemon-loop';
import { ManualTimers } from '../../support/manual-timers';

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

const handoverFile = (): string => join(d.state.dir, HANDOVER_FILE);
const roundsAnnounced = (loop: DaemonLoop): string[] =>
  loop.logged('INFO announced').map((l) => /round=(\d)/.exec(l)![1]!);

describe('runDaemon: {"op":"handover"}', () => {
  const announcerShimStartedTitle =
    'an announcer a shim started answers ok, stops listening, passes on the command that has not acted, lets the ' +
    'one that has end, writes where each burst stands and returns';
  it(announcerShimStartedTitle, async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000, 6000] }));
    const running = d.cniAt(500);
    const waiting = d.cniAt(600);
    d.poll.at(700, () => d.commands[0]!.gate.acting());
    const ask = d.controlAt(1100, { op: 'handover' });
    let connectAfter: string | undefined;
    d.poll.at(1200, () => {
      try {
        d.sockets.connect(join(d.state.dir, ANNOUNCER_SOCKET));
      } catch (err) {
        connectAfter = (err as SysError).code;
      }
    });
    d.poll.at(2000, () => d.commands[0]!.end({ exit: 0, stdout: 'ok' }));
    await d.run();
    expect(answerOf(ask)).toEqual({ ok: true });
    expect(connectAfter).toBe('ENOENT');
    expect(waiting.client!.lines().at(-1)).toEqual({ refused: 'handover' });
    expect(running.client!.lines().at(-1)).toEqual({ exit: 0, stdout: 'ok' });
    expect(d.timers.now()).toBeLessThan(2100); // returned once the command ended
    expect(JSON.parse(readFileSync(handoverFile(), 'utf8'))).toEqual({
      'c1@eth0.json': { job: expect.objectContaining({ containerId: 'c1' }), next: 2 },
    });
    expect(d.logged('a resident announcer starts: handing over to it')).toHaveLength(1);
  });

  it('a resident one refuses it and serves on', async () => {
    d.deps.resident = true;
    const ask = d.controlAt(100, { op: 'handover' });
    const after = d.controlAt(200, { op: 'status' });
    d.signalAt(60_000, 'SIGTERM');
    await d.run();
    expect(answerOf(ask)).toEqual({ ok: false, error: RESIDENT_REFUSAL });
    expect(answerOf(after)).toMatchObject({ ok: true, status: { attachments: [] } });
    expect(d.logged('a resident announcer starts: handing over')).toEqual([]);
  });
});

describe('runDaemon --resident', () => {
  it('never exits for being idle: still serving a minute after its idleExitMs', async () => {
    d.deps.resident = true;
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    const late = d.controlAt(60_000, { op: 'status' });
    d.signalAt(61_000, 'SIGTERM');
    await d.run();
    expect(answerOf(late)).toMatchObject({ ok: true });
    expect(d.timers.now()).toBeGreaterThanOrEqual(61_000);
  });

  const onSIGTERMHandsTitle =
    'on SIGTERM hands over: the next announcer sends the rest of the burst, ' +
    'late within grace rather than never, none twice';
  it(onSIGTERMHandsTitle, async () => {
    d.deps.resident = true;
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000, 6000] }));
    d.signalAt(1500, 'SIGTERM');
    await d.run();
    expect(roundsAnnounced(d)).toEqual(['2']);
    expect(d.logged('SIGTERM: handing over to the next announcer')).toHaveLength(1);
    expect(JSON.parse(readFileSync(handoverFile(), 'utf8'))).toEqual({
      'c1@eth0.json': { job: expect.anything(), next: 2 },
    });

    // A shim starts the next one 2 s later: round 3 (3000) is 500 ms late, within grace.
    const next = new DaemonLoop(d.state);
    next.timers.advance(d.timers.now() + 2000);
    await next.run();
    expect(existsSync(handoverFile())).toBe(false);
    expect(roundsAnnounced(next)).toEqual(['3', '4']);
  });

  const bothSignalsTitle =
    'without --resident, SIGTERM and SIGINT hand over alike: where each burst stands, for the next announcer';
  it(bothSignalsTitle, async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const loop = new DaemonLoop();
      try {
        writeJob(loop.state, loop.sentAt(0, { schedule: [0, 1000, 3000, 6000] }));
        loop.signalAt(1500, signal);
        await loop.run();
        expect(loop.timers.now()).toBe(1500);
        expect(JSON.parse(readFileSync(join(loop.state.dir, HANDOVER_FILE), 'utf8'))).toEqual({
          'c1@eth0.json': { job: expect.anything(), next: 2 },
        });
        expect(loop.logged(`${signal}: handing over to the next announcer`)).toHaveLength(1);
      } finally {
        loop.state.remove();
      }
    }
  });
});

/** A stateDir whose lock is held until `freeAt` ms, with `listening` saying whether its socket answers. */
function lockScene(state: StateDir, script: { freeAt: number; replies: unknown[] }) {
  const timers = new ManualTimers();
  timers.sleep = () => {
    throw new Error('take-over sleeps: its waits are polls on the holder');
  };
  const kept = keptLog();
  const state_ = { listening: true, residentHeld: false, asked: 0, askedAt: [] as number[], waits: [] as number[][] };
  const deps: TakeOverDeps = {
    stateDir: state.dir,
    timers,
    // The holder exits at freeAt: the poll on its pidfd ends then, or after `ms`.
    waitForHolder: (_fd, ms, fallbackMs) => {
      state_.waits.push([ms, fallbackMs]);
      timers.advance(Math.max(0, Math.min(ms, script.freeAt - timers.now())));
      return 'holder';
    },
    log: kept.log,
    tryLock: (fd) => {
      // a loop that never ends fails
      if (timers.now() > 600_000) throw new Error('still waiting for the lock after 600 s');
      if (isResidentLock(fd)) return !state_.residentHeld;
      return timers.now() >= script.freeAt;
    },
    sockets: {
      connect: () => {
        if (!state_.listening) throw new SysError('connect', 111);
        return 7;
      },
      close: () => undefined,
    },
    askHandover: async () => {
      state_.askedAt.push(timers.now());
      const reply = script.replies[state_.asked++];
      if ((reply as { ok?: boolean } | undefined)?.ok) state_.listening = false; // it unlistens at once
      return reply;
    },
  };
  return { deps, timers, lines: kept.lines, state: state_ };
}

describe('withDaemonLock', () => {
  let state: StateDir;
  beforeEach(() => {
    state = makeStateDir();
  });
  afterEach(() => state.remove());

  const residentOneAsksTitle =
    'a resident one asks the listening announcer to hand over, waits for the lock as long as it takes, then serves';
  it(residentOneAsksTitle, async () => {
    const scene = lockScene(state, { freeAt: 30_000, replies: [{ ok: true }] });
    scene.deps.resident = true;
    let servedAt: number | undefined;
    expect(await withDaemonLock(scene.deps, async () => void (servedAt = scene.timers.now()))).toBe('taken');
    expect(scene.state.asked).toBe(1);
    expect(servedAt).toBe(30_000); // the holder's exit ends the wait: no timer tick after it
    expect(scene.state.waits.length).toBeLessThanOrEqual(31); // one wait per second at most, never a busy look
  });

  const asksAgainSecondTitle =
    'asks again, a second later, one that gave no answer (an older build); ' +
    'and a new one listening after the first let go';
  it(asksAgainSecondTitle, async () => {
    const scene = lockScene(state, { freeAt: 5000, replies: [undefined, { ok: true }] });
    scene.deps.resident = true;
    expect(await withDaemonLock(scene.deps, async () => undefined)).toBe('taken');
    expect(scene.state.asked).toBe(2);
    expect(scene.state.askedAt[1]! - scene.state.askedAt[0]!).toBeGreaterThanOrEqual(1000);
    expect(scene.lines.filter((l) => l.includes('did not answer "handover"'))).toHaveLength(1);
  });

  it('a resident one refused by a resident one does not serve: "resident"', async () => {
    const scene = lockScene(state, { freeAt: Infinity, replies: [{ ok: false, error: RESIDENT_REFUSAL }] });
    scene.deps.resident = true;
    let served = false;
    expect(await withDaemonLock(scene.deps, async () => void (served = true))).toBe('resident');
    expect(served).toBe(false);
  });

  const oneShimStartedTitle =
    'one a shim started never asks: another listening serves ("served"); one ' +
    'not listening is waited for up to LOCK_WAIT_MS';
  it(oneShimStartedTitle, async () => {
    const scene = lockScene(state, { freeAt: Infinity, replies: [{ ok: true }] });
    expect(await withDaemonLock(scene.deps, async () => undefined)).toBe('served');
    expect(scene.state.asked).toBe(0);
    scene.state.listening = false;
    const start = scene.timers.now();
    expect(await withDaemonLock(scene.deps, async () => undefined)).toBe('served');
    expect(scene.timers.now() - start).toBe(5000);
    expect(scene.state.waits.at(-1)).toEqual([5000, 20]); // one poll on the holder for the whole wait
    expect(scene.state.asked).toBe(0);
  });
});
