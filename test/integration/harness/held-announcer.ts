// The node's announcer held, swapped and counted from outside, for the thin
// client's promises (issue 18): SIGSTOP and SIGCONT of the announcer of a
// stateDir (only after checking the pid is `announcer daemon <stateDir>` of
// our RUN_TAG), the build a running announcer was started from, a CNI call
// traced by strace (its setns(2) shows the command ran in-process), and the
// announcers of a stateDir sampled while work runs.
import { spawn } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AnnouncerCommand } from './announcer';
import { ANNOUNCER } from './cni';
import { daemonsOf, theDaemonOf } from './daemon';
import { signalDaemon } from './processes';

export { terminateDaemon, theDaemonOf } from './daemon';
export { signalDaemon } from './processes';
import { childEnv, runOk } from './exec';
import type { Scope } from './scope';
import { waitFor } from './wait';
import { tempDir } from './announcer-files';

/** A process's state letter from /proc/PID/stat (R, S, T for stopped, Z...); undefined once gone. */
export async function processState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  return stat === undefined ? undefined : /^\d+ \(.*\) (\S)/s.exec(stat)?.[1];
}

/** An announcer held by SIGSTOP: resume() sends SIGCONT (the scope does at close, if the test did not). */
export interface StoppedDaemon {
  pid: number;
  resume(): Promise<void>;
}

/** SIGSTOPs the one announcer of stateDir and waits until the kernel shows it stopped; SIGCONT at scope close. */
export async function stopDaemon(scope: Scope, stateDir: string): Promise<StoppedDaemon> {
  const pid = await theDaemonOf(stateDir);
  let stopped = false;
  const resume = async (): Promise<void> => {
    if (stopped && (await signalDaemon(pid, stateDir, 'SIGCONT'))) stopped = false;
  };
  scope.defer(resume, `SIGCONT announcer ${pid}`);
  if (!(await signalDaemon(pid, stateDir, 'SIGSTOP')))
    throw new Error(`pid ${pid} is no longer the announcer of ${stateDir}`);
  stopped = true;
  await waitFor(async () => (await processState(pid)) === 'T', { what: `announcer ${pid} stopped` });
  return { pid, resume };
}

/** The build id a binary prints (`--version`: `Build: <id>`). */
export async function buildOf(binary: string): Promise<string> {
  const { stdout } = await runOk(binary, ['--version']);
  const id = /^Build: (\S+)$/m.exec(stdout)?.[1];
  if (id === undefined) throw new Error(`${binary} --version printed no build: ${stdout}`);
  return id;
}

/**
 * The build a running process was started from: its executable (/proc/PID/exe, even once replaced on disk) asked for
 * --version.
 */
export async function runningBuild(pid: number): Promise<string> {
  return buildOf(`/proc/${pid}/exe`);
}

/** Builds the announcer from the same sources with another build id into `out` (scripts/build.mjs, ~1 s). */
export async function buildAnnouncerAs(out: string, buildId: string): Promise<void> {
  const bun = new URL('../../../node_modules/.bin/bun', import.meta.url).pathname;
  const script = new URL('../../../scripts/build.mjs', import.meta.url).pathname;
  await runOk('nice', ['-n', '10', bun, script, '--arch=x64', `--out=${out}`, `--build-id=${buildId}`], {
    timeoutMs: 120_000,
  });
}

/**
 * How to run the announcer under `strace -f` writing setns(2), flock(2) and connect(2)
 * calls to `traceFile`: the shim makes neither of the first two, the in-process command
 * enters the pod's netns and takes the attachment's lock; connect(2) shows how often the shim tried the socket.
 */
export function tracedAnnouncer(traceFile: string, binary: string = ANNOUNCER): AnnouncerCommand {
  // --detach-on=execve: an announcer the call starts is not traced, and strace does not wait for it.
  return {
    argv: ['strace', '-f', '--detach-on=execve', '-qq', '-e', 'trace=setns,flock,connect', '-o', traceFile, binary],
  };
}

/** The syscall lines of a trace (tracedAnnouncer, traceRunning) naming `syscall`. */
export async function tracedCalls(traceFile: string, syscall: 'setns' | 'flock' | 'connect'): Promise<string[]> {
  const text = await readFile(traceFile, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => new RegExp(`^(\\d+\\s+)?${syscall}\\(`).test(l));
}

/** A path for strace's output in a temp dir of its own, removed at scope close. */
export async function traceFile(scope: Scope): Promise<string> {
  const dir = await tempDir(scope, 'announcer-trace-');
  return join(dir, 'strace.out');
}

/** The pids holding a flock(2) on `file` (from /proc/locks, by inode); none when the file is gone. */
export async function flockHolders(file: string): Promise<number[]> {
  const ino = await stat(file).then(
    (st) => st.ino,
    () => undefined,
  );
  if (ino === undefined) return [];
  const locks = await readFile('/proc/locks', 'latin1');
  // `1: FLOCK  ADVISORY  WRITE 4242 fd:00:123456 0 EOF`
  return locks
    .split('\n')
    .map((l) => /^\d+: FLOCK\s+\S+\s+\S+\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[2]) === ino)
    .map((m) => Number(m[1]));
}

/** The pid of the process tracing pid (TracerPid in /proc/PID/status); 0 when none, undefined once gone. */
async function tracerOf(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'latin1').catch(() => undefined);
  const m = status === undefined ? null : /^TracerPid:\s+(\d+)$/m.exec(status);
  return m ? Number(m[1]) : undefined;
}

/**
 * Attaches `strace -p pid` (a process of ours: the caller checked it) writing
 * `syscalls` to traceFile; resolves once attached. detach() (and scope close)
 * stops strace, which lets the process go on untraced.
 */
export async function traceRunning(
  scope: Scope,
  pid: number,
  syscalls: readonly string[],
  traceFile: string,
): Promise<{ detach(): Promise<void> }> {
  const child = spawn('strace', ['-qq', '-e', `trace=${syscalls.join(',')}`, '-o', traceFile, '-p', String(pid)], {
    env: childEnv(),
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const detach = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };
  scope.defer(detach, `strace -p ${pid}`);
  await waitFor(async () => (await tracerOf(pid)) === child.pid, { what: `strace to attach to ${pid}` });
  return { detach };
}

/** A running sample of the announcers of a stateDir: stop() ends it and resolves with every pid seen. */
export interface DaemonSampler {
  stop(): Promise<Set<number>>;
}

/** Samples /proc for `announcer daemon <stateDir>` of our RUN_TAG, one scan after another, until stop(). */
export function sampleDaemons(stateDir: string): DaemonSampler {
  const seen = new Set<number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const p of await daemonsOf(stateDir)) seen.add(p.pid);
      await sleep(5);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      for (const p of await daemonsOf(stateDir)) seen.add(p.pid);
      return seen;
    },
  };
}
