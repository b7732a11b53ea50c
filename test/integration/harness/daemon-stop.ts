// Stopping the background announcer of a test's own stateDir, as a normal
// cleanup step: since every CNI command goes through it (src/shim), one runs
// for idleExitMs after any command, and a test's stateDir outlives no test.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { START_MARKER } from '../../../src/state-files';
import { ownAnnouncerProcessesNow, signalDaemon, type AnnouncerProcess } from './processes';
import { isLive, startTimeOf } from './proc-tree';

/** How long a SIGTERMed announcer may take to finish its turn and exit before it is SIGKILLed. */
const TERM_GRACE_MS = 5000;
/** How long a starting announcer may take to listen before it is stopped anyway. */
const START_GRACE_MS = 10_000;

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** signalDaemon, quietly: a process that exited between the look and the signal is no error. */
async function signalIfStill(p: AnnouncerProcess, stateDir: string, signal: NodeJS.Signals): Promise<void> {
  await signalDaemon(p.pid, stateDir, signal).catch(() => false);
}

/**
 * Stops every background announcer of stateDir that this test process
 * started: SIGTERM by pid after checking again that the pid runs
 * `announcer daemon <stateDir>` with our RUN_TAG, a wait for it to exit, and
 * SIGKILL only if it has not within TERM_GRACE_MS. Resolves with the pids it
 * stopped; rejects if one survives SIGKILL.
 */
export async function stopDaemonsOf(stateDir: string): Promise<number[]> {
  const daemons = (await ownAnnouncerProcessesNow()).filter((p) => p.daemonStateDir === stateDir);
  // One still starting (slow under qemu) removes the start marker once it listens: let it, so that
  // a stop leaves what a normal exit leaves.
  const marker = join(stateDir, START_MARKER);
  for (const start = Date.now(); daemons.length > 0 && Date.now() - start < START_GRACE_MS && (await exists(marker)); )
    await sleep(20);
  // Each by pid and start time: a pid recycled meanwhile is not the announcer still running.
  const started = new Map(await Promise.all(daemons.map(async (p) => [p.pid, await startTimeOf(p.pid)] as const)));
  const running = (pid: number): Promise<boolean> => isLive(pid, started.get(pid) ?? 'gone');
  for (const p of daemons) await signalIfStill(p, stateDir, 'SIGTERM');
  const exited = async (): Promise<boolean> => !(await Promise.all(daemons.map((p) => running(p.pid)))).some(Boolean);
  for (const start = Date.now(); Date.now() - start < TERM_GRACE_MS && !(await exited()); ) await sleep(20);
  for (const p of daemons) if (await running(p.pid)) await signalIfStill(p, stateDir, 'SIGKILL');
  for (const start = Date.now(); Date.now() - start < TERM_GRACE_MS && !(await exited()); ) await sleep(20);
  const left = [];
  for (const p of daemons) if (await running(p.pid)) left.push(p.pid);
  if (left.length > 0)
    throw new Error(`background announcers of ${stateDir} still running after SIGKILL: ${left.join(', ')}`);
  return daemons.map((p) => p.pid);
}
