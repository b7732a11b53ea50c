// The shim's real dependencies: the runtime's unix-stream twin, CLOCK_BOOTTIME, and a start that
// loads its modules (node:fs and the spawner, src/sys/spawn-child, among them) only when an announcer must be started.
import { connectUnix } from '../sys/unix-stream';
import { exchange, bootClock } from './exchange';
import type { ShimDeps } from './shim';
import type { Started } from './start';
import { withAnnouncerAddress } from './socket-address';

/** ShimDeps for this process, sending `build` in every request; `readText` reads /proc/uptime. */
export async function realShimDeps(build: string, readText: (path: string) => Promise<string>): Promise<ShimDeps> {
  const uptime = await readText('/proc/uptime');
  const clock = bootClock(() => uptime);
  const listening = (stateDir: string): Promise<boolean> =>
    withAnnouncerAddress(stateDir, async (address) => {
      const probe = await connectUnix(address, { data: () => undefined, end: () => undefined, error: () => undefined });
      probe.close();
      return true;
    }).catch(() => false);
  return {
    clock,
    exchange: (stateDir, body, waitMs) =>
      withAnnouncerAddress(stateDir, (address) =>
        exchange({ connect: connectUnix, clock }, address, body, build, waitMs),
      ).catch((err: unknown) => ({
        // The O_PATH open of a long stateDir failed: as connect(2) would have.
        unreachable: (err as NodeJS.ErrnoException).code ?? 'EIO',
      })),
    announcerPid: async (stateDir) => (await import('./lock-holder')).announcerPid(stateDir),
    replaceHung: async (stateDir) => (await import('./replace-hung')).replaceHungHere(stateDir),
    start: (stateDir) => startHere(stateDir, listening),
  };
}

/** Starts stateDir's announcer from this executable (start.ts), loading what starting needs only now. */
async function startHere(stateDir: string, listening: (stateDir: string) => Promise<boolean>): Promise<Started> {
  const [
    { startAnnouncer, envObject },
    { spawnChild },
    { ensurePrivateDir, stateDirProblem },
    { selfCommand },
    { detachedEnv, userModeEmulator },
    { StateDirError },
  ] = await Promise.all([
    import('./start'),
    import('../sys/spawn-child'),
    import('../sys/private-dir'),
    import('../self-command'),
    import('../sys/detached'),
    import('./unavailable'),
  ]);
  const emulator = userModeEmulator();
  return startAnnouncer(
    {
      ensureStateDir: (dir) => {
        try {
          ensurePrivateDir(dir);
        } catch (err) {
          throw new StateDirError(stateDirProblem(dir, err), { cause: err });
        }
      },
      wallNow: Date.now,
      spawn: spawnChild,
      self: selfCommand(process.argv, process.execPath, emulator),
      env: envObject(detachedEnv(process.env, emulator !== undefined)),
      listening,
    },
    stateDir,
  );
}
