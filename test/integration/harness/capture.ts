// Packet captures with tcpdump (in the host or inside a netns), decoded by tshark.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { childEnv, inNetns, showCommand } from './exec';
import { readPcap } from './pcap';
import type { Scope } from './scope';
import { decodePcap, type Frame } from './tshark';

/** What to capture. */
export interface CaptureOptions {
  /** Capture inside this netns (name or path); default the host. */
  netns?: string;
  iface: string;
  /** A pcap filter, e.g. `arp or icmp6`; default everything. */
  filter?: string;
  /** Give up if tcpdump is not listening after this long. Default 10 s. */
  startTimeoutMs?: number;
}

/** tcpdump's own account, read from its exit message. */
export interface CaptureStats {
  captured: number;
  receivedByFilter: number;
  droppedByKernel: number;
}

/** A running capture. */
export interface Capture {
  /** The pcap file being written. */
  readonly file: string;
  /** Complete packets written so far (cheap; for waitFor). */
  count(): Promise<number>;
  /**
   * Waits `settleMs` (default 250) for frames in flight, stops tcpdump with
   * SIGINT, waits for it to exit, and decodes the file. Rejects if the kernel
   * dropped packets.
   */
  stop(opts?: { settleMs?: number }): Promise<Frame[]>;
  /** tcpdump's counts, once stopped. */
  readonly stats: CaptureStats | undefined;
}

function parseStats(stderr: string): CaptureStats | undefined {
  const n = (re: RegExp): number | undefined => {
    const m = re.exec(stderr);
    return m ? Number(m[1]) : undefined;
  };
  const captured = n(/(\d+) packets? captured/);
  const receivedByFilter = n(/(\d+) packets? received by filter/);
  const droppedByKernel = n(/(\d+) packets? dropped by kernel/);
  if (captured === undefined || receivedByFilter === undefined || droppedByKernel === undefined) return undefined;
  return { captured, receivedByFilter, droppedByKernel };
}

/**
 * Starts tcpdump (-U, immediate mode, no privilege drop) on iface and resolves
 * once it reports "listening on", i.e. once its socket and filter are in place.
 * At scope close a capture still running is stopped and its file removed (kept
 * when HARNESS_KEEP_CAPTURES=1).
 */
export async function startCapture(scope: Scope, opts: CaptureOptions): Promise<Capture> {
  const dir = await mkdtemp(join(tmpdir(), 'announcer-cap-'));
  const file = join(dir, 'capture.pcap');
  scope.defer(async () => {
    if (process.env.HARNESS_KEEP_CAPTURES === '1') console.warn(`capture kept: ${file}`);
    else await rm(dir, { recursive: true, force: true });
  }, `capture dir ${dir}`);

  const tcpdumpArgs = ['-n', '-U', '--immediate-mode', '-Z', 'root', '-i', opts.iface, '-w', file];
  if (opts.filter !== undefined) tcpdumpArgs.push(opts.filter);
  const [cmd, args] = inNetns(opts.netns, 'tcpdump', tcpdumpArgs);
  const child = spawn(cmd, args, { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s: string) => {
    stderr += s;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
    child.on('error', () => resolve({ code: null, signal: null }));
  });
  let running = true;
  void exited.then(() => {
    running = false;
  });

  const interrupt = async (): Promise<{ code: number | null; signal: NodeJS.Signals | null }> => {
    if (running) child.kill('SIGINT');
    const grace = new AbortController();
    const done = await Promise.race([
      exited,
      sleep(10_000, undefined, { signal: grace.signal }).catch(() => undefined),
    ]);
    grace.abort();
    if (done) return done;
    child.kill('SIGKILL');
    return exited;
  };
  scope.defer(async () => {
    if (running) await interrupt();
  }, `tcpdump on ${opts.iface}`);

  const what = showCommand(cmd, args);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what}: not listening after ${opts.startTimeoutMs ?? 10_000} ms; stderr: ${stderr.trim()}`));
    }, opts.startTimeoutMs ?? 10_000);
    const onData = (): void => {
      if (/listening on/.test(stderr)) {
        clearTimeout(timer);
        child.stderr.off('data', onData);
        resolve();
      }
    };
    child.stderr.on('data', onData);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${what}: ${e.message}`, { cause: e }));
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited ${code} before listening: ${stderr.trim()}`));
    });
  });

  let stats: CaptureStats | undefined;
  return {
    file,
    get stats() {
      return stats;
    },
    async count() {
      try {
        return readPcap(await readFile(file)).packets.length;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw err;
      }
    },
    async stop({ settleMs = 250 } = {}) {
      if (!running) throw new Error(`${what} is not running (exited early or already stopped): ${stderr.trim()}`);
      await sleep(settleMs);
      const { code, signal } = await interrupt();
      if (code !== 0) throw new Error(`${what} ended with ${code ?? signal}: ${stderr.trim()}`);
      stats = parseStats(stderr);
      if (stats && stats.droppedByKernel > 0) {
        throw new Error(`${what}: the kernel dropped ${stats.droppedByKernel} packets; the capture is incomplete`);
      }
      return decodePcap(file);
    },
  };
}
