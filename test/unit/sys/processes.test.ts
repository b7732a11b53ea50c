import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import { processStartTime } from '../../../src/sys/processes';

/** Above the largest pid_max (2^22): no process can have it. */
const NO_SUCH_PID = 2 ** 22 + 12345;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Runs fn with the pid of `command 30`, killed afterwards. */
async function withChild(command: string, fn: (pid: number) => Promise<void>): Promise<void> {
  const child = spawn(command, ['30'], { stdio: 'ignore' });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    await fn(child.pid!);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
  }
}

describe('processStartTime', () => {
  it('is a string of digits for this process', () => {
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
  });

  it('is undefined for a pid that does not exist', () => {
    expect(processStartTime(NO_SUCH_PID)).toBeUndefined();
  });

  it('reads field 22 even when the command name holds spaces and parentheses', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'announcer-proc-'));
    try {
      const odd = join(dir, 'a) b (c');
      copyFileSync('/bin/sleep', odd);
      chmodSync(odd, 0o755);
      const mine = Number(processStartTime(process.pid));
      await withChild(odd, async (pid) => {
        const start = processStartTime(pid);
        expect(start).toMatch(/^\d+$/);
        // Started after this process; a split on the first ')' would read num_threads ("1") instead.
        expect(Number(start)).toBeGreaterThanOrEqual(mine);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('never a pid that is not one process', () => {
  it('processStartTime does not read /proc for a pid outside 2 to 2^22, or not an integer (init, 1, included)', () => {
    for (const bad of [-1, 0, 1, -4242, 2 ** 22 + 1, 1.5, Number.NaN, Infinity]) {
      expect(processStartTime(bad), `${bad}`).toBeUndefined();
    }
  });
});
