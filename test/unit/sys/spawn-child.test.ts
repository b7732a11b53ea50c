// spawnChild for real: the child runs in its own session, in /, with the environment given alone,
// stdio on /dev/null; an executable that does not exist is no throw.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnChild } from '../../../src/sys/spawn-child';
import { until } from '../shim/fakes';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'spawn-child-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

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

  it('does not throw for an executable that does not exist', () => {
    expect(() => spawnChild([join(dir, 'missing')], { PATH: '/bin' })).not.toThrow();
  });
});
