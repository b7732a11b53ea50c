import { describe, expect, it } from 'vitest';
import { jobLogInView, loggerInView, refusing, viewOfCaller } from '../../../src/daemon/caller-host';
import { CniError } from '../../../src/cni/errors';
import type { CniPlugin } from '../../../src/cni/dispatch';
import { CallerViewError, type CallerView } from '../../../src/sys/caller-view';
import type { CallerViews } from '../../../src/sys/caller-views';
import { createLogger } from '../../../src/log';
import { identityView } from '../../support/caller-view-fakes';

const other: CallerView = {
  caller: { mnt: { dev: 9, ino: 9 }, net: { dev: 9, ino: 9 } },
  path: (p) => `/proc/self/fd/5${p}`,
};
const views = (ofPeer: (pid: number) => CallerView) => ({ mine: identityView, ofPeer }) as unknown as CallerViews;

describe('viewOfCaller', () => {
  it('is the announcer’s own without a caller, the peer’s while it still waits', () => {
    expect(
      viewOfCaller(
        views(() => other),
        undefined,
      ),
    ).toBe(identityView);
    expect(
      viewOfCaller(
        views(() => other),
        { pid: 42, connected: () => true },
      ),
    ).toBe(other);
  });

  it('is an error once the caller left (its pid may be another process by now), or when the view cannot be had', () => {
    const gone = viewOfCaller(
      views(() => other),
      { pid: 42, connected: () => false },
    );
    expect(gone).toBeInstanceOf(CallerViewError);
    expect((gone as Error).message).toMatch(/pid 42\) left before its view/);
    const zero = viewOfCaller(
      views(() => {
        throw new CallerViewError('pid 0');
      }),
      { pid: 0, connected: () => true },
    );
    expect((zero as Error).message).toBe('pid 0');
  });
});

describe('refusing', () => {
  it('fails ADD and CHECK with code 100 naming why; DEL, GC and STATUS still run', async () => {
    const ran: string[] = [];
    const plugin = Object.fromEntries(
      ['add', 'del', 'check', 'status', 'gc'].map((verb) => [verb, async () => void ran.push(verb)]),
    ) as unknown as CniPlugin;
    const refused = refusing(plugin, new CallerViewError('not visible'));
    const req = {} as never;
    await expect(refused.add(req)).rejects.toSatisfy((e) => e instanceof CniError && e.code === 100);
    await expect(refused.check(req)).rejects.toThrow('not visible');
    await refused.del(req);
    await refused.gc(req);
    await refused.status(req);
    expect(ran).toEqual(['del', 'gc', 'status']);
  });
});

describe('loggerInView', () => {
  it('hands the logger the log file as the caller sees it, its last component not followed', () => {
    const asked: (string | undefined)[] = [];
    const seen: CallerView = {
      caller: { mnt: { dev: 1, ino: 1 }, net: { dev: 1, ino: 1 } },
      path: (p, opts) => (opts?.followLast === false ? `/caller${p}` : '/followed'),
    };
    const log = loggerInView((config) => (asked.push(config.logFile), createLogger(() => {}, 'error')), seen);
    log({ logFile: '/var/log/a.log', logLevel: 'info' } as never, {});
    log({ logLevel: 'info' } as never, {});
    expect(asked).toEqual(['/caller/var/log/a.log', undefined]);
  });
});

describe('jobLogInView', () => {
  it("hands the job's logger its log file as the job's caller saw it, else as the announcer sees it", () => {
    const asked: (string | undefined)[] = [];
    const held: CallerView = { ...other, path: (p, opts) => `/held${p}${opts?.followLast === false ? '' : '!'}` };
    const jobLog = jobLogInView((job) => (asked.push(job.logFile), createLogger(() => {}, 'error')), {
      mine: identityView,
      forRecorded: (caller) => (caller === undefined ? undefined : held),
    });
    const job = { logFile: '/var/log/a.log', caller: other.caller } as never;
    jobLog(job);
    jobLog({ logFile: '/var/log/a.log' } as never);
    jobLog({} as never);
    expect(asked).toEqual(['/held/var/log/a.log', '/var/log/a.log', undefined]);
  });
});
