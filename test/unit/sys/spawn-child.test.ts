// spawnChild for real: the child runs in its own session, in /, with the environment given alone,
// stdio on /dev/null and a pipe on fd 3 whose first line (or end) resolves the spawn; an
// executable that does not exist is no throw, but a rejection.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnChild } from '../../../src/sys/spawn-child';
import { until } from '../shim/fakes';
import { useTempDir } from '../../support/temp-dir';

let dir: string;
useTempDir('spawn-child-', (d) => (dir = d));

describe('spawnChild', () => {
  it('starts the command detached, in /, with the env given and nothing else', async () => {
    const out = join(dir, 'out');
    // sid == pid: a session leader; then the cwd, the environment and where stdout goes.
    const script =
      `ps -o sid= -p $$ | tr -d ' '; echo $$; pwd; env | sort; readlink /proc/$$/fd/1 > ${out}.fd1; echo ` +
      `> ${out}.done`;
    spawnChild(['/bin/sh', '-c', `(${script}) > ${out}.tmp; mv ${out}.tmp ${out}`], {
      PATH: '/usr/bin:/bin',
      ONLY: 'this',
    });
    await until(() => existsSync(`${out}.done`) && existsSync(out));
    const [sid, pid, cwd, ...env] = readFileSync(out, 'utf8').trim().split('\n');
    expect(sid).toBe(pid);
    expect(cwd).toBe('/');
    expect(env.filter((l) => !/^(PWD|SHLVL|_)=/.test(l))).toEqual(['ONLY=this', 'PATH=/usr/bin:/bin']);
    expect(readFileSync(`${out}.fd1`, 'utf8').trim()).toBe('/dev/null');
  });

  it('resolves with the first line on fd 3, while the child runs on; with "" at the end of the pipe', async () => {
    const pidFile = join(dir, 'pid');
    // The child says it is ready, then sleeps: it still runs when the spawn resolves.
    const said = spawnChild(['/bin/sh', '-c', `echo $$ > ${pidFile}; echo ready >&3; sleep 3`], { PATH: '/bin' });
    expect(await said).toBe('ready');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    try {
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toContain('sleep 3');
    } finally {
      process.kill(pid, 'SIGKILL'); // the child this test started
    }
    expect(await spawnChild(['/bin/sh', '-c', 'exit 0'], { PATH: '/bin' })).toBe('');
    expect(await spawnChild(['/bin/sh', '-c', 'printf "failed: x" >&3'], { PATH: '/bin' })).toBe('failed: x');
  });

  it('refuses an empty command by name', () => {
    expect(() => spawnChild([], { PATH: '/bin' })).toThrow('spawnChild: empty command');
  });

  it('does not throw for an executable that does not exist: it rejects with the error', async () => {
    let started: Promise<string> | undefined;
    expect(() => {
      started = spawnChild([join(dir, 'missing')], { PATH: '/bin' });
    }).not.toThrow();
    await expect(started).rejects.toThrow(/ENOENT/);
  });
});
