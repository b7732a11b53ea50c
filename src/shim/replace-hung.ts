// Who holds the announcer's lock of a stateDir, for a failure's message, and the named recovery of a hung announcer
// that a CNI call started: a call whose request got no answer by its deadline replaces the holder of stateDir's
// announcer lock once it is proven ours and hung. Proof, all three: it holds `announcer-daemon.flock` (/proc/locks
// names each lock's holder by the locked file's device and inode); its /proc/PID/exe is the same file (device, inode)
// as this process's executable; and the lock file's mtime, which the announcer's loop stamps at most once a second
// (STAMP_MS), is older than HUNG_AFTER_MS. Identity is checked again right before SIGKILL, sent by pid and to nothing
// else. The kernel frees the lock; the next call starts a new announcer, which resumes from the records. The
// DaemonSet's announcer runs another file (the image's), so it is never ours: its liveness probe is its recovery.
// Read only on the failure path, without FFI (SO_PEERCRED of the shim's own socket would need it).
import { readFile, stat } from 'node:fs/promises';
import { join } from '../path';
import { DAEMON_LOCK } from '../state-files';
import { fileIdOf, sameFile, type FileId } from '../sys/file-id';
import { flockHolder } from '../sys/lock-holder';

/** An announcer whose progress stamp is older than this has made no progress: it may be replaced. */
export const HUNG_AFTER_MS = 10_000;

/** The pid holding stateDir's announcer lock (undefined when none does), and the lock file's stat. */
async function lockHolder(stateDir: string) {
  const lock = await stat(join(stateDir, DAEMON_LOCK), { bigint: true });
  return { lock, pid: flockHolder(await readFile('/proc/locks', 'utf8'), lock.dev, lock.ino) };
}

/** The pid holding stateDir's announcer lock; undefined when none does. Rejects when it cannot be known. */
export async function announcerPid(stateDir: string): Promise<number | undefined> {
  return (await lockHolder(stateDir)).pid;
}

/** What a call knows of the lock's holder. */
export interface HolderFacts {
  /** The pid holding the lock (/proc/locks), undefined when none does. */
  pid: number | undefined;
  /** The file /proc/PID/exe names, undefined when it cannot be read. */
  exe: FileId | undefined;
  /** This process's executable. */
  ownExe: FileId;
  /** The lock file's mtime (wall-clock ms): the holder's last progress stamp. */
  stampedAt: number;
}

/** Whether to replace the holder: its pid, or why not. */
export type Verdict = { replace: number } | { keep: string };

/** Pure: whether the holder described by `facts` is ours and hung at wall-clock `now`. */
export function judgeHolder(facts: HolderFacts, now: number, hungAfterMs = HUNG_AFTER_MS): Verdict {
  const { pid, exe, ownExe } = facts;
  if (pid === undefined || pid <= 1 || pid === process.pid) return { keep: 'no other process holds the lock' };
  if (!sameFile(exe, ownExe)) return { keep: `pid ${pid} does not run this executable` };
  const age = now - facts.stampedAt;
  if (age <= hungAfterMs) return { keep: `pid ${pid} made progress ${Math.max(0, Math.round(age))} ms ago` };
  return { replace: pid };
}

/**
 * Replaces stateDir's announcer when it is ours and hung (see the top of this file), proving it twice (each `facts` a
 * fresh read), then `kill`ing it by pid; what happened, for the call's message. Never rejects.
 */
export async function replaceHung(
  stateDir: string,
  facts: (stateDir: string) => Promise<HolderFacts> = realFacts,
  kill: (pid: number) => void = (pid) => process.kill(pid, 'SIGKILL'),
  now: () => number = Date.now,
): Promise<string> {
  try {
    const first = judgeHolder(await facts(stateDir), now());
    if ('keep' in first) return `not replaced: ${first.keep}`;
    const again = judgeHolder(await facts(stateDir), now());
    if (!('replace' in again) || again.replace !== first.replace) return 'not replaced: the holder changed';
    kill(first.replace);
    const killed = 'killed (SIGKILL), the next call starts another';
    return `pid ${first.replace} made no progress for ${HUNG_AFTER_MS} ms: ${killed}`;
  } catch (err) {
    return `not replaced: ${(err as Error).message}`;
  }
}

/** The facts of the real process: /proc/locks, /proc/PID/exe, /proc/self/exe and the lock file. */
async function realFacts(stateDir: string): Promise<HolderFacts> {
  const { lock, pid } = await lockHolder(stateDir);
  const own = await stat('/proc/self/exe');
  const exe = pid === undefined ? undefined : await stat(`/proc/${pid}/exe`).catch(() => undefined);
  return { pid, exe: exe && fileIdOf(exe), ownExe: fileIdOf(own), stampedAt: Number(lock.mtimeNs) / 1e6 };
}
