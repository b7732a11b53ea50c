import { describe, expect, it } from 'vitest';
import { install, parseInstallArgs, type InstallDeps } from '../../../src/commands/install';
import type { DirProblem, InstallOutcome } from '../../../src/sys/safe-file';

describe('parseInstallArgs', () => {
  it('takes --dest DIR, --dest=DIR and --also-notices in any order', () => {
    const seen = parseInstallArgs(['--dest', '/host/opt/cni/bin']);
    expect(seen).toEqual({ ok: true, args: { dest: '/host/opt/cni/bin', alsoNotices: false, settings: {} } });
    const found = parseInstallArgs(['--also-notices', '--dest=/d']);
    expect(found).toEqual({ ok: true, args: { dest: '/d', alsoNotices: true, settings: {} } });
  });

  it('takes --state-dir and the node settings flags, checked as the daemon checks them', () => {
    expect(
      parseInstallArgs(['--dest=/d', '--state-dir', '/run/x', '--idle-exit-ms=60000', '--rate-limit', '10/10']),
    ).toEqual({
      ok: true,
      args: {
        dest: '/d',
        alsoNotices: false,
        stateDir: '/run/x',
        settings: { idleExitMs: 60000, rateLimit: { framesPerSecond: 10, burst: 10 } },
      },
    });
  });

  it.each([
    [[], '--dest is required'],
    [['--dest'], '--dest needs a value'],
    [['--dest='], '--dest needs a value'],
    [['--dest', '/a', '--dest', '/b'], '--dest given twice'],
    [['--dest', '/a', '-f'], 'unknown argument "-f"'],
    [['/a'], 'unknown argument "/a"'],
    [['--dest=/d', '--idle-exit-ms=600'], 'node settings need --state-dir'],
    [['--dest=/d', '--state-dir=/run/x', '--idle-exit-ms=99'], '--idle-exit-ms must be an integer from 100'],
    [['--dest=/d', '--state-dir=run'], '--state-dir must be an absolute path (got "run")'],
    [['--dest=/d', '--state-dir'], '--state-dir needs a value'],
    [['--dest=/d', '--state-dir=/run/x', '--count=3'], 'unknown argument "--count=3"'],
  ])('refuses %j: %s', (argv, problem) => {
    const parsed = parseInstallArgs(argv);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.problem.startsWith(problem)).toBe(true);
      expect(parsed.problem).toContain('usage: announcer install --dest DIR [--also-notices] [--state-dir DIR');
    }
  });
});

/** A fake file system: which dirs exist, what installFile answers, and every call and line. */
function fakeDeps(
  opts: { problem?: DirProblem; outcome?: InstallOutcome; fail?: Error; stale?: Record<string, string[]> } = {},
) {
  const calls: unknown[][] = [];
  const sweeps: unknown[][] = [];
  const out: string[] = [];
  const err: string[] = [];
  const settings: { stateDir: string; text: string }[] = [];
  const deps: InstallDeps = {
    self: '/usr/local/bin/announcer',
    dirProblem: () => opts.problem,
    installFile: (...args) => {
      calls.push(args);
      if (opts.fail) throw opts.fail;
      return opts.outcome ?? 'installed';
    },
    removeStaleTemps: (...args) => {
      sweeps.push(args);
      return opts.stale?.[args[1]] ?? [];
    },
    writeNodeSettings: (stateDir, text) => (
      settings.push({ stateDir, text }), { path: `${stateDir}/announcer.conf`, changed: true }
    ),
    metricsFileProblem: (file) => (file.startsWith('/nonexistent/') ? '/nonexistent does not exist' : undefined),
    now: () => 1_000_000_000,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  };
  return { deps, calls, sweeps, out, err, settings };
}

describe('install', () => {
  it('installs the running executable as DEST/announcer, mode 0755', () => {
    const f = fakeDeps();
    expect(install(f.deps, ['--dest', '/host/opt/cni/bin'])).toBe(0);
    expect(f.calls).toEqual([['/usr/local/bin/announcer', '/host/opt/cni/bin', 'announcer', 0o755]]);
    expect(f.out).toEqual(['installed /host/opt/cni/bin/announcer']);
    expect(f.err).toEqual([]);
  });

  it('with --also-notices, also the THIRD_PARTY_NOTICES next to the executable, mode 0644', () => {
    const f = fakeDeps({ outcome: 'unchanged' });
    expect(install(f.deps, ['--dest', '/d', '--also-notices'])).toBe(0);
    expect(f.calls).toEqual([
      ['/usr/local/bin/announcer', '/d', 'announcer', 0o755],
      ['/usr/local/bin/THIRD_PARTY_NOTICES', '/d', 'THIRD_PARTY_NOTICES', 0o644],
    ]);
    expect(f.out).toEqual([
      'unchanged /d/announcer (already identical)',
      'unchanged /d/THIRD_PARTY_NOTICES (already identical)',
    ]);
  });

  it('removes the temporary files a killed install left (older than 10 minutes), after each file, and says so', () => {
    const f = fakeDeps({ stale: { announcer: ['.announcer.tmp-0123456789ab'] } });
    expect(install(f.deps, ['--dest', '/d', '--also-notices'])).toBe(0);
    expect(f.sweeps).toEqual([
      ['/d', 'announcer', 600_000, 1_000_000_000],
      ['/d', 'THIRD_PARTY_NOTICES', 600_000, 1_000_000_000],
    ]);
    expect(f.out).toEqual([
      'installed /d/announcer',
      'removed /d/.announcer.tmp-0123456789ab (left by an interrupted install)',
      'installed /d/THIRD_PARTY_NOTICES',
    ]);
  });

  it.each([
    ['missing', 'announcer install: --dest /d: no such directory'],
    ['not a directory', 'announcer install: --dest /d: not a directory'],
  ] as const)('refuses a DEST that is %s, with one line on stderr and exit 1', (problem, line) => {
    const f = fakeDeps({ problem });
    expect(install(f.deps, ['--dest', '/d'])).toBe(1);
    expect(f.err).toEqual([line]);
    expect(f.calls).toEqual([]);
    expect(f.out).toEqual([]);
  });

  it('reports a failed copy in one line, exit 1', () => {
    const fail = Object.assign(new Error("EACCES: permission denied, open '/d/.announcer.tmp-0a'\n    at somewhere"), {
      code: 'EACCES',
    });
    const f = fakeDeps({ fail });
    expect(install(f.deps, ['--dest', '/d'])).toBe(1);
    expect(f.err).toEqual(["announcer install: EACCES: permission denied, open '/d/.announcer.tmp-0a'"]);
  });

  it('with --state-dir writes the node settings file after the executable, holding exactly the flags given', () => {
    const f = fakeDeps();
    expect(install(f.deps, ['--dest', '/d', '--state-dir=/run/x', '--log-level=debug'])).toBe(0);
    expect(f.settings).toEqual([{ stateDir: '/run/x', text: '{\n  "logLevel": "debug"\n}\n' }]);
    expect(f.out).toEqual(['installed /d/announcer', 'wrote /run/x/announcer.conf']);
    expect(f.err).toEqual([]);
    const plain = fakeDeps();
    expect(install(plain.deps, ['--dest', '/d'])).toBe(0);
    expect(plain.settings).toEqual([]);
  });

  it('says once, at install, that a metricsFile can never be written, and still writes the settings', () => {
    const f = fakeDeps();
    expect(install(f.deps, ['--dest', '/d', '--state-dir=/run/x', '--metrics-file=/nonexistent/m.prom'])).toBe(0);
    expect(f.settings).toHaveLength(1);
    expect(f.err).toEqual([
      'announcer install: warning: --metrics-file /nonexistent/m.prom cannot be written: /nonexistent does not exist',
    ]);
  });

  it('exits 2 with the usage on bad arguments, touching nothing', () => {
    const f = fakeDeps();
    expect(install(f.deps, ['--dest'])).toBe(2);
    expect(f.err).toHaveLength(1);
    expect(f.calls).toEqual([]);
  });
});
