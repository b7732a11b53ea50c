// The announcers of the soak's stateDir, seen and acted on from outside: the one serving (it holds the lifetime lock),
// signals sent by pid only after checking that the pid is still that process (its start time) and still an announcer
// of this stateDir started by this run (RUN_TAG), the two builds an upgrade swaps, and the resident announcer run as
// the DaemonSet runs it.
import { spawn } from 'node:child_process';
import { chmod, copyFile, mkdir, rename } from 'node:fs/promises';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_LOCK } from '../../src/state-files';
import { ANNOUNCER, RUN_TAG_ENV } from '../../test/integration/harness/cni';
import { daemonsOf } from '../../test/integration/harness/daemon';
import { childEnv } from '../../test/integration/harness/exec';
import { buildAnnouncerAs, buildOf, flockHolders } from '../../test/integration/harness/held-announcer';
import { RUN_TAG } from '../../test/integration/harness/names';
import { isLive, startTimeOf } from '../../test/integration/harness/proc-tree';
import type { Scope } from '../../test/integration/harness/scope';
import { execRetrying } from './calls';
import { pause, pollUntil } from './time';

/** One announcer process: its pid and start time name it (a pid alone may be recycled). */
export interface AnnouncerPid {
  pid: number;
  startTime: string;
  resident: boolean;
}

/** The announcer of stateDir that holds its lifetime lock, if it is one this run started. */
export async function servingAnnouncer(stateDir: string): Promise<AnnouncerPid | undefined> {
  const holders = await flockHolders(join(stateDir, DAEMON_LOCK));
  if (holders.length === 0) return undefined;
  const ours = await daemonsOf(stateDir);
  for (const pid of holders) {
    const p = ours.find((o) => o.pid === pid);
    const startTime = p && (await startTimeOf(pid));
    if (startTime) return { pid, startTime, resident: p.argv.includes('--resident') };
  }
  return undefined;
}

/** Waits (bounded) for an announcer to serve stateDir; the load's calls start one when none runs. */
export async function waitServing(stateDir: string, boundMs: number, signal: AbortSignal) {
  let found: AnnouncerPid | undefined;
  await pollUntil(async () => (found = await servingAnnouncer(stateDir)) !== undefined, boundMs, 50, signal);
  return found;
}

/**
 * Sends `signal` to the announcer `a` if it is still that process and still an announcer of stateDir this run
 * started; records the pid in `signalled` for a stopping signal. Whether it was sent.
 */
export async function signalChecked(
  stateDir: string,
  a: AnnouncerPid,
  signal: NodeJS.Signals,
  signalled: Set<number>,
): Promise<boolean> {
  if ((await startTimeOf(a.pid)) !== a.startTime) return false;
  if (!(await daemonsOf(stateDir)).some((p) => p.pid === a.pid)) return false;
  if (signal === 'SIGTERM' || signal === 'SIGKILL' || signal === 'SIGINT') signalled.add(a.pid);
  try {
    process.kill(a.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) until `a` has exited (or begun to): when it was seen gone, or undefined. */
export async function waitGone(a: AnnouncerPid, boundMs: number): Promise<number | undefined> {
  const gone = await pollUntil(async () => !(await isLive(a.pid, a.startTime)), boundMs, 20);
  return gone ? Date.now() : undefined;
}

/** The two builds an upgrade swaps, and the plugin as installed (where every CNI call runs it from). */
export class Builds {
  private current = 0;
  private constructor(
    readonly dir: string,
    private readonly files: readonly [string, string],
    readonly ids: readonly [string, string],
  ) {}

  /** bin/announcer, and the same sources built with another build id; the first one installed. */
  static async make(dir: string): Promise<Builds> {
    const other = join(dir, 'announcer-next');
    await buildAnnouncerAs(other, `soak${RUN_TAG}`);
    const ids = [await buildOf(ANNOUNCER), await buildOf(other)] as const;
    const builds = new Builds(dir, [ANNOUNCER, other], ids);
    await mkdir(join(dir, 'bin'));
    await builds.install(0);
    return builds;
  }

  /** Where the runtime finds the plugin. */
  get installed(): string {
    return join(this.dir, 'bin', 'announcer');
  }

  /** The build installed now. */
  get installedId(): string {
    return this.ids[this.current]!;
  }

  /** The upgrade: the other build copied next to the plugin, then renamed over it, as the DaemonSet's installer. */
  async upgrade(): Promise<void> {
    await this.install(1 - this.current);
  }

  private async install(which: number): Promise<void> {
    const next = `${this.installed}.new`;
    await copyFile(this.files[which]!, next);
    await chmod(next, 0o755);
    // A child forked while the copy was open for writing holds its fd until its own exec (ETXTBSY for whoever runs
    // the file meanwhile): let those execs happen before the file becomes the plugin.
    await pause(200);
    await rename(next, this.installed);
    this.current = which;
  }
}

/** The DaemonSet's announcer: `announcer daemon <stateDir> --resident`, run from a file of its own (the image's). */
export interface Resident extends AnnouncerPid {
  /** Resolves with when it exited. */
  exited: Promise<number>;
  hasExited(): boolean;
}

/** Starts a resident announcer from a copy of the installed plugin; it is stopped at scope close if still running. */
export async function startResident(scope: Scope, stateDir: string, builds: Builds, n: number): Promise<Resident> {
  const file = join(builds.dir, `announcer-resident${n}`);
  await copyFile(builds.installed, file);
  await chmod(file, 0o755);
  await pause(200); // see Builds.install
  const out = openSync(`${file}.out`, 'a');
  const env = { PATH: childEnv({}, false).PATH!, [RUN_TAG_ENV]: RUN_TAG };
  const child = await execRetrying(async () =>
    spawn(file, ['daemon', stateDir, '--resident'], { env, stdio: ['ignore', out, out] }),
  );
  closeSync(out);
  let exitedAt: number | undefined;
  const exited = new Promise<number>((resolve) => {
    child.on('exit', () => resolve((exitedAt = Date.now())));
    child.on('error', () => resolve((exitedAt = Date.now())));
  });
  scope.defer(async () => {
    if (exitedAt !== undefined) return;
    child.kill('SIGTERM'); // our own child, not yet reaped: its pid names it
    if ((await Promise.race([exited, pause(5000).then(() => undefined)])) === undefined) child.kill('SIGKILL');
    await exited;
  }, `resident announcer ${child.pid}`);
  const startTime = (child.pid && (await startTimeOf(child.pid))) || 'gone';
  return { pid: child.pid ?? -1, startTime, resident: true, exited, hasExited: () => exitedAt !== undefined };
}
