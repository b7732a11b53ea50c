// Taking stateDir's announcer lock (src/daemon/lock.ts) with real lock files and a scripted holder of each: one a shim
// started gives up when another serves; a resident one takes the resident lock, asks the one that listens to hand
// over and waits for it as long as it takes; a second resident one leaves. Every wait is a poll on the holder.
import { fstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_WAIT_MS, withDaemonLock, type LockDeps } from '../../../src/daemon/lock';
import { createLogger } from '../../../src/log';
import { RESIDENT_REFUSAL, type ControlReply } from '../../../src/protocol';
import { DAEMON_LOCK, RESIDENT_LOCK } from '../../../src/state-files';
import { SysError } from '../../../src/sys/sys-error';
import { makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { logRecords } from '../../support/log-records';
import { ManualTimers } from '../../support/manual-timers';

let state: StateDir;
beforeEach(() => {
  state = makeStateDir();
});
afterEach(() => state.remove());

/** Whether `fd` is open. */
function open(fd: number): boolean {
  try {
    return fstatSync(fd) !== undefined;
  } catch {
    return false; // EBADF
  }
}

/** The lock file open on `fd`. */
const lockOf = (fd: number): string => readlinkSync(`/proc/self/fd/${fd}`).split('/').pop()!;

/**
 * A stateDir whose resident lock and announcer lock are held until their `free` times (ms), whose socket answers while
 * `listening`, and whose announcer answers "handover" with `replies` in turn (one ok stops it listening).
 */
function scene(
  free: { resident: number; daemon: number },
  replies: (ControlReply | undefined)[] = [],
  resident = false,
) {
  const timers = new ManualTimers();
  const lines: string[] = [];
  const s = {
    listening: true,
    askedAt: [] as number[],
    waits: [] as [string, number, number][],
    tried: new Set<string>(),
  };
  const freeAt = (fd: number): number => (lockOf(fd) === RESIDENT_LOCK ? free.resident : free.daemon);
  const calls: Parameters<typeof fakeLibc>[0] = {
    tryLock: (fd) => {
      if (timers.now() > 600_000) throw new Error('still waiting for the lock after 600 s');
      s.tried.add(lockOf(fd));
      return timers.now() >= freeAt(fd);
    },
    connect: () => {
      if (!s.listening) throw new SysError('connect', 111);
      return 7;
    },
    close: () => undefined,
  };
  const deps: LockDeps = {
    stateDir: state.dir,
    timers,
    resident,
    log: createLogger((line) => lines.push(line), 'debug'),
    // The holder exits at its free time: the poll on its pidfd ends then, or after `ms`.
    waitForHolder: (fd, ms, fallbackMs) => {
      s.waits.push([lockOf(fd), ms, fallbackMs]);
      timers.advance(Math.max(0, Math.min(ms, freeAt(fd) - timers.now())));
      return 'holder';
    },
    libc: fakeLibc(calls),
    askHandover: async () => {
      s.askedAt.push(timers.now());
      const reply = replies[s.askedAt.length - 1];
      if (reply?.ok) s.listening = false;
      return reply;
    },
  };
  let servedAt: number | undefined;
  const take = () => withDaemonLock(deps, async () => void (servedAt = timers.now()));
  return { deps, calls, s, take, servedAt: () => servedAt, records: () => logRecords(lines.join('\n')) };
}

describe('withDaemonLock: a resident announcer', () => {
  const asksTitle =
    'takes the resident lock, asks the listening announcer to hand over, waits for the announcer lock as long as it ' +
    'takes (each wait a poll on the holder, never a busy look), then serves';
  it(asksTitle, async () => {
    const r = scene({ resident: 0, daemon: 30_000 }, [{ ok: true }], true);
    expect(await r.take()).toBe('taken');
    expect({ asked: r.s.askedAt, servedAt: r.servedAt() }).toEqual({ asked: [0], servedAt: 30_000 });
    expect(r.s.waits.length).toBeLessThanOrEqual(31);
    expect(r.records().map((x) => x.msg)).toEqual(['the running announcer hands over to this resident one']);
  });

  it(
    'asks again, a second later, one that gave no answer ' +
      '(saying so); and a new one listening after the first let go',
    async () => {
      const r = scene({ resident: 0, daemon: 5000 }, [undefined, { ok: true }], true);
      expect(await r.take()).toBe('taken');
      expect(r.s.askedAt).toHaveLength(2);
      expect(r.s.askedAt[1]! - r.s.askedAt[0]!).toBeGreaterThanOrEqual(1000);
      expect(
        r
          .records()
          .filter((x) => x.level === 'warn')
          .map((x) => [x.msg, x.fields.inMs]),
      ).toEqual([['the running announcer did not answer "handover": asking again', 1000]]);
    },
  );

  const residentTitle =
    'does not serve ("resident") when a resident one refuses to hand over, or holds the resident lock and listens ' +
    '(unasked); one holding it without listening (stopping) is waited for';
  it(residentTitle, async () => {
    const refused = scene({ resident: 0, daemon: Infinity }, [{ ok: false, error: RESIDENT_REFUSAL }], true);
    expect([await refused.take(), refused.servedAt()]).toEqual(['resident', undefined]);
    const serving = scene({ resident: Infinity, daemon: 0 }, [], true);
    expect([await serving.take(), serving.s.askedAt, serving.servedAt()]).toEqual(['resident', [], undefined]);
    const stopping = scene({ resident: 3000, daemon: 0 }, [], true);
    stopping.s.listening = false;
    expect([await stopping.take(), stopping.servedAt()]).toEqual(['taken', 3000]);
  });
});

describe('withDaemonLock: an announcer a shim started', () => {
  const servedTitle =
    'never asks: another listening serves ("served", at once); one not listening is waited for up to ' +
    'LOCK_WAIT_MS, in one poll on the holder; it never serves meanwhile';
  it(servedTitle, async () => {
    const listening = scene({ resident: 0, daemon: Infinity }, [{ ok: true }]);
    expect([await listening.take(), listening.s.waits, listening.servedAt()]).toEqual(['served', [], undefined]);
    const exiting = scene({ resident: 0, daemon: Infinity });
    exiting.s.listening = false;
    expect([await exiting.take(), exiting.s.askedAt]).toEqual(['served', []]);
    expect(exiting.s.waits).toEqual([[DAEMON_LOCK, LOCK_WAIT_MS, 20]]);
  });

  const residentHoldsTitle =
    'leaves the calls to a resident one that holds the resident lock ("served" once it listens, or after ' +
    'LOCK_WAIT_MS), never trying the announcer lock';
  it(residentHoldsTitle, async () => {
    const listens = scene({ resident: Infinity, daemon: 0 });
    expect([await listens.take(), listens.s.waits]).toEqual(['served', []]);
    const starting = scene({ resident: Infinity, daemon: 0 });
    starting.s.listening = false;
    expect(await starting.take()).toBe('served');
    expect(starting.s.waits.reduce((ms, [, waited]) => ms + waited, 0)).toBe(LOCK_WAIT_MS);
    expect([...starting.s.tried, starting.servedAt()]).toEqual([RESIDENT_LOCK, undefined]);
  });

  it(
    'serves holding the announcer lock on its file in ' + 'stateDir, not the resident one, and closes both on return',
    async () => {
      for (const resident of [false, true]) {
        const free = scene({ resident: 0, daemon: 0 }, [], resident);
        const fds: number[] = [];
        free.calls.tryLock = (fd) => (fds.push(fd), true);
        const held: string[] = [];
        await withDaemonLock(free.deps, async (lockFd) => {
          held.push(
            ...fds.filter((fd) => fd !== lockFd && open(fd)).map(lockOf),
            readlinkSync(`/proc/self/fd/${lockFd}`),
          );
        });
        expect(held).toEqual([...(resident ? [RESIDENT_LOCK] : []), join(state.dir, DAEMON_LOCK)]);
        expect(fds.filter(open)).toEqual([]);
      }
    },
  );
});
