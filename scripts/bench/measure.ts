// How one command is run and measured: in a clean environment (PATH and the
// CNI_* variables only, as a runtime's service unit starts plugins), wall time
// around a synchronous spawn, and peak RSS through GNU time in separate runs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

/** A command line with its stdin and its whole environment. */
export interface Command {
  file: string;
  args: readonly string[];
  env: Record<string, string>;
  stdin?: string;
}

/** What a measured run left. */
export interface Timed {
  ms: number;
  code: number;
  stdout: string;
  stderr: string;
}

/** The CNI_* variables of one plugin call. */
export interface CniVars {
  command: string;
  containerId?: string;
  netns?: string;
  ifname?: string;
  path?: string;
}

const SERVICE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** GNU time, from Debian's `time` package (scripts/ensure-system-deps.sh). */
export const GNU_TIME = '/usr/bin/time';
const TIMEOUT_MS = 30_000;

/**
 * PATH as a service unit has it, plus the directory of the node running this
 * script when that is elsewhere (a `#!/usr/bin/env node` plugin must find it).
 */
export function cleanPath(nodeDir = dirname(process.execPath)): string {
  return SERVICE_PATH.split(delimiter).includes(nodeDir) ? SERVICE_PATH : `${SERVICE_PATH}${delimiter}${nodeDir}`;
}

/** The whole environment of a measured command: PATH, and CNI_* when given. Nothing inherited. */
export function cleanEnv(cni?: CniVars): Record<string, string> {
  const env: Record<string, string> = { PATH: cleanPath() };
  if (cni === undefined) return env;
  env.CNI_COMMAND = cni.command;
  if (cni.containerId !== undefined) env.CNI_CONTAINERID = cni.containerId;
  if (cni.netns !== undefined) env.CNI_NETNS = cni.netns;
  if (cni.ifname !== undefined) env.CNI_IFNAME = cni.ifname;
  if (cni.path !== undefined) env.CNI_PATH = cni.path;
  return env;
}

/** Runs cmd to the end and measures its wall time (spawn to reaped exit). Throws only if it cannot start. */
export function timedRun(cmd: Command): Timed {
  const t0 = process.hrtime.bigint();
  const res = spawnSync(cmd.file, cmd.args, {
    env: cmd.env,
    input: cmd.stdin ?? '',
    encoding: 'utf8',
    timeout: TIMEOUT_MS,
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.error) throw new Error(`cannot run ${cmd.file}: ${res.error.message}`, { cause: res.error });
  return { ms, code: res.status ?? 128, stdout: res.stdout, stderr: res.stderr };
}

/** Throws with the command's output unless it exited 0; returns it otherwise. */
export function expectOk(what: string, res: Timed): Timed {
  if (res.code !== 0) {
    throw new Error(
      `${what} exited ${res.code}: ${(res.stdout.trim() || res.stderr.trim() || '(no output)').slice(0, 2000)}`,
    );
  }
  return res;
}

/**
 * The peak RSS (KiB) of cmd's own process: GNU time's %M, the ru_maxrss that
 * wait4 reports. Processes it leaves running in the background are not in it.
 */
export function peakRssKiB(cmd: Command): number {
  const dir = mkdtempSync(join(tmpdir(), 'cni-bench-rss-'));
  try {
    const out = join(dir, 'rss');
    const res = spawnSync(GNU_TIME, ['-f', '%M', '-o', out, cmd.file, ...cmd.args], {
      env: cmd.env,
      input: cmd.stdin ?? '',
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    });
    if (res.error) throw new Error(`cannot run ${GNU_TIME}: ${res.error.message}`, { cause: res.error });
    expectOk(`${cmd.file} (under ${GNU_TIME})`, {
      ms: 0,
      code: res.status ?? 128,
      stdout: res.stdout,
      stderr: res.stderr,
    });
    // On a non-zero exit GNU time writes a "Command exited with…" line first; the figure is last.
    const kib = Number(readFileSync(out, 'utf8').trim().split('\n').at(-1));
    if (!Number.isFinite(kib)) throw new Error(`${GNU_TIME} wrote no RSS figure for ${cmd.file}`);
    return kib;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
