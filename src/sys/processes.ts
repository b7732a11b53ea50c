// Background process identity and signalling through /proc. A pid alone can
// be recycled; a pid plus its start time (field 22 of /proc/PID/stat) cannot.
import { readFileSync } from 'node:fs';

/** A process as recorded in the state dir. */
export interface ProcessId {
  pid: number;
  /** Start time in clock ticks since boot, from /proc/PID/stat. */
  startTime: string;
}

/** The start time of `pid` if it is alive (not a zombie), else undefined. */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // comm (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  return fields[19]; // field 22 overall; fields[] starts at field 3
}

/** True when the recorded process is still the same live process. */
export function isSameProcess(p: ProcessId): boolean {
  return processStartTime(p.pid) === p.startTime;
}

/** Sends `signal` to the recorded process only if it is still the same process. */
export function signalProcess(p: ProcessId, signal: NodeJS.Signals): boolean {
  if (!isSameProcess(p)) return false;
  try {
    process.kill(p.pid, signal);
    return true;
  } catch {
    return false;
  }
}
