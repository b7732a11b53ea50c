// Talking to the background announcer of a stateDir: one request per
// connection, every step bounded. A missing or silent announcer is never an
// error here: callers fall back (the records in stateDir keep the work).
import { join } from '../path';
import type { LockFile } from '../announce/attachment-lock';
import type { Libc } from '../sys/libc';
import { unlinkIfPresent } from '../sys/safe-file';
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
  /** Takes, without waiting, the lock every announcer of `stateDir` holds for its life: the open fd, or undefined when an announcer holds it. */
  claimDaemonLock(stateDir: string): number | undefined;
  /** Starts `announcer daemon <stateDir>` detached with `settings`, `lockFd` as its fd 3 and `listenFd` (its control socket, listening), if any, as its fd 4. */
  spawnDaemon(stateDir: string, lockFd: number, listenFd: number | undefined, settings: DaemonSettings | undefined): void;
  closeFd(fd: number): void;
}

/** The listening control socket for an announcer about to start (undefined: it makes its own); under its lock, a socket left there is a dead one's. */
function listenFor(deps: AskDeps, stateDir: string): number | undefined {
  try {
    return withSocketAddress(stateDir, (address) => {
      unlinkIfPresent(address);
      return deps.sockets.listen(address);
    });
  } catch {
    return undefined;
  }
}

/** How often a starting client tries to reach the announcer it started. */
const START_POLL_MS = 10;

/** What asking found: whether the request (and the fds attached) went out, and the reply if one came in time. */
export interface Asked {
  sent: boolean;
  reply?: Reply;
  /** askOrStartDaemon started the announcer (the request waits in its socket's queue when `sent`). */
  started?: boolean;
}

/** Sends `request`, with copies of `fds`, to the background announcer of `stateDir`, and waits up to `timeoutMs` for its reply. */
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
 * askDaemon, starting the background announcer when none answers. Concurrent
 * callers start exactly one: under the start lock, only the caller that can
 * take the announcer's own lock starts one, and hands that lock to it. The
 * starter also creates the control socket and hands it over listening, then
 * queues its request there without waiting for the announcer to boot
 * (`started`): the request is served once it runs, as are those of callers
 * that find the lock held and ask again meanwhile (or, when it was exiting,
 * start one once it let go of the lock). A request lost anyway is not work
 * lost: the job is in the record, which a starting announcer reads.
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
        let listenFd: number | undefined;
        try {
          listenFd = listenFor(deps, stateDir);
          // Its settings go on its command line too: the request may not reach it.
          deps.spawnDaemon(stateDir, held, listenFd, 'settings' in request ? request.settings : undefined);
        } finally {
          deps.closeFd(held); // the announcer's copy keeps the lock
          if (listenFd !== undefined) deps.sockets.close(listenFd); // and its copy the socket
        }
        if (listenFd === undefined) return { sent: false, started: true };
        return { ...(await askDaemon(deps, stateDir, request, 0, fds)), started: true };
      }
      const asked = await askDaemon(deps, stateDir, request, Math.min(left(), START_POLL_MS * 10), fds);
      if (asked.sent || left() <= 0) return asked;
      await deps.sleep(Math.min(START_POLL_MS, left()));
    }
  } finally {
    lock.release();
  }
}
