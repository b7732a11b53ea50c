// A private pid namespace per test, for plugin calls that could signal
// processes: there, kill(-1) reaches only the namespace's own processes and
// kill(1) its init, never the node's. Its init and a sentinel process trap
// signals and write what they got to a marker file; strace can record every
// signal a call sends. Killing the init at scope close ends everything inside.
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ANNOUNCER_RUNTIME, cniEnv, RUN_TAG_ENV, runCniCommand, type CniCall, type CniOutput } from './cni';
import { stopDaemonsOf } from './daemon-stop';
import { childEnv } from './exec';
import { RUN_TAG } from './names';
import { ownAnnouncerProcessesNow } from './processes';
import type { Scope } from './scope';
import { waitFor } from './wait';
import { tempDir } from './announcer-files';

/** The syscalls that send a signal to another process. */
const SIGNAL_SYSCALLS = 'kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo';

/** One signal-sending syscall a traced call made, as strace printed it. */
export interface SignalSyscall {
  syscall: string;
  /** The first argument: the pid (or pidfd) it targeted. */
  target: number;
  line: string;
}

/** A private pid namespace holding a signal-trapping init and sentinel. */
export interface PidNamespace {
  /** The host pid of the namespace's init. */
  readonly initPid: number;
  /** What the init and the sentinel received so far (`init:TERM`, `sentinel:HUP`…), and `sentinel:gone` if it died. */
  signalsSeen(): Promise<string[]>;
  /**
   * Runs a plugin like cniExec, inside the namespace (and its mount namespace,
   * a slave of the host's, so new netns mounts show), in a session of its own
   * (setsid), so that even kill(0) cannot reach the test's process group.
   * With `trace`, strace -f records every signal it (and any child) sends,
   * returned as `signals`. Never throws on a plugin error.
   */
  cniExec(
    pluginPath: string,
    call: CniCall,
    config: object | string,
    opts?: { trace?: boolean },
  ): Promise<CniOutput & { signals?: SignalSyscall[] }>;
  /**
   * Stops any announcer of stateDir (ours), then runs `announcer daemon
   * <stateDir>` inside the namespace under strace -f, tagged with RUN_TAG, and
   * resolves once it listens: commands then go to it, and its whole life is
   * traced (a shim under strace -f that starts an announcer would return only
   * once that announcer exits, idleExitMs later). stop() SIGTERMs it and
   * resolves with every signal syscall it made; it rejects if the traced
   * announcer had exited before.
   */
  traceAnnouncer(pluginPath: string, stateDir: string): Promise<TracedAnnouncer>;
}

/** An announcer running under strace in a pid namespace. */
export interface TracedAnnouncer {
  /** Its host pid. */
  readonly pid: number;
  stop(): Promise<SignalSyscall[]>;
}

/** Parses strace -f output into the signal syscalls it shows. */
export function parseSignalTrace(text: string): SignalSyscall[] {
  return text
    .split('\n')
    .map((line) => ({
      line,
      m: /^(?:\d+\s+)?(kill|tkill|tgkill|pidfd_send_signal|rt_sigqueueinfo|rt_tgsigqueueinfo)\((-?\d+)/.exec(line),
    }))
    .filter((x) => x.m !== null)
    .map(({ line, m }) => ({ syscall: m![1]!, target: Number(m![2]), line }));
}

/** The sentinel's traps: each signal it gets is appended to the file named by its $0. */
const SENTINEL_TRAPS = 'for s in TERM HUP INT USR1 USR2 QUIT; do trap "echo sentinel:$s >> \\"$0\\"" $s; done';
const INIT_SCRIPT = `
M="$1"
for s in TERM HUP INT USR1 USR2 QUIT; do trap "echo init:$s >> \\"$M\\"" $s; done
sh -c '${SENTINEL_TRAPS}; while :; do sleep 1 & wait $!; done' "$M" &
echo "sentinel $!" > "$M.ready"
while :; do sleep 1 & wait $!; done
`;

async function childrenOf(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text
    .split(/\s+/)
    .filter((s) => s !== '')
    .map(Number);
}

async function isAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  return stat !== '' && !/^\d+ \(.*\) [ZX]/s.test(stat);
}

/**
 * Creates the namespace (`unshare --pid --fork --mount-proc --propagation
 * slave`), waits until its sentinel runs, and kills its init (so everything
 * inside) at scope close.
 */
export async function createPidNamespace(scope: Scope): Promise<PidNamespace> {
  const dir = await tempDir(scope, 'announcer-pidns-');
  const marker = join(dir, 'signals');
  const unshare = spawn(
    'unshare',
    ['--pid', '--fork', '--mount-proc', '--propagation', 'slave', 'setsid', 'sh', '-c', INIT_SCRIPT, 'init', marker],
    { env: childEnv(), stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => {
    unshare.on('close', () => resolve());
    unshare.on('error', () => resolve());
  });
  scope.defer(async () => {
    for (const pid of await childrenOf(unshare.pid!)) {
      try {
        process.kill(pid, 'SIGKILL'); // the namespace's init: every process inside goes with it
      } catch {
        // Already gone.
      }
    }
    unshare.kill('SIGKILL');
    await exited;
  }, 'pid namespace');
  const initPid = await waitFor(async () => (await childrenOf(unshare.pid!))[0], { what: 'the pid namespace init' });
  await waitFor(() => readFile(`${marker}.ready`, 'utf8').catch(() => undefined), {
    what: 'the pid namespace sentinel',
  });
  const sentinel = await waitFor(
    async () => {
      for (const pid of await childrenOf(initPid)) {
        if ((await readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '')).includes('sentinel:')) return pid;
      }
      return undefined;
    },
    { what: 'the sentinel host pid' },
  );
  let traces = 0;
  return {
    initPid,
    async signalsSeen() {
      const lines = (await readFile(marker, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
      return (await isAlive(sentinel)) ? lines : [...lines, 'sentinel:gone'];
    },
    async cniExec(pluginPath, call, config, opts = {}) {
      const traceFile = join(dir, `trace-${traces++}`);
      const inner = opts.trace
        ? ['strace', '-f', '-qq', '-o', traceFile, '-e', `trace=${SIGNAL_SYSCALLS}`, pluginPath]
        : [pluginPath];
      const args = ['--target', String(initPid), '--pid', '--mount', '--', 'setsid', '--wait', ...inner];
      const out: CniOutput & { signals?: SignalSyscall[] } = await runCniCommand(
        'nsenter',
        args,
        call,
        config,
        cniEnv(call),
      );
      if (opts.trace) out.signals = parseSignalTrace(await readFile(traceFile, 'utf8'));
      return out;
    },
    async traceAnnouncer(pluginPath, stateDir) {
      await stopDaemonsOf(stateDir);
      await mkdir(stateDir, { recursive: true, mode: 0o700 });
      // A killed announcer's socket stays until the next one replaces it: gone, it cannot be taken for this one's.
      await rm(join(stateDir, 'announcer.sock'), { force: true });
      const traceFile = join(dir, `trace-${traces++}`);
      const strace = ['strace', '-f', '-qq', '-o', traceFile, '-e', `trace=${SIGNAL_SYSCALLS}`];
      strace.push(pluginPath, 'daemon', stateDir);
      const child = spawn(
        'nsenter',
        ['--target', String(initPid), '--pid', '--mount', '--', 'setsid', '--wait', ...strace],
        {
          env: { ...childEnv(), ...ANNOUNCER_RUNTIME, [RUN_TAG_ENV]: RUN_TAG },
          stdio: 'ignore',
        },
      );
      const ended = new Promise<void>((resolve) => {
        child.on('close', () => resolve());
        child.on('error', () => resolve());
      });
      let done = false;
      void ended.then(() => (done = true));
      scope.defer(async () => {
        // It may not have been exec'd yet when the test failed: stop it once it shows, within bounds.
        for (let i = 0; !done && i < 100; i++) {
          await stopDaemonsOf(stateDir);
          await Promise.race([ended, sleep(100)]);
        }
        if (!done) throw new Error(`the traced announcer of ${stateDir} did not end`);
      }, `traced announcer of ${stateDir}`);
      const daemon = await waitFor(
        async () => {
          const listening = (await stat(join(stateDir, 'announcer.sock')).catch(() => undefined))?.isSocket();
          return listening && (await ownAnnouncerProcessesNow()).find((p) => p.daemonStateDir === stateDir);
        },
        { what: `the traced announcer of ${stateDir} to listen` },
      );
      return {
        pid: daemon.pid,
        async stop() {
          const stopped = await stopDaemonsOf(stateDir);
          await ended;
          if (!stopped.includes(daemon.pid))
            throw new Error(`the traced announcer ${daemon.pid} of ${stateDir} had exited before stop()`);
          return parseSignalTrace(await readFile(traceFile, 'utf8'));
        },
      };
    },
  };
}
