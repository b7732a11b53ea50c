// Taking stateDir's announcer lock (flock, held for the announcer's life). An
// announcer a shim started gives up when another one listens (two shims
// started one each). A resident one (the DaemonSet's) first takes the resident
// lock, which it holds for its whole life, then asks the one that listens to
// hand over, as an upgrade would, and waits for the announcer lock as long as
// it takes. While a resident holds its lock, an announcer a shim started never
// takes the announcer lock: it waits for the resident to listen, and leaves the
// calls to it (else the two would race for the lock each time a resident asks).
// A second resident one finds the first serving and exits. Every wait on a
// holder is a poll(2) on its pidfd (src/sys/lock-holder.ts): it ends when the
// holder exits, not at the next tick of a timer.
import { closeSync, openSync } from 'node:fs';
import type { Timers } from '../announce/context';
import type { Logger } from '../log';
import { join } from '../path';
import { RESIDENT_REFUSAL, type ControlReply } from '../protocol';
import { ABI } from '../sys/abi/kernel-abi';
import type { Libc } from '../sys/libc';
import type { HolderWait } from '../sys/lock-holder';
import { attempt } from '../sys/sys-error';
import { withSocketAddress, type UnixSockets } from '../sys/unix-socket';
import { DAEMON_LOCK, RESIDENT_LOCK } from '../state-files';

/** How long an announcer a shim started waits for one that is exiting (or handing over) to let go of the lock. */
export const LOCK_WAIT_MS = 5000;
/** With no holder to name (lock-holder.ts), how long one wait lasts before the lock is tried again. */
const LOCK_POLL_MS = 20;
/** The longest a resident announcer waits for the holder's exit before it looks (and asks) again. */
const ASK_AGAIN_MS = 1000;

/** What taking the lock needs. */
export interface LockDeps {
  stateDir: string;
  /** Takes the locks (tryLock) and looks for an announcer that listens (connect). */
  libc: Libc & UnixSockets;
  timers: Timers;
  /**
   * Blocks in poll(2) until the holder of the lock on `lockFd` exits, `ms` at most; `fallbackMs` when it cannot be
   * named (src/sys/lock-holder.ts).
   */
  waitForHolder(lockFd: number, ms: number, fallbackMs: number): HolderWait;
  log: Logger;
  /** Run by the DaemonSet: take over from an announcer a shim started. */
  resident?: boolean | undefined;
  /** Sends `{"op":"handover"}` to the announcer listening on stateDir; its reply, undefined when none came. */
  askHandover?: (() => Promise<ControlReply | undefined>) | undefined;
}

/**
 * How it went: the lock is ours, another announcer serves (not needed), or a resident one serves and refused to hand
 * over.
 */
export type TakeOver = 'taken' | 'served' | 'resident';

/**
 * Runs `serve` once the announcer lock of stateDir is taken (see the top of this file), with the fd the lock is held
 * on; the locks go when it returns.
 */
export async function withDaemonLock(deps: LockDeps, serve: (lockFd: number) => Promise<void>): Promise<TakeOver> {
  let residentFd: number | undefined = openLockFile(deps.stateDir, RESIDENT_LOCK);
  try {
    const turn = deps.resident ? takeResidentLock(deps, residentFd) : takeUnlessServed(deps, residentFd, LOCK_POLL_MS);
    if (turn !== 'taken') return turn;
    if (!deps.resident) {
      closeQuietly(residentFd); // no resident one: its lock, just taken, is not ours to hold
      residentFd = undefined;
    }
    const lockFd = openLockFile(deps.stateDir, DAEMON_LOCK);
    try {
      const took = await takeDaemonLock(deps, lockFd);
      if (took === 'taken') await serve(lockFd);
      return took;
    } finally {
      closeQuietly(lockFd);
    }
  } finally {
    if (residentFd !== undefined) closeQuietly(residentFd);
  }
}

/** close(2), which releases a lock on the fd even when it reports an error. */
function closeQuietly(fd: number): void {
  attempt(() => closeSync(fd)); // released all the same
}

/**
 * The resident lock, for a resident announcer: taken, or 'resident' when another resident one holds it and serves.
 * One that holds it and does not listen (a resident stopping, or one waiting for the announcer lock) is waited for.
 */
function takeResidentLock(deps: LockDeps, residentFd: number): TakeOver {
  while (!deps.libc.tryLock(residentFd)) {
    if (someoneListens(deps.stateDir, deps.libc)) return 'resident';
    deps.waitForHolder(residentFd, ASK_AGAIN_MS, LOCK_POLL_MS);
  }
  return 'taken';
}

/**
 * For an announcer a shim started, the lock on `fd`: 'taken', or 'served' once another announcer listens or
 * LOCK_WAIT_MS has passed. Each wait on the holder lasts `eachMs` at most: a resident holder never exits, so its lock
 * is tried again, and the socket looked at, every LOCK_POLL_MS.
 */
function takeUnlessServed(deps: LockDeps, fd: number, eachMs = Infinity): TakeOver {
  const start = deps.timers.now();
  for (;;) {
    if (deps.libc.tryLock(fd)) return 'taken';
    const left = LOCK_WAIT_MS - (deps.timers.now() - start);
    if (someoneListens(deps.stateDir, deps.libc) || left <= 0) return 'served';
    deps.waitForHolder(fd, Math.min(left, eachMs), LOCK_POLL_MS);
  }
}

/** Takes the announcer lock on `lockFd`; a resident announcer asks the one that listens to hand over. */
async function takeDaemonLock(deps: LockDeps, lockFd: number): Promise<TakeOver> {
  if (!deps.resident) return takeUnlessServed(deps, lockFd);
  while (!deps.libc.tryLock(lockFd)) {
    // One that does not listen is exiting or handing over: wait for it.
    const listens = someoneListens(deps.stateDir, deps.libc);
    if (listens) {
      const reply = await deps.askHandover?.();
      if (reply?.ok === false && reply.error === RESIDENT_REFUSAL) return 'resident';
      if (reply?.ok)
        deps.log.info('the running announcer hands over to this resident one', { stateDir: deps.stateDir });
      else
        deps.log.warn('the running announcer did not answer "handover": asking again', {
          stateDir: deps.stateDir,
          inMs: ASK_AGAIN_MS,
        });
    }
    // Asked, a holder that cannot be named is asked again only after ASK_AGAIN_MS.
    deps.waitForHolder(lockFd, ASK_AGAIN_MS, listens ? ASK_AGAIN_MS : LOCK_POLL_MS);
  }
  return 'taken';
}

/** Opens (creating it 0600, never through a symlink) one of stateDir's lock files: DAEMON_LOCK or RESIDENT_LOCK. */
export function openLockFile(stateDir: string, name: typeof DAEMON_LOCK | typeof RESIDENT_LOCK): number {
  return openSync(join(stateDir, name), ABI.O_RDWR | ABI.O_CREAT | ABI.O_NOFOLLOW, 0o600);
}

/** Whether an announcer accepts connections on stateDir's socket (the connection is closed at once). */
export function someoneListens(stateDir: string, sockets: UnixSockets): boolean {
  try {
    withSocketAddress(stateDir, (address) => sockets.close(sockets.connect(address)));
    return true;
  } catch {
    return false; // ENOENT, ECONNREFUSED: nobody listens
  }
}
