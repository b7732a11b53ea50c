// The compiled binary's shim (src/shim) against a fake announcer on a real unix socket: what it
// sends, that it prints the announcer's answer, and what it returns when the announcer refuses,
// hangs or is skipped: it never runs the command itself. The build leaves the Node twin of the transport out of
// the binary (scripts/build.mjs), so an answer relayed here went through Bun.connect.
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { START_MARKER } from '../../src/state-files';
import { encodeLine, MARGIN_MS, START_MS, MAX_FORWARDED_STDIN, WIRE_VERSION } from '../../src/protocol';
import { fakeAnnouncer, type FakeAnnouncer, type Taken } from '../unit/shim/fakes';
import {
  ANNOUNCER,
  cniEnv,
  cniExec,
  run,
  runCniCommand,
  bootMs,
  scopePerTest,
  skipIntegration,
  stopDaemonAtClose,
} from './harness';
import { daemonsOf, waitDaemonGone } from './harness/daemon';
import { childEnv } from './harness/exec';
import { terminateDaemon } from './harness/held-announcer';

describe.skipIf(skipIntegration())('the shim in the binary', () => {
  const scope = scopePerTest();

  /** A fake announcer in a fresh private stateDir, stopped with the test's scope. */
  async function announcer(answer: (t: Taken) => void): Promise<FakeAnnouncer> {
    const dir = mkdtempSync(join(tmpdir(), 'shim-int-'));
    scope().defer(() => rmSync(dir, { recursive: true, force: true }), 'state dir');
    const fake = await fakeAnnouncer(answer, { dir });
    scope().defer(() => fake.stop(), 'fake announcer');
    return fake;
  }

  const config = (stateDir: string) => ({ cniVersion: '1.0.0', name: 'shim', type: 'announcer', stateDir });
  const call = {
    command: 'ADD',
    containerId: 'c1',
    netns: '/run/netns/none',
    ifname: 'eth0',
    env: { LD_LIBRARY_PATH: '/x:' },
  };

  /** A fresh stateDir (0700) in a temp dir of its own under `parent`, removed at scope close. */
  function freshStateDir(parent = tmpdir()): string {
    const dir = mkdtempSync(join(parent, 'shim-int-'));
    scope().defer(() => rmSync(dir, { recursive: true, force: true }), 'state dir');
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    return stateDir;
  }

  const forwardsADDCNITitle =
    'forwards ADD (CNI variables, stdin as it came, build, deadline on ' +
    "CLOCK_BOOTTIME) and prints the announcer's answer";
  it(forwardsADDCNITitle, async () => {
    const fake = await announcer((t) => t.socket.end(encodeLine({ exit: 3, stdout: 'ANSWER' })));
    const before = bootMs();
    const res = await cniExec(ANNOUNCER, call, config(fake.dir));
    const after = bootMs();
    expect([res.code, res.stdout, res.stderr]).toEqual([3, 'ANSWER', '']);
    expect(fake.taken).toHaveLength(1);
    const request = fake.taken[0]!.request as {
      v: number;
      build: string;
      deadline: number;
      cni: { env: Record<string, string>; stdin: string };
    };
    expect(request.v).toBe(WIRE_VERSION);
    expect(request.build).toMatch(/\S/);
    expect(Object.keys(request.cni.env).sort()).toEqual([
      'CNI_COMMAND',
      'CNI_CONTAINERID',
      'CNI_IFNAME',
      'CNI_NETNS',
      'CNI_PATH',
    ]);
    expect(JSON.parse(request.cni.stdin)).toMatchObject(config(fake.dir));
    // The clocks agree: the deadline lies addWaitMs (2 s by default) + MARGIN_MS after some moment of the run
    // (/proc/uptime has 10 ms steps).
    const waitMs = 2000 + MARGIN_MS;
    expect(request.deadline - waitMs).toBeGreaterThanOrEqual(before - 10);
    expect(request.deadline - waitMs).toBeLessThanOrEqual(after + 10);
    expect(request).not.toHaveProperty('ackBy');
  });

  it('holds Bun.connect and not the Node twin', async () => {
    const bin = (await readFile(ANNOUNCER)).toString('latin1');
    expect(bin).toContain('Bun.connect needs the Bun runtime');
  });

  it('fails ADD with code 11 naming the refusal when the announcer refuses it, running nothing itself', async () => {
    const fake = await announcer((t) => t.socket.end(encodeLine({ refused: 'version' })));
    const res = await cniExec(ANNOUNCER, call, config(fake.dir));
    expect(fake.taken).toHaveLength(1);
    expect(res.code).toBe(1);
    expect(res.json).toMatchObject({ cniVersion: '1.0.0', code: 11, msg: expect.stringContaining('refused') });
  });

  it('fails ADD with code 11 once its deadline passes without an answer, and closes its connection', async () => {
    const fake = await announcer(() => undefined);
    const started = Date.now();
    const res = await cniExec(ANNOUNCER, call, { ...config(fake.dir), addWaitMs: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(MARGIN_MS - 100);
    expect(res.json).toMatchObject({ code: 11, msg: expect.stringContaining(`no answer within ${MARGIN_MS} ms`) });
    expect(fake.taken).toHaveLength(1);
    expect(fake.taken[0]!.closed).toBe(true);
  });

  it('does not forward a stdin over MAX_FORWARDED_STDIN: code 5 naming the size; DEL exits 0', async () => {
    const fake = await announcer((t) => t.socket.end(encodeLine({ exit: 0, stdout: 'ANSWER' })));
    const big = JSON.stringify({ pad: 'x'.repeat(MAX_FORWARDED_STDIN), ...config(fake.dir), count: 99 });
    const res = await cniExec(ANNOUNCER, call, big);
    expect(res.json).toMatchObject({ code: 5, msg: expect.stringContaining(`${MAX_FORWARDED_STDIN} bytes`) });
    const del = await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, big);
    expect([del.code, del.stdout]).toEqual([0, '']);
    expect(fake.taken).toHaveLength(0);
  });

  const absentAndNotTitle =
    'a fresh start marker whose shim starts none (it died): the call takes the marker over once it is stale ' +
    '(START_MS) and starts the announcer itself, which answers';
  it(absentAndNotTitle, async () => {
    const stateDir = freshStateDir();
    stopDaemonAtClose(scope(), stateDir);
    writeFileSync(join(stateDir, START_MARKER), '');
    const started = Date.now();
    const add = await cniExec(ANNOUNCER, call, config(stateDir));
    expect(Date.now() - started).toBeGreaterThanOrEqual(START_MS - 100);
    // The announcer it started ran the ADD: this config has no prevResult.
    expect(add.json).toMatchObject({ code: 7 });
    expect((await daemonsOf(stateDir)).length).toBe(1);
  });

  it('a stateDir that cannot be used (under a regular file): ADD code 105 saying so, DEL exits 0', async () => {
    const file = join(dirname(freshStateDir()), 'file');
    writeFileSync(file, '');
    const stateDir = join(file, 'state');
    const add = await cniExec(ANNOUNCER, call, config(stateDir));
    expect(add.json).toMatchObject({ code: 105, msg: expect.stringContaining(`cannot use stateDir ${stateDir}`) });
    const del = await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, config(stateDir));
    expect([del.code, del.stdout]).toEqual([0, '']);
    expect(del.stderr).toContain('DEL did nothing');
  });

  /**
   * Runs the binary, copied into a fresh dir, as a shim's ADD on stateDir `<dir>/state`; `meanwhile` runs once the
   * shim waits for its stdin. Its exit status, its stdout and how long it took after its stdin came.
   */
  async function shimOfCopy(
    meanwhile: (copy: string) => void,
  ): Promise<{ exit: number | null; out: string; ms: number }> {
    const dir = dirname(freshStateDir());
    const copy = join(dir, 'announcer');
    copyFileSync(ANNOUNCER, copy);
    const call = { command: 'ADD', containerId: 'c1', netns: '/run/netns/none', ifname: 'eth0' };
    // childEnv: an announcer it starts carries the run's tag, so the harness knows it as this test's.
    const shim = spawn(copy, [], { env: childEnv(cniEnv(call), false) });
    let out = '';
    shim.stdout.on('data', (d: Buffer) => void (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => shim.once('exit', resolve));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the shim runs, and waits for its stdin
    meanwhile(copy);
    const started = Date.now();
    shim.stdin.end(JSON.stringify(config(join(dir, 'state'))));
    const exit = await exited;
    return { exit, out, ms: Date.now() - started };
  }

  const cannotBeExecutedTitle =
    'an announcer that cannot be executed (the binary removed while its shim ran): ADD code 11 at once, naming why';
  it(cannotBeExecutedTitle, async () => {
    const res = await shimOfCopy((copy) => unlinkSync(copy));
    expect(res.exit).toBe(1);
    expect(res.ms).toBeLessThan(START_MS);
    expect(JSON.parse(res.out)).toMatchObject({
      code: 11,
      msg: expect.stringMatching(/could not be started: .*ENOENT/),
    });
  });

  const renamedOverTitle =
    'the binary renamed over while its shim ran (an upgrade): the shim starts the program now at its path; it answers';
  it(renamedOverTitle, async () => {
    let stateDir = '';
    const res = await shimOfCopy((copy) => {
      copyFileSync(ANNOUNCER, `${copy}.new`);
      renameSync(`${copy}.new`, copy);
      stateDir = join(dirname(copy), 'state');
    });
    scope().defer(() => terminateDaemon(stateDir), 'the announcer the shim started');
    // The announcer answered (this config has no prevResult: code 7), and it runs from the renamed file's path.
    expect(JSON.parse(res.out)).toMatchObject({ code: 7 });
    const [daemon] = await daemonsOf(stateDir);
    expect(daemon?.argv.slice(0, 3)).toEqual([join(dirname(stateDir), 'announcer'), 'daemon', stateDir]);
  });

  it('answers VERSION itself', async () => {
    const fake = await announcer((t) => t.socket.end(encodeLine({ exit: 0, stdout: 'ANSWER' })));
    const res = await cniExec(ANNOUNCER, { command: 'VERSION' }, config(fake.dir));
    expect(res.json).toMatchObject({ supportedVersions: expect.any(Array) });
    expect(fake.taken).toHaveLength(0);
  });

  describe('an announcer that cannot start says why, at once', () => {
    /** ADD and DEL through `plugin` (with `args` before the binary's path), each said at once, well within START_MS. */
    async function saysAtOnce(stateDir: string, why: RegExp, plugin = ANNOUNCER, args: string[] = []) {
      const started = Date.now();
      const add = await runCniCommand(plugin, args, call, config(stateDir));
      const took = Date.now() - started;
      expect(add.json, add.stdout + add.stderr).toMatchObject({ code: 11, msg: expect.stringMatching(why) });
      expect(add.json.msg).toContain('it could not be started: ');
      expect(took).toBeLessThan(START_MS);
      const del = await runCniCommand(plugin, args, { ...call, command: 'DEL' }, config(stateDir));
      expect(del.code).toBe(0);
      expect(del.stderr).toMatch(why);
      // The announcer that said why exits on its own once it has said it; the call does not wait for that.
      await waitDaemonGone(stateDir, 2000);
      return took;
    }

    const flockTitle =
      'a symlink planted at announcer-daemon.flock: ADD code 11 naming ELOOP and the file; `announcer daemon` by ' +
      'hand says so on stderr and exits 1';
    it(flockTitle, async () => {
      const stateDir = freshStateDir();
      symlinkSync('/nonexistent', join(stateDir, 'announcer-daemon.flock'));
      const why = new RegExp(`ELOOP.*${stateDir}/announcer-daemon\\.flock`);
      await saysAtOnce(stateDir, why);
      const byHand = await run(ANNOUNCER, ['daemon', stateDir], { timeoutMs: 10_000 });
      expect(byHand.code).toBe(1);
      expect(byHand.stderr).toMatch(new RegExp(`^announcer daemon: .*ELOOP.*${stateDir}/announcer-daemon\\.flock`));
    });

    it('a symlink planted at announcer.conf: ADD code 11 naming the file it refused', async () => {
      const stateDir = freshStateDir();
      writeFileSync(join(dirname(stateDir), 'conf'), '{}');
      symlinkSync(join(dirname(stateDir), 'conf'), join(stateDir, 'announcer.conf'));
      await saysAtOnce(stateDir, new RegExp(`${stateDir}/announcer\\.conf`));
    });

    it('a read-only stateDir: ADD code 11 naming EROFS and the file it could not create', async () => {
      const stateDir = freshStateDir();
      // Read-only in a mount namespace of its own, where the call (and any announcer it starts) runs.
      const ro = ['-m', '--propagation', 'private', 'sh', '-c', `mount --bind -o ro "$1" "$1" && shift && exec "$@"`];
      await saysAtOnce(stateDir, /EROFS.*announcer-start\.marker/, 'unshare', [...ro, 'sh', stateDir, ANNOUNCER]);
    });

    const koffiTitle =
      "no directory koffi's addon can load from (all read-only or noexec): ADD code 11 naming each directory";
    it(koffiTitle, async () => {
      // Outside the directories the mount namespace below masks: /var/lib.
      const stateDir = freshStateDir('/var/lib');
      const bin = dirname(stateDir);
      copyFileSync(ANNOUNCER, join(bin, 'announcer'));
      // In a mount namespace of its own: the binary's directory read-only (it still runs from there) but stateDir in it
      // writable, and the others noexec.
      const script = [
        'mount --bind "$1" "$1"',
        'mount -o remount,bind,ro "$1"',
        'mount --bind "$2" "$2"',
        'mount -o remount,bind,rw "$2"',
        'for d in /dev/shm /run /tmp /var/tmp; do mount -t tmpfs -o noexec none "$d"; done',
        'exec "$1/announcer"',
      ].join(' && ');
      const args = ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', bin, stateDir];
      await saysAtOnce(stateDir, /cannot load the koffi addon.*\/dev\/shm: .*\/run: .*\/var\/tmp: /, 'unshare', args);
    });
  });
});
