import { detachedEnv } from './detached-env';
import { userModeEmulator } from './emulator';
import type { Libc } from './libc';
import { processStartTime, type ProcessId } from './processes';

export { detachedEnv } from './detached-env';

/**
 * Starts `...command ...args` detached: its own session, stdio on /dev/null
 * (the runtime waits for the plugin's stdout to close, so the child must not
 * hold it), no other inherited fd but `inherit`, in `/` (it must keep no
 * directory of the caller's busy, nor resolve paths there), with
 * detachedEnv, not waited for. `command[0]` is the executable's path and
 * argv[0], so `ps` shows e.g. `/opt/cni/bin/announcer daemon …` (see selfCommand). posix_spawn through koffi costs under a
 * millisecond; node:child_process would cost ADD ~10 ms to load.
 */
export function spawnDetached(libc: Libc, command: readonly string[], args: readonly string[], inherit: readonly number[] = []): ProcessId {
  const path = command[0];
  if (path === undefined) throw new Error('spawnDetached: empty command');
  const env = detachedEnv(process.env, userModeEmulator() !== undefined);
  const pid = libc.spawnDetached(path, [...command, ...args], env, inherit, '/');
  // The start time is fixed at fork, so reading it now is safe even if exec has not happened yet.
  const startTime = processStartTime(pid);
  if (startTime === undefined) throw new Error(`background process ${pid} exited at once`);
  return { pid, startTime };
}
