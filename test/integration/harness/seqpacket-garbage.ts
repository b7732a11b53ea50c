// Garbage for the background announcer's control socket, sent by
// seqpacket-garbage.py (node:net cannot connect to SOCK_SEQPACKET): random
// bytes, a 1 MiB message, invalid requests, then idle connections held open
// until the test lets go of them.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childEnv } from './exec';
import type { Scope } from './scope';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'seqpacket-garbage.py');

/** One step the script reports: the replies it got (null: the peer closed without one), or how many connections it holds. */
export interface GarbageStep {
  step: 'random' | 'huge' | 'invalid' | 'held' | 'closed';
  replies?: (string | null)[];
  bytes?: number;
  connections?: number;
}

/** A running garbage client. */
export interface GarbageClient {
  /** Resolves with the next step the script reports; rejects if it exits first. */
  next(): Promise<GarbageStep>;
  /** Lets go of the idle connections; resolves with the 'closed' step. */
  release(): Promise<GarbageStep>;
}

/** Starts the garbage client on `socket`, holding `idle` connections at the end; killed at scope close if still running. */
export function startGarbageClient(scope: Scope, socket: string, idle: number): GarbageClient {
  const child = spawn('python3', [SCRIPT, socket, String(idle)], { env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on('close', () => resolve()));
  void exit.then(() => (exited = true));
  scope.defer(async () => {
    if (!exited) child.kill('SIGKILL');
    await exit;
  }, `garbage client ${child.pid}`);

  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<GarbageStep> => {
    const line = await Promise.race([lines.next(), exit.then(() => ({ done: true, value: undefined }))]);
    if (line.done || line.value === undefined) throw new Error(`garbage client exited: ${stderr.trim()}`);
    return JSON.parse(line.value) as GarbageStep;
  };
  return {
    next,
    release() {
      child.stdin.write('close\n');
      return next();
    },
  };
}
