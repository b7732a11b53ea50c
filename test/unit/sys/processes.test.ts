import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it, expect, vi } from 'vitest';
import { isSameProcess, isSignallablePid, processStartTime, signalProcess, type ProcessId } from '../../../src/sys/processes';

/** Above the largest pid_max (2^22): no process can have it. */
const NO_SUCH_PID = 2 ** 22 + 12345;

function exited(child: ChildProcess): Promise<NodeJS.Signals | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
}

async function withChild(command: string, fn: (child: ChildProcess, pid: number) => Promise<void>): Promise<void> {
  const child = spawn(command, ['30'], { stdio: 'ignore' });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    await fn(child, child.pid!);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
  }
}

const alive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

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
      await withChild(odd, async (_child, pid) => {
        const start = processStartTime(pid);
        expect(start).toMatch(/^\d+$/);
        // Started after this process; a split on the first ')' would read num_threads ("1") instead.
        expect(Number(start)).toBeGreaterThanOrEqual(mine);
        expect(isSameProcess({ pid, startTime: start! })).toBe(true);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('isSameProcess', () => {
  it('is true for the recorded pid and start time', () => {
    expect(isSameProcess({ pid: process.pid, startTime: processStartTime(process.pid)! })).toBe(true);
  });

  it('is false for a wrong start time or a dead pid', () => {
    const start = processStartTime(process.pid)!;
    expect(isSameProcess({ pid: process.pid, startTime: String(Number(start) + 1) })).toBe(false);
    expect(isSameProcess({ pid: NO_SUCH_PID, startTime: start })).toBe(false);
  });
});

describe('signalProcess', () => {
  it('does not signal a process whose start time does not match', async () => {
    await withChild('sleep', async (child, pid) => {
      const start = processStartTime(pid)!;
      expect(signalProcess({ pid, startTime: String(Number(start) + 1) }, 'SIGTERM')).toBe(false);
      expect(processStartTime(pid)).toBe(start);
      expect(alive(child)).toBe(true);
    });
  });

  it('signals the process when pid and start time match', async () => {
    await withChild('sleep', async (child, pid) => {
      expect(signalProcess({ pid, startTime: processStartTime(pid)! }, 'SIGTERM')).toBe(true);
      expect(await exited(child)).toBe('SIGTERM');
    });
  });

  it('returns false for a process that is gone', async () => {
    let recorded: { pid: number; startTime: string } | undefined;
    await withChild('sleep', async (child, pid) => {
      recorded = { pid, startTime: processStartTime(pid)! };
      child.kill('SIGKILL');
      await exited(child);
    });
    expect(signalProcess(recorded!, 'SIGTERM')).toBe(false);
  });
});

describe('never a pid that is not one process', () => {
  afterEach(() => vi.restoreAllMocks());

  it('isSignallablePid accepts 2 to 2^22 integers only', () => {
    for (const ok of [2, 4242, 2 ** 22]) expect(isSignallablePid(ok)).toBe(true);
    for (const bad of [-1, 0, 1, -4242, 2 ** 22 + 1, 1.5, Number.NaN, Infinity, '4242', null, undefined]) {
      expect(isSignallablePid(bad)).toBe(false);
    }
  });

  it('signalProcess never reaches kill for pid -1, 0, 1, a fraction, this process, or a missing or odd start time', () => {
    // A spy that would throw: even a regression could not signal anything from this test.
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => {
      throw new Error('kill must not be called');
    });
    const mine = processStartTime(process.pid)!;
    const records = [
      { pid: -1, startTime: mine },
      { pid: 0, startTime: mine },
      { pid: 1, startTime: processStartTime(1) ?? '1' },
      { pid: 2.5, startTime: mine },
      { pid: process.pid, startTime: mine },
      { pid: process.ppid },
      { pid: process.ppid, startTime: undefined },
      { pid: process.ppid, startTime: '' },
      { pid: process.ppid, startTime: ` ${processStartTime(process.ppid)}` },
    ] as unknown as ProcessId[];
    for (const r of records) {
      expect(signalProcess(r, 'SIGTERM'), JSON.stringify(r)).toBe(false);
      expect(isSameProcess(r), JSON.stringify(r)).toBe(r.pid === process.pid);
    }
    expect(kill).not.toHaveBeenCalled();
  });

  it('processStartTime does not read /proc for an invalid pid', () => {
    expect(processStartTime(-1)).toBeUndefined();
    expect(processStartTime(0)).toBeUndefined();
    expect(processStartTime(1.5)).toBeUndefined();
  });
});
