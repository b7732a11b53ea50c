// Runs programs without a shell: argv arrays only, optionally inside a netns.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { RUN_TAG_PATH_ENTRY } from './names';

/** How run() starts a program. */
export interface RunOptions {
  /** Written to the program's stdin, which is then closed. */
  stdin?: string;
  /** Added to (or, with inheritEnv: false, used instead of) this process's env. */
  env?: Record<string, string>;
  /** Start with an empty environment plus `env` (PATH is still provided). Default true. */
  inheritEnv?: boolean;
  /** A netns name (run through `ip netns exec`) or a path (through `nsenter --net=`). */
  netns?: string;
  /** Kill the program (SIGKILL) and reject after this long. Default 30 s. */
  timeoutMs?: number;
}

/** What a finished program left: its exit code (128+n when killed by signal n) and output. */
export interface RunResult {
  code: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const SBIN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const DEFAULT_TIMEOUT_MS = 30_000;

/** The argv that runs cmd inside netns (a name or a path), or cmd itself without one. */
export function inNetns(netns: string | undefined, cmd: string, args: readonly string[]): [string, string[]] {
  if (netns === undefined) return [cmd, [...args]];
  if (netns.startsWith('/')) return ['nsenter', [`--net=${netns}`, '--', cmd, ...args]];
  return ['ip', ['netns', 'exec', netns, cmd, ...args]];
}

/**
 * The env for a child: PATH always reaches the sbin directories where ip, sysctl and tcpdump live, and ends in
 * RUN_TAG_PATH_ENTRY.
 */
export function childEnv(env: Record<string, string> = {}, inherit = true): Record<string, string> {
  const base: Record<string, string> = {};
  if (inherit) {
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) base[k] = v;
  }
  const merged = { ...base, ...env };
  merged.PATH = [merged.PATH, SBIN_PATH, RUN_TAG_PATH_ENTRY].filter(Boolean).join(':');
  return merged;
}

/** Renders an argv for messages (never for a shell). */
export function showCommand(cmd: string, args: readonly string[]): string {
  return [cmd, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

/**
 * Runs cmd and resolves with its exit status and output, whatever the status.
 * Rejects only when the program cannot start or outlives the timeout.
 */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [file, argv] = inNetns(opts.netns, cmd, args);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, {
      env: childEnv(opts.env, opts.inheritEnv ?? true),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${showCommand(file, argv)}: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (timedOut) {
        reject(new Error(`${showCommand(file, argv)} still ran after ${timeoutMs} ms; stderr: ${stderr.trim()}`));
        return;
      }
      const status = code ?? 128 + (signal ? constants.signals[signal] : 0);
      resolve({ code: status, signal, stdout, stderr });
    });
    // A program that never reads its stdin closes the pipe early: not our error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin ?? '');
  });
}

/** Like run, but rejects with the command line and its stderr unless it exits 0. */
export async function runOk(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const res = await run(cmd, args, opts);
  if (res.code !== 0) {
    const [file, argv] = inNetns(opts.netns, cmd, args);
    const detail = (res.stderr.trim() || res.stdout.trim() || '(no output)').slice(0, 2000);
    throw new Error(`${showCommand(file, argv)} exited ${res.code}: ${detail}`);
  }
  return res;
}
