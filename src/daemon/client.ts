// Talking to the background announcer of a stateDir: one request per
// connection, every step bounded. A missing or silent announcer is never an
// error here: callers fall back (the records in stateDir keep the work).
import { join } from 'node:path';
import type { LockFile } from '../announce/attachment-lock';
import type { Libc } from '../sys/libc';
import type { UnixSockets } from '../sys/unix-socket';
import { START_LOCK, withSocketAddress } from './paths';
import { decodeReply, encodeMessage, MAX_MESSAGE_BYTES, type Reply, type Request } from './protocol';
import type { DaemonSettings } from './settings';

/** What asking the announcer needs from the process. */
export interface AskDeps {
  libc: Libc;
  sockets: UnixSockets;
  /** Monotonic ms. */
  now(): number;
}

/** What starting the announcer needs besides. */
export interface ClientDeps extends AskDeps {
  sleep(ms: number): Promise<void>;
  lockFile: LockFile;
  /**
   * Takes the lock every announcer of `stateDir` holds for its life, without
   * waiting: the open fd when free, undefined when an announcer holds it.
   */
  claimDaemonLock(stateDir: string): number | undefined;
  /** Starts `announcer daemon <stateDir>` detached with `settings`, handing it `lockFd` (as its fd 3). */
  spawnDaemon(stateDir: string, lockFd: number, settings: DaemonSettings | undefined): void;
  closeFd(fd: number): void;
}

/** How often a starting client tries to reach the announcer it started. */
const START_POLL_MS = 10;

/** What asking found: whether the request (and the fds attached) went out, and the reply if one came in time. */
export interface Asked {
  sent: boolean;
  reply?: Reply;
  /** askOrStartDaemon started an announcer instead (it reads the records itself; the request was not sent). */
  started?: boolean;
}

/**
 * Sends `request` (with copies of `fds` attached) to the background announcer
 * of `stateDir`, and waits up to `timeoutMs` for its reply.
 */
export async function askDaemon(deps: AskDeps, stateDir: string, request: Request, timeoutMs: number, fds: readonly number[] = []): Promise<Asked> {
  const deadline = deps.now() + timeoutMs;
  let fd: number;
  try {
    fd = withSocketAddress(stateDir, (address) => deps.sockets.connect(address));
  } catch {
    return { sent: false }; // nobody listens (ENOENT, ECONNREFUSED) or the backlog is full (EAGAIN)
  }
  let sent = false;
  try {
    const message = encodeMessage(request);
    while (!deps.sockets.send(fd, message, fds)) {
      const left = deadline - deps.now();
      if (left <= 0) return { sent };
      deps.libc.pollIn([fd], Math.min(left, START_POLL_MS)); // POLLOUT is not offered: retry shortly
    }
    sent = true;
    const buf = Buffer.alloc(MAX_MESSAGE_BYTES);
    for (;;) {
      const got = deps.sockets.receive(fd, buf);
      if (got !== undefined) {
        for (const extra of got.fds) deps.sockets.close(extra); // never expected from the announcer
        const reply = got.length === 0 ? undefined : decodeReply(buf.subarray(0, got.length));
        return reply ? { sent, reply } : { sent };
      }
      const left = deadline - deps.now();
      if (left <= 0) return { sent };
      deps.libc.pollIn([fd], left);
    }
  } catch {
    return { sent }; // reset by an announcer that is exiting
  } finally {
    deps.sockets.close(fd);
  }
}

/**
 * askDaemon, starting the background announcer when none answers. The job is
 * already in the record, which a starting announcer reads once it listens, so
 * the starter does not wait for it (`started`; the request was not sent).
 * Concurrent callers start exactly one: under the start lock, only the caller
 * that can take the announcer's own lock starts one, and hands that lock to
 * it. A caller that finds the lock held asks again until the holder answers
 * (it is starting), or lets go of the lock (it was exiting: start one then).
 */
export async function askOrStartDaemon(
  deps: ClientDeps,
  stateDir: string,
  request: Request,
  timeoutMs: number,
  fds: readonly number[] = [],
): Promise<Asked> {
  const deadline = deps.now() + timeoutMs;
  const left = (): number => Math.max(0, deadline - deps.now());
  const first = await askDaemon(deps, stateDir, request, left(), fds);
  if (first.sent) return first;
  const lock = await deps.lockFile(join(stateDir, START_LOCK), left());
  if (!lock) return { sent: false };
  try {
    for (;;) {
      const held = deps.claimDaemonLock(stateDir);
      if (held !== undefined) {
        try {
          // The request is not sent to it: its settings go on its command line.
          deps.spawnDaemon(stateDir, held, 'settings' in request ? request.settings : undefined);
        } finally {
          deps.closeFd(held); // the announcer's copy keeps the lock
        }
        return { sent: false, started: true };
      }
      const asked = await askDaemon(deps, stateDir, request, Math.min(left(), START_POLL_MS * 10), fds);
      if (asked.sent || left() <= 0) return asked;
      await deps.sleep(Math.min(START_POLL_MS, left()));
    }
  } finally {
    lock.release();
  }
}
