// Issue 10, state, processes and races: malformed records, a stateDir someone
// else controls, concurrent commands on one attachment, a tail whose record is
// removed, long container IDs, and a netns path reused by another pod. Every
// call that reads a record runs in a private pid namespace (see
// harness/pidns.ts), so even a regression could not signal the node's
// processes; malformed records are also run under strace, which shows every
// signal the plugin sends.
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  announcerFiles,
  chainConfig,
  createPidNamespace,
  createStandInPod,
  killStrays,
  linkShow,
  ownAnnouncerProcesses,
  run,
  runOk,
  RUN_TAG,
  type AnnouncerFiles,
  type CniOutput,
  type Frame,
  type PidNamespace,
  type Scope,
  type StandInPod,
  scopePerTest,
  skipIntegration,
  startCapture,
  stateFiles,
  waitFor,
} from './harness';
import { cniExecInMountNs } from './harness/mountns-helpers';


const PREFIX = `hs${RUN_TAG}`;
const NETWORK = `hostile-${RUN_TAG}`;

/** One attachment of a stand-in pod, with its own stateDir and log. */
interface Att {
  s: Scope;
  ns: PidNamespace;
  pod: StandInPod;
  files: AnnouncerFiles;
  containerId: string;
  ip: string;
  prevResult: Record<string, unknown>;
}

function newContainerId(tag: string): string {
  return `${PREFIX}-${tag}-${Math.random().toString(16).slice(2, 8)}`;
}

/** A quiet IPv4 stand-in pod (no IPv6, no arp_notify), a pid namespace for the calls, and a stateDir of its own. */
async function attachment(s: Scope, tag: string, opts: { up?: boolean; containerId?: string } = {}): Promise<Att> {
  killStrays(s, { strict: true });
  const ns = await createPidNamespace(s);
  const net = allocSubnet();
  const pod = await createStandInPod(s, {
    prefix: PREFIX,
    v4: [net.v4Cidr(5)],
    up: opts.up ?? true,
    sysctls: { 'net.ipv6.conf.eth0.disable_ipv6': 1, 'net.ipv4.conf.eth0.arp_notify': 0 },
  });
  const files = await announcerFiles(s);
  const prevResult = {
    cniVersion: '1.0.0',
    interfaces: [{ name: pod.ifname, mac: pod.mac, sandbox: pod.netns.path }],
    ips: [{ address: net.v4Cidr(5), interface: 0 }],
  };
  return { s, ns, pod, files, containerId: opts.containerId ?? newContainerId(tag), ip: net.v4(5), prevResult };
}

function conf(a: Att, options: Record<string, unknown> = {}, stateDir = a.files.stateDir): Record<string, unknown> {
  const own = { type: 'announcer', stateDir, logFile: a.files.logFile, logLevel: 'debug', count: 1, ...options };
  return chainConfig({ name: NETWORK, cniVersion: '1.0.0' }, own, a.prevResult);
}

async function add(a: Att, options: Record<string, unknown> = {}, trace = false, stateDir?: string) {
  return a.ns.cniExec(ANNOUNCER, { command: 'ADD', containerId: a.containerId, netns: a.pod.netns.path, ifname: 'eth0' }, conf(a, options, stateDir), { trace });
}

async function del(a: Att, opts: { trace?: boolean; netns?: boolean; stateDir?: string; options?: Record<string, unknown> } = {}) {
  const call = { command: 'DEL', containerId: a.containerId, ifname: 'eth0', ...(opts.netns === false ? {} : { netns: a.pod.netns.path }) };
  return a.ns.cniExec(ANNOUNCER, call, conf(a, opts.options, opts.stateDir), { trace: opts.trace ?? false });
}

async function gc(a: Att, valid: { containerID: string; ifname: string }[], trace = false, stateDir = a.files.stateDir) {
  const config = { cniVersion: '1.1.0', name: NETWORK, type: 'announcer', stateDir, logFile: a.files.logFile, 'cni.dev/valid-attachments': valid };
  return a.ns.cniExec(ANNOUNCER, { command: 'GC' }, config, { trace });
}

async function status(a: Att, stateDir: string): Promise<CniOutput> {
  const config = { cniVersion: '1.1.0', name: NETWORK, type: 'announcer', stateDir };
  return a.ns.cniExec(ANNOUNCER, { command: 'STATUS' }, config);
}

function expectOk(what: string, out: CniOutput): void {
  expect(out.code, `${what}: ${out.stdout}${out.stderr}`).toBe(0);
}

/** Live background tails started for this container ID. */
async function tailsOf(containerId: string): Promise<number[]> {
  return (await ownAnnouncerProcesses()).filter((p) => p.containerId === containerId && p.argv.includes('tail')).map((p) => p.pid);
}

/** The pid a host pid has in the innermost pid namespace (NSpid), as the plugin there records it. */
async function nsPid(hostPid: number): Promise<number> {
  const status = await readFile(`/proc/${hostPid}/status`, 'utf8');
  return Number(/^NSpid:.*\s(\d+)\s*$/m.exec(status)![1]);
}

/** The one live tail of this container ID, as the pid its namespace sees; throws unless there is exactly one. */
async function theTail(containerId: string): Promise<number> {
  const tails = await tailsOf(containerId);
  if (tails.length !== 1) throw new Error(`expected one tail, found ${tails.length}`);
  return nsPid(tails[0]!);
}

/** Live announcer processes of any kind started for this container ID. */
async function processesOf(containerId: string): Promise<number[]> {
  return (await ownAnnouncerProcesses()).filter((p) => p.containerId === containerId).map((p) => p.pid);
}

/** The pod netns file's identity, as the plugin records it. */
async function netnsId(a: Att): Promise<{ dev: number; ino: number }> {
  const st = await stat(a.pod.netns.path);
  return { dev: st.dev, ino: st.ino };
}

/** Field 22 of /proc/PID/stat: the same in every pid namespace. */
async function startTimeOf(hostPid: number): Promise<string> {
  const stat = await readFile(`/proc/${hostPid}/stat`, 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/** A record that passes the schema except for what `tail` holds. */
async function recordWithTail(a: Att, tail: unknown): Promise<string> {
  const record = {
    network: NETWORK,
    containerId: a.containerId,
    ifname: 'eth0',
    netns: a.pod.netns.path,
    netnsId: await netnsId(a),
    originalMacs: [],
    tail,
  };
  return JSON.stringify(record);
}

async function plant(a: Att, text: string): Promise<string> {
  await mkdir(a.files.stateDir, { recursive: true, mode: 0o700 });
  const file = join(a.files.stateDir, `${a.containerId}@eth0.json`);
  await writeFile(file, text, { mode: 0o600 });
  return file;
}

/** Our gratuitous ARPs for ip, sent by mac, in a capture. */
function garps(frames: readonly Frame[], mac: string, ip: string): Frame[] {
  return frames.filter((f) => f.eth.src === mac && f.arp?.isGratuitous === true && f.arp.senderIp === ip);
}

describe.skipIf(skipIntegration())('hostile state: records, stateDir, races (issue 10)', () => {
  const scope = scopePerTest();

  describe('a malformed record is removed and never acted on: DEL, GC and a repeated ADD signal nothing', () => {
    // Without validation, `undefined === undefined` passed the start-time check:
    // {"pid":-1} meant kill(-1), every process the plugin may signal.
    const cases: [string, (a: Att) => Promise<string>][] = [
      ['tail {"pid":-1}', (a) => recordWithTail(a, { pid: -1 })],
      ['tail {"pid":0}', (a) => recordWithTail(a, { pid: 0 })],
      ['tail pid 1 with the start time of the namespace init', async (a) => recordWithTail(a, { pid: 1, startTime: await startTimeOf(a.ns.initPid) })],
      ['tail pid -1 with an empty start time', (a) => recordWithTail(a, { pid: -1, startTime: '' })],
      ['tail pid 2 without a start time', (a) => recordWithTail(a, { pid: 2 })],
      ['tail pid "-1" as a string', (a) => recordWithTail(a, { pid: '-1' })],
      ['only {"tail":{"pid":-1}}', async () => '{"tail":{"pid":-1}}'],
      ['garbage JSON', async () => '{"containerId": "x", "tail": {"pid": -1'],
    ];
    for (const [name, makeRecord] of cases) {
      it(name, async () => {
        const a = await attachment(scope(), 'bad');
        const file = await plant(a, await makeRecord(a));
        const d = await del(a, { trace: true });
        expectOk('DEL', d);
        expect(d.signals).toEqual([]);
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        await plant(a, await makeRecord(a));
        const g = await gc(a, [], true);
        expectOk('GC', g);
        expect(g.signals).toEqual([]);
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        await plant(a, await makeRecord(a));
        const r = await add(a, { count: 1 }, true);
        expectOk('ADD', r);
        expect(r.signals).toEqual([]);
        // count 1 and no MAC change: nothing to record; the invalid record is gone.
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        expect(await a.ns.signalsSeen()).toEqual([]);
        const log = await a.files.log();
        expect(log.match(/invalid state record: removing it without acting on it/g)?.length).toBe(3);
        expect(log).toContain(`file=${file}`);
      });
    }
  });

  describe('stateDir', () => {
    it('owned by another uid at mode 1777 with symlinks planted: ADD 105 and STATUS 50 say what to fix, nothing is written through them', async () => {
      const a = await attachment(scope(), 'uid');
      const dir = join(a.files.dir, 'shared');
      await mkdir(dir);
      await chown(dir, 65534, 65534);
      await chmod(dir, 0o1777);
      const victim = join(a.files.dir, 'victim');
      await writeFile(victim, 'precious\n');
      const record = join(dir, `${a.containerId}@eth0.json`);
      const planted = [record, join(dir, `${a.containerId}@eth0.lock`), ...[0, 1, 2].map((i) => `${record}.${i}.tmp`)];
      for (const p of planted) await symlink(victim, p);

      const r = await add(a, { count: 3 }, false, dir);
      expect(r.code).toBe(1);
      expect(r.json).toMatchObject({ code: 105 });
      expect(r.json.msg).toBe(`unsafe stateDir: ${dir} is owned by uid 65534, not root: chown root ${dir} and chmod 0700 ${dir}`);
      const st = await status(a, dir);
      expect(st.json).toMatchObject({ code: 50 });
      expect(st.json.msg).toContain(`chown root ${dir} and chmod 0700 ${dir}`);
      expectOk('DEL', await del(a, { stateDir: dir }));
      expect((await gc(a, [], false, dir)).json).toMatchObject({ code: 105 });

      expect(await readFile(victim, 'utf8')).toBe('precious\n');
      expect((await stateFiles(dir)).sort()).toEqual(planted.map((p) => p.slice(dir.length + 1)).sort());
      expect(await processesOf(a.containerId)).toEqual([]);
      expect(await a.files.log()).toMatch(/DEL did nothing: unsafe stateDir/);
    });

    it('writable by its group: ADD 105 says chmod 0700', async () => {
      const a = await attachment(scope(), 'grp');
      const dir = join(a.files.dir, 'grp');
      await mkdir(dir);
      await chmod(dir, 0o770);
      const r = await add(a, { count: 3 }, false, dir);
      expect(r.json).toMatchObject({ code: 105, msg: `unsafe stateDir: ${dir} is writable by group or others (mode 0770): chmod 0700 ${dir}` });
      expect(await stateFiles(dir)).toEqual([]);
    });

    it('a regular file, a symlink or an over-long path: code 105, not 999', async () => {
      const a = await attachment(scope(), 'path');
      const file = join(a.files.dir, 'file');
      await writeFile(file, 'keep');
      const real = join(a.files.dir, 'real');
      await mkdir(real, { mode: 0o700 });
      const link = join(a.files.dir, 'link');
      await symlink(real, link);
      const longComponent = join(a.files.dir, 'x'.repeat(300));
      const longPath = join(a.files.dir, ...Array.from({ length: 50 }, () => 'y'.repeat(100)));
      for (const [dir, msg] of [
        [file, /is not a directory/],
        [link, /is a symbolic link/],
        [longComponent, /ENAMETOOLONG/],
        [longPath, /ENAMETOOLONG/],
      ] as const) {
        const r = await add(a, { count: 3 }, false, dir);
        expect(r.json, dir.slice(0, 80)).toMatchObject({ code: 105, msg: expect.stringMatching(msg) });
        expect(r.stdout).not.toMatch(/\n {4}at /); // no stack trace
      }
      expect(await readFile(file, 'utf8')).toBe('keep');
      expect(await stateFiles(real)).toEqual([]);
    });

    it('full (ENOSPC on a 4 KiB tmpfs): ADD 105, no temporary file or lock left, no tail, the MAC unchanged', async () => {
      const a = await attachment(scope(), 'full');
      const out = await cniExecInMountNs(
        ANNOUNCER,
        { command: 'ADD', containerId: a.containerId, netns: a.pod.netns.path, ifname: 'eth0' },
        conf(a, { count: 3, mac: 'ip-derived' }, join(a.files.dir, 'tiny', 'state')),
        {
          prelude: [
            'mkdir -p "$1"',
            'mount -t tmpfs -o size=4k,mode=0700 announcer-enospc "$1"',
            'mkdir -m 0700 "$1/state"',
            'head -c 65536 /dev/zero > "$1/fill" 2>/dev/null || true',
          ].join('\n'),
          args: [join(a.files.dir, 'tiny')],
          // Inside the mount namespace: what the plugin left in stateDir.
          epilogue: 'echo "left:$(ls -A "$1/state" | tr "\\n" " ")" >&2',
        },
      );
      expect(out.json, out.stderr).toMatchObject({ code: 105, msg: expect.stringMatching(/ENOSPC/) });
      expect(out.stderr).toMatch(/^left: ?$/m);
      expect(await processesOf(a.containerId)).toEqual([]);
      expect((await linkShow('eth0', a.pod.netns.name))?.mac).toBe(a.pod.mac);
      // The tmpfs went with the mount namespace: nothing is mounted on the host.
      expect((await run('findmnt', ['-n', '-o', 'TARGET', '-S', 'announcer-enospc'])).stdout.trim()).toBe('');
    });
  });

  describe('one attachment, concurrent commands', () => {
    it('DEL while ADD waits for readiness: DEL waits, then stops the tail; nothing runs and no frame follows', async () => {
      const a = await attachment(scope(), 'delrace', { up: false });
      const adding = add(a, { count: 3, intervalMs: 1000, addWaitMs: 1500, readyTimeoutMs: 20000 });
      // DEL arrives while ADD waits for readiness (addWaitMs 1500): before ADD has written any record.
      await waitFor(async () => (await processesOf(a.containerId)).length > 0, { what: 'the ADD process' });
      await sleep(500);
      expect(await stateFiles(a.files.stateDir)).not.toContain(`${a.containerId}@eth0.json`);
      const deleting = del(a);
      const [r, d] = await Promise.all([adding, deleting]);
      expectOk('ADD', r);
      expectOk('DEL', d);
      expect(await processesOf(a.containerId)).toEqual([]);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
      const log = await a.files.log();
      // DEL found the tail ADD had started (deferred mode) and stopped it.
      expect(log).toMatch(new RegExp(`INFO DEL done containerId=${a.containerId} ifname=eth0 tail=(terminated|killed) tailPid=\\d+ macsRestored=none recordRemoved=true`));
      // The pod comes up now: nobody announces it any more.
      const capture = await startCapture(a.s, { netns: a.pod.netns.name, iface: a.pod.peer });
      await runOk('ip', ['-n', a.pod.netns.name, 'link', 'set', 'eth0', 'up']);
      await sleep(2000);
      expect(garps(await capture.stop(), a.pod.mac, a.ip)).toEqual([]);
    });

    it('two concurrent ADDs leave exactly one tail, the recorded one; after DEL none runs and no frame follows (4 trials)', async () => {
      const a = await attachment(scope(), 'addrace');
      for (let trial = 0; trial < 4; trial++) {
        const [r1, r2] = await Promise.all([add(a, { count: 6, intervalMs: 1000 }), add(a, { count: 6, intervalMs: 1000 })]);
        expectOk(`ADD 1, trial ${trial}`, r1);
        expectOk(`ADD 2, trial ${trial}`, r2);
        const record = JSON.parse(await readFile(join(a.files.stateDir, `${a.containerId}@eth0.json`), 'utf8'));
        expect(await theTail(a.containerId), `trial ${trial}`).toBe(record.tail.pid);
        const capture = await startCapture(a.s, { netns: a.pod.netns.name, iface: a.pod.peer });
        expectOk('DEL', await del(a));
        const afterDel = Date.now();
        expect(await processesOf(a.containerId)).toEqual([]);
        expect(await stateFiles(a.files.stateDir)).toEqual([]);
        await sleep(1500);
        const late = garps(await capture.stop(), a.pod.mac, a.ip).filter((f) => f.time * 1000 > afterDel);
        expect(late, `trial ${trial}`).toEqual([]);
      }
    });

    it('a lock held past addWaitMs + 10 s: ADD is code 11 and changes nothing; DEL goes ahead without it and exits 0', async () => {
      const a = await attachment(scope(), 'held');
      await mkdir(a.files.stateDir, { mode: 0o700 });
      const lock = join(a.files.stateDir, `${a.containerId}@eth0.lock`);
      const holder = spawn('flock', [lock, 'sleep', '120'], { stdio: 'ignore' });
      a.s.defer(() => holder.kill('SIGKILL'), 'flock holder');
      await waitFor(async () => (await stateFiles(a.files.stateDir)).includes(`${a.containerId}@eth0.lock`), { what: 'flock to hold the lock' });
      await sleep(100);
      const [r, d] = await Promise.all([add(a, { count: 3, addWaitMs: 0, mac: 'ip-derived' }), del(a, { options: { addWaitMs: 0 } })]);
      expect(r.json).toMatchObject({ code: 11, msg: 'another command on this attachment still runs after 10000 ms: try again later' });
      expectOk('DEL', d);
      expect(await a.files.log()).toMatch(/deleting without the lock/);
      expect((await linkShow('eth0', a.pod.netns.name))?.mac).toBe(a.pod.mac);
      expect(await processesOf(a.containerId)).toEqual([]);
      // Not DEL's lock: the holder's file stays.
      expect(await stateFiles(a.files.stateDir)).toEqual([`${a.containerId}@eth0.lock`]);
    });
  });

  it('removing the record stops the tail: at most the round in flight, nothing once it has exited', async () => {
    const a = await attachment(scope(), 'rmrec');
    const capture = await startCapture(scope(), { netns: a.pod.netns.name, iface: a.pod.peer });
    expectOk('ADD', await add(a, { count: 10, intervalMs: 500 }));
    const [tail] = await waitFor(async () => {
      const tails = await tailsOf(a.containerId);
      return tails.length === 1 ? tails : undefined;
    }, { what: 'the tail' });
    await waitFor(async () => (await capture.count()) >= 2, { what: 'round 2 from the tail' });
    const removedAt = Date.now();
    await rm(join(a.files.stateDir, `${a.containerId}@eth0.json`));
    await waitFor(async () => !(await tailsOf(a.containerId)).includes(tail!), { what: 'the tail to exit' });
    const exitedAt = Date.now();
    await sleep(1000);
    const frames = garps(await capture.stop(), a.pod.mac, a.ip);
    expect(frames.filter((f) => f.time * 1000 > removedAt).length).toBeLessThanOrEqual(1);
    expect(frames.filter((f) => f.time * 1000 > exitedAt)).toEqual([]);
    expect(await a.files.log()).toMatch(/attachment deleted: stopping announcements/);
    // DEL afterwards: no record, nothing to undo, and it removes the lock file.
    expectOk('DEL', await del(a));
    expect(await a.files.log()).toMatch(/DEL: no state record, nothing to undo/);
    expect(await stateFiles(a.files.stateDir)).toEqual([]);
  });

  for (const length of [250, 1000]) {
    it(`a ${length}-character CNI_CONTAINERID works: a hashed file name, the full ID in the record`, async () => {
      const id = `${PREFIX}-long-`.padEnd(length, 'a');
      const a = await attachment(scope(), 'long', { containerId: id });
      expectOk('ADD', await add(a, { count: 3, intervalMs: 1000 }));
      const files = await stateFiles(a.files.stateDir);
      const name = files.find((f) => f.endsWith('.json'))!;
      expect(name).toMatch(/^sha256-[0-9a-f]{64}\.json$/);
      expect(files.sort()).toEqual([name, name.replace(/\.json$/, '.lock')].sort());
      const record = JSON.parse(await readFile(join(a.files.stateDir, name), 'utf8'));
      expect(record.containerId).toBe(id);
      expect(await theTail(id)).toBe(record.tail.pid);
      expectOk('DEL', await del(a));
      expect(await processesOf(id)).toEqual([]);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
    });
  }

  describe('DEL without CNI_NETNS restores MACs only into the netns they were recorded in', () => {
    it('the netns path now names a new pod: its MAC is left alone', async () => {
      const a = await attachment(scope(), 'reuse');
      expectOk('ADD', await add(a, { mac: 'ip-derived' }));
      const derived = (await linkShow('eth0', a.pod.netns.name))!.mac;
      expect(derived).not.toBe(a.pod.mac);
      // The pod goes away and a new pod gets a netns under the same path.
      const name = a.pod.netns.name;
      await runOk('ip', ['netns', 'del', name]);
      await runOk('ip', ['netns', 'add', name]);
      await runOk('ip', ['-n', name, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0']);
      const newMac = (await linkShow('eth0', name))!.mac;
      expectOk('DEL', await del(a, { netns: false }));
      expect((await linkShow('eth0', name))?.mac).toBe(newMac);
      expect(await a.files.log()).toMatch(/the netns at this path is not the one the MACs were recorded in: not restoring them/);
      expect(await a.files.log()).toMatch(/DEL done .*macsRestored=none recordRemoved=true/);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
    });

    it('the same netns is still there: the original MAC comes back', async () => {
      const a = await attachment(scope(), 'same');
      expectOk('ADD', await add(a, { mac: 'ip-derived' }));
      expect((await linkShow('eth0', a.pod.netns.name))!.mac).not.toBe(a.pod.mac);
      expectOk('DEL', await del(a, { netns: false }));
      expect((await linkShow('eth0', a.pod.netns.name))?.mac).toBe(a.pod.mac);
      expect(await a.files.log()).toMatch(new RegExp(`INFO DEL done containerId=${a.containerId} ifname=eth0 tail=none macsRestored=eth0 recordRemoved=true`));
    });
  });

  it('GC drops invalid records, orphan lock files and temp files of dead writers, and keeps live attachments', async () => {
    const a = await attachment(scope(), 'gc');
    expectOk('ADD', await add(a, { mac: 'ip-derived' }));
    const live = `${a.containerId}@eth0.json`;
    const dir = a.files.stateDir;
    await writeFile(join(dir, 'other@eth0.json'), '{"tail":{"pid":-1}}', { mode: 0o600 });
    await writeFile(join(dir, 'gone@eth0.lock'), '', { mode: 0o600 });
    await writeFile(join(dir, '.gone@eth0.json.4194305.deadbeef.tmp'), '{', { mode: 0o600 });
    const g = await gc(a, [{ containerID: a.containerId, ifname: 'eth0' }], true);
    expectOk('GC', g);
    expect(g.signals).toEqual([]);
    expect(await a.ns.signalsSeen()).toEqual([]);
    expect((await stateFiles(dir)).sort()).toEqual([live, `${a.containerId}@eth0.lock`].sort());
    expectOk('DEL', await del(a));
    expect(await stateFiles(dir)).toEqual([]);
  });
});
