// Process identity through /proc. A pid alone can be recycled; a pid plus its
// start time (field 22 of /proc/PID/stat) cannot. Nothing here signals a process
// (the plugin's one signal: SIGKILL to a hung announcer, src/shim/replace-hung.ts).
import { readFileSync } from 'node:fs';
import { attempt } from './sys-error';

/** Linux's largest pid_max (PID_MAX_LIMIT, 2^22): no pid is above it. */
const PID_MAX_LIMIT = 4_194_304;

/**
 * The start time of `pid` if it is alive (not a zombie), else undefined; undefined too for a pid that cannot name a
 * process of ours (/proc is not read): not an integer from 2 (1 is init) to PID_MAX_LIMIT.
 */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isInteger(pid) || pid < 2 || pid > PID_MAX_LIMIT) return undefined;
  const stat = attempt(() => readFileSync(`/proc/${pid}/stat`, 'latin1'));
  if (stat === undefined) return undefined; // gone
  // comm (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  const start = fields[19]; // field 22 overall; fields[] starts at field 3
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}
