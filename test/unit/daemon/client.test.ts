// Asking the background announcer, and starting it, over in-memory sockets:
// the announcer's side is a real ControlSocket served from the client's poll.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { askDaemon, askOrStartDaemon, type ClientDeps } from '../../../src/daemon/client';
import { ControlSocket } from '../../../src/daemon/control';
import { DAEMON_SOCKET, START_LOCK } from '../../../src/daemon/paths';
import type { Reply, Request } from '../../../src/daemon/protocol';
import type { DaemonSettings } from '../../../src/daemon/settings';
import { SysError } from '../../../src/sys/sys-error';
import { fakeLibc } from '../../support/fake-libc';
import { keptLog, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { FakeSockets } from '../../support/fake-sockets';
import { ManualTimers } from '../../support/manual-timers';

const STATUS: Request = { op: 'status' };
const SYNC: Request = { op: 'sync', record: 'c1@eth0.json', sent: { garpRequest: 1, garpReply: 0, na: 0 }, settings: { idleExitMs: 500 } };

let state: StateDir;
let sockets: FakeSockets;
let timers: ManualTimers;
let served: Request[];
/** The announcer's side, when one runs: served whenever the client polls. */
let daemon: ControlSocket | undefined;
let polls: number[];
let spawned: { lockFd: number; listenFd: number | undefined; settings: DaemonSettings | undefined }[];
let daemonLockHeld: boolean;
let closedFds: number[];
let startLockHolder: Promise<void>;
let startLockTimesOut: boolean;
let deps: ClientDeps;

beforeEach(() => {
  state = makeStateDir();
  sockets = new FakeSockets();
  timers = new ManualTimers();
  served = [];
  daemon = undefined;
  polls = [];
  spawned = [];
  daemonLockHeld = false;
  closedFds = [];
  startLockHolder = Promise.resolve();
  startLockTimesOut = false;
  deps = {
    libc: fakeLibc({
      pollIn: (fds, ms) => {
        polls.push(ms);
        daemon?.serve(new Set(daemon.fds()));
        timers.advance(Math.min(ms, 10));
        return fds.map(() => true);
      },
    }),
    sockets,
    now: () => timers.now(),
    sleep: async (ms) => timers.advance(ms),
    lockFile: async (path, timeoutMs) => {
      expect({ path, timeoutMs: timeoutMs > 0 }).toEqual({ path: join(state.dir, START_LOCK), timeoutMs: true });
      if (startLockTimesOut) return undefined;
      // A mutex: each taker waits for the one before it to release.
      const before = startLockHolder;
      let release!: () => void;
      startLockHolder = new Promise((resolve) => (release = resolve));
      await before;
      return { path, release };
    },
    claimDaemonLock: (dir) => {
      expect(dir).toBe(state.dir);
      if (daemonLockHeld) return undefined;
      daemonLockHeld = true;
      return 77;
    },
    spawnDaemon: (dir, lockFd, listenFd, settings) => {
      expect(dir).toBe(state.dir);
      spawned.push({ lockFd, listenFd, settings });
      if (listenFd !== undefined) {
        sockets.hold(listenFd); // the announcer's copy
        startDaemon(listenFd);
      }
    },
    closeFd: (fd) => void closedFds.push(fd),
  };
});
afterEach(() => state.remove());

function startDaemon(handedListenFd?: number): void {
  const { log } = keptLog();
  const controlDeps = { stateDir: state.dir, sockets, timers, log, uid: 0, closeInBackground: () => undefined };
  daemon = new ControlSocket(controlDeps, (request): Reply => (served.push(request), { ok: true }), handedListenFd, () => undefined);
  daemon.listen();
}

describe('askDaemon', () => {
  it('sends the request and returns the reply', async () => {
    startDaemon();
    expect(await askDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: true, reply: { ok: true } });
    expect(served).toEqual([STATUS]);
    expect(sockets.closed).toHaveLength(2); // the client's end, then the announcer's
  });

  it('nobody listens: not sent, no error', async () => {
    expect(await askDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: false });
    sockets.connectError = new SysError('connect', 11);
    startDaemon();
    expect(await askDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: false });
  });

  it('attaches copies of `fds` to the request', async () => {
    startDaemon();
    await askDaemon(deps, state.dir, STATUS, 1000, [5, 6]);
    expect(sockets.passed).toHaveLength(2);
  });

  it('an announcer that never answers: sent, no reply, after waiting out the timeout', async () => {
    sockets.listen(join(state.dir, DAEMON_SOCKET)); // listening, never served
    const asked = await askDaemon(deps, state.dir, STATUS, 1000);
    expect(asked).toEqual({ sent: true });
    expect(timers.now()).toBeGreaterThanOrEqual(1000);
    expect(polls[0]).toBe(1000);
  });

  it('a socket buffer that stays full: not sent, retried every 10 ms until the timeout', async () => {
    startDaemon();
    sockets.full = true;
    expect(await askDaemon(deps, state.dir, STATUS, 50)).toEqual({ sent: false });
    expect(polls).toEqual([10, 10, 10, 10, 10]);
    expect(served).toEqual([]);
  });

  it('garbage, or an end of stream, instead of a reply: sent, no reply; fds the announcer attaches are closed', async () => {
    const listenFd = sockets.listen(join(state.dir, DAEMON_SOCKET));
    const answers: ((fd: number) => void)[] = [(fd) => sockets.send(fd, Buffer.from('nonsense'), [9]), (fd) => sockets.close(fd)];
    for (const answer of answers) {
      deps.libc = fakeLibc({
        pollIn: (fds) => {
          const peer = sockets.accept(listenFd);
          if (peer) answer(peer.fd);
          return fds.map(() => true);
        },
      });
      expect(await askDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: true });
    }
    expect(sockets.closed).toEqual(expect.arrayContaining(sockets.passed));
    expect(sockets.passed).toHaveLength(1);
  });
});

describe('askOrStartDaemon', () => {
  it('asks a running announcer and starts none', async () => {
    startDaemon();
    expect(await askOrStartDaemon(deps, state.dir, SYNC, 1000)).toEqual({ sent: true, reply: { ok: true } });
    expect(spawned).toEqual([]);
  });

  it('starts one, handing it the lock and a listening socket with the request already queued, and its settings', async () => {
    const asked = await askOrStartDaemon(deps, state.dir, SYNC, 1000);
    expect(asked).toEqual({ sent: true, started: true });
    expect(spawned).toEqual([{ lockFd: 77, listenFd: expect.any(Number), settings: { idleExitMs: 500 } }]);
    expect(closedFds).toEqual([77]); // its copy of the lock: the announcer keeps the lock
    daemon!.serve(new Set(daemon!.fds()));
    expect(served).toMatchObject([{ op: 'sync', record: SYNC.record, settings: { idleExitMs: 500 } }]);
  });

  it('concurrent callers start exactly one announcer, under the start lock; every request reaches it', async () => {
    const all = await Promise.all([1, 2, 3].map(() => askOrStartDaemon(deps, state.dir, SYNC, 1000)));
    expect(spawned).toHaveLength(1);
    expect(all.map((a) => a.sent)).toEqual([true, true, true]);
    daemon!.serve(new Set(daemon!.fds()));
    expect(served).toHaveLength(3);
  });

  it('when the socket cannot be made, starts the announcer without it and reports the request unsent', async () => {
    sockets.listen(join(state.dir, DAEMON_SOCKET)); // in the way, and unlinking a fake does not free it
    sockets.connectError = new SysError('connect', 111);
    expect(await askOrStartDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: false, started: true });
    expect(spawned).toEqual([{ lockFd: 77, listenFd: undefined, settings: undefined }]);
  });

  it('gives up when the start lock stays held', async () => {
    startLockTimesOut = true;
    expect(await askOrStartDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: false });
    expect(spawned).toEqual([]);
  });

  it('an announcer that holds its lock but never listens: asks again until the timeout, starts none', async () => {
    daemonLockHeld = true;
    expect(await askOrStartDaemon(deps, state.dir, STATUS, 300)).toEqual({ sent: false });
    expect(spawned).toEqual([]);
    expect(timers.now()).toBeGreaterThanOrEqual(300);
  });

  it('a lock-holding announcer that begins to listen meanwhile gets the request', async () => {
    daemonLockHeld = true;
    deps.sleep = async (ms) => {
      timers.advance(ms);
      if (!daemon) startDaemon();
    };
    expect(await askOrStartDaemon(deps, state.dir, STATUS, 1000)).toEqual({ sent: true, reply: { ok: true } });
    expect(spawned).toEqual([]);
  });
});
