import { spawn } from 'node:child_process';
import { processStartTime, type ProcessId } from './processes';

/**
 * Starts `node script ...args` detached: its own session, no stdio (the
 * runtime waits for the plugin's stdout to close, so the child must not hold
 * it) and not waited for.
 */
export function spawnDetached(script: string, args: readonly string[]): ProcessId {
  const child = spawn(process.execPath, [script, ...args], { detached: true, stdio: 'ignore' });
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot start background process ${script}`);
  // The start time is fixed at fork, so reading it now is safe even if exec has not happened yet.
  const startTime = processStartTime(pid);
  if (startTime === undefined) throw new Error(`background process ${pid} exited at once`);
  return { pid, startTime };
}
