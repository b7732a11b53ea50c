// Starts the node's announcer from a shim, without FFI, at most once across shims that find it
// absent together: the one that creates the start marker (O_EXCL) spawns it and waits for its
// ready line (--ready-fd); the others retry the connection. The announcer takes its own flock and
// removes the marker once it listens, so the marker only keeps a herd from spawning a process
// each; the shim that takes it looks once more whether an announcer listens before it spawns one.
import { closeSync, lstatSync, openSync, unlinkSync } from 'node:fs';
import { join } from '../path';
import { START_MS } from '../protocol';
import { DAEMON_VERB, READY_FD, READY_FD_FLAG, readyOutcome, selfCommand } from '../self-command';
import { START_MARKER } from '../state-files';
import { detachedEnv, userModeEmulator } from '../sys/detached';
import { ensurePrivateDir, stateDirProblem } from '../sys/private-dir';
import { spawnChild } from '../sys/spawn-child';
import { attempt } from '../sys/sys-error';
import { StateDirError } from './unavailable';

/** What starting needs: the files, the wall clock, the spawner and what to spawn. */
export interface StartDeps {
  /** Creates stateDir 0700 if missing, and refuses one another user could change (see sys/private-dir.ts). */
  ensureStateDir(stateDir: string): void;
  /** Wall-clock ms, compared with the marker's mtime. */
  wallNow(): number;
  /**
   * Starts `command` detached with `env`, one end of a pipe (a socketpair under Bun) as its fd READY_FD
   * (src/sys/spawn-child.ts); resolves with the first line through it ('' at its end without one).
   */
  spawn(command: readonly string[], env: Readonly<Record<string, string>>): Promise<string>;
  /** The command that starts this program again (selfCommand). */
  self: readonly string[];
  /** The announcer's environment: PATH alone, plus QEMU_* under a user-mode emulator (detachedEnv). */
  env: Readonly<Record<string, string>>;
  /** Whether an announcer of stateDir accepts a connection now. */
  listening(stateDir: string): Promise<boolean>;
}

/**
 * How a start went: this shim spawned the announcer (`ready`: its ready line, see readyOutcome), another shim is
 * starting one, or one listens by now.
 */
export type Started = { ready: Promise<string> } | 'starting' | 'running';

/**
 * Creates the start marker; false when another shim holds a fresh one. A stale one, or anything but a regular file (a
 * symlink is judged by itself, never by its target), is removed and taken.
 */
export function takeStartMarker(stateDir: string, wallNow: () => number): boolean {
  const marker = join(stateDir, START_MARKER);
  for (let tries = 0; ; tries++) {
    try {
      closeSync(openSync(marker, 'wx', 0o600));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (tries > 0) return false; // another shim took it after the stale one went
    }
    const st = attempt(() => lstatSync(marker), 'ENOENT');
    if (st === undefined) continue; // removed since: take it
    if (st.isFile() && wallNow() - st.mtimeMs <= START_MS) return false;
    // Stale: its shim died, or its announcer never came up.
    attempt(() => unlinkSync(marker), 'ENOENT');
  }
}

/**
 * Starts `announcer daemon <stateDir> --ready-fd=3` unless another shim is starting it ('starting') or one listens by
 * now ('running'). Rejects on a file or spawn error.
 */
export async function startAnnouncer(deps: StartDeps, stateDir: string): Promise<Started> {
  deps.ensureStateDir(stateDir);
  if (!takeStartMarker(stateDir, deps.wallNow)) return 'starting';
  try {
    // The announcer removes the marker once it listens: a shim whose connect failed just before
    // that takes the marker again here, and would spawn a second announcer (which waits for the
    // lock in vain). Look once more, now that the marker is ours.
    if (await deps.listening(stateDir)) {
      removeMarker(stateDir);
      return 'running';
    }
    const ready = deps.spawn([...deps.self, DAEMON_VERB, stateDir, `--${READY_FD_FLAG}=${READY_FD}`], deps.env);
    // One that could not start leaves its marker to this shim: gone, the next shim that finds no announcer spawns one
    // at once and hears why itself, instead of waiting for the marker to go stale.
    const heard = (line: string): string => {
      if (typeof readyOutcome(line) === 'object') removeMarker(stateDir);
      return line;
    };
    return {
      ready: ready.then(heard, (err: unknown) => {
        removeMarker(stateDir);
        throw err;
      }),
    };
  } catch (err) {
    removeMarker(stateDir);
    throw err;
  }
}

function removeMarker(stateDir: string): void {
  // ENOENT: stale, taken over; anything else: the next shim finds it stale.
  attempt(() => unlinkSync(join(stateDir, START_MARKER)));
}

/** Starts stateDir's announcer from this executable, as startAnnouncer does; `listening` as StartDeps's. */
export async function startHere(stateDir: string, listening: StartDeps['listening']): Promise<Started> {
  const emulator = userModeEmulator();
  const ensureStateDir = (dir: string): void => {
    try {
      ensurePrivateDir(dir);
    } catch (err) {
      throw new StateDirError(stateDirProblem(dir, err), { cause: err });
    }
  };
  return startAnnouncer(
    {
      ensureStateDir,
      wallNow: Date.now,
      spawn: spawnChild,
      self: selfCommand(process.argv, process.execPath, emulator),
      env: detachedEnv(process.env, emulator !== undefined),
      listening,
    },
    stateDir,
  );
}
