// State, processes and races: malformed records, a stateDir someone
// else controls, concurrent commands on one attachment, a record removed under
// the background announcer, long container IDs, and a netns path reused by
// another pod. Every call that reads a record runs in a private pid namespace
// (see harness/pidns.ts), so even a regression could not signal the node's
// processes; malformed records are also run under strace, which shows every
// signal the plugin sends: the shim's calls, and the whole life of the
// announcer they go to (started under strace in the same pid namespace).
// Background announcers started here exit 200 ms after their last job
// (idleExitMs, from the job); one that never had a job is stopped at scope close.
import { chmod, chown, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  announcerFiles,
  assertCniOk,
  bootMs,
  chainConfig,
  createPidNamespace,
  killStrays,
  linkShow,
  logRecords,
  announcerStatus,
  daemonStatus,
  DAEMON_SOCKET,
  daemonsOf,
  killDaemon,
  waitDaemonGone,
  processesOf,
  quietStandIn,
  run,
  runOk,
  RUN_TAG,
  taggedId,
  type AnnouncerFiles,
  garpsFor,
  type PidNamespace,
  type QuietStandIn,
  type Scope,
  scopePerTest,
  skipIntegration,
  startCapture,
  stateFiles,
  stopDaemonAtClose,
  waitFor,
} from './harness';
import { startTimeOf } from './harness/proc-tree';
import { cniExecInMountNs } from './harness/mountns-helpers';

const PREFIX = `hs${RUN_TAG}`;
/** Background announcers started by these tests exit this long after their last job. */
const IDLE_EXIT_MS = 200;
const NETWORK = `hostile-${RUN_TAG}`;

/** One attachment of a stand-in pod, with its own stateDir and log. */
interface Att {
  s: Scope;
  ns: PidNamespace;
  pod: QuietStandIn;
  files: AnnouncerFiles;
  containerId: string;
  ip: string;
  prevResult: Record<string, unknown>;
}

/** A quiet IPv4 stand-in pod (no IPv6, no arp_notify), a pid namespace for the calls, and a stateDir of its own. */
async function attachment(s: Scope, tag: string, opts: { up?: boolean; containerId?: string } = {}): Promise<Att> {
  killStrays(s, { strict: true });
  const ns = await createPidNamespace(s);
  const pod = await quietStandIn(s, { prefix: PREFIX, net: allocSubnet(), up: opts.up ?? true });
  const files = await announcerFiles(s);
  return {
    s,
    ns,
    pod,
    files,
    containerId: opts.containerId ?? taggedId(PREFIX, tag),
    ip: pod.ip,
    prevResult: pod.result,
  };
}

function conf(a: Att, options: Record<string, unknown> = {}, stateDir = a.files.stateDir): Record<string, unknown> {
  const own = {
    type: 'announcer',
    stateDir,
    logFile: a.files.logFile,
    logLevel: 'debug',
    count: 1,
    idleExitMs: IDLE_EXIT_MS,
    ...options,
  };
  return chainConfig({ name: NETWORK, cniVersion: '1.0.0' }, own, a.prevResult);
}

async function add(a: Att, options: Record<string, unknown> = {}, trace = false, stateDir?: string) {
  return a.ns.cniExec(
    ANNOUNCER,
    { command: 'ADD', containerId: a.containerId, netns: a.pod.netns.path, ifname: 'eth0' },
    conf(a, options, stateDir),
    { trace },
  );
}

async function del(
  a: Att,
  opts: { trace?: boolean; netns?: boolean; stateDir?: string; options?: Record<string, unknown> } = {},
) {
  const call = {
    command: 'DEL',
    containerId: a.containerId,
    ifname: 'eth0',
    ...(opts.netns === false ? {} : { netns: a.pod.netns.path }),
  };
  return a.ns.cniExec(ANNOUNCER, call, conf(a, opts.options, opts.stateDir), { trace: opts.trace ?? false });
}

async function gc(
  a: Att,
  valid: { containerID: string; ifname: string }[],
  trace = false,
  stateDir = a.files.stateDir,
) {
  const config = {
    cniVersion: '1.1.0',
    name: NETWORK,
    type: 'announcer',
    stateDir,
    logFile: a.files.logFile,
    'cni.dev/valid-attachments': valid,
  };
  return a.ns.cniExec(ANNOUNCER, { command: 'GC' }, config, { trace });
}

/** The pod netns file's identity, as the plugin records it. */
async function netnsId(a: Att): Promise<{ dev: number; ino: number }> {
  const st = await stat(a.pod.netns.path);
  return { dev: st.dev, ino: st.ino };
}

/**
 * The namespaces of a caller in `ns` as records carry them (`caller`): the pid namespace's own mount namespace (an
 * announcer started there can re-open it) and the node's network namespace.
 */
async function callerIn(ns: PidNamespace): Promise<Record<string, { dev: number; ino: number }>> {
  const id = async (kind: string) => {
    const st = await stat(`/proc/${ns.initPid}/ns/${kind}`);
    return { dev: st.dev, ino: st.ino };
  };
  return { mnt: await id('mnt'), net: await id('net') };
}

/** The attachment's identity, as records and jobs carry it, of a caller in `ns`. */
async function identity(a: Att, ns: PidNamespace): Promise<Record<string, unknown>> {
  const ids = { netnsId: await netnsId(a), caller: await callerIn(ns) };
  return { network: NETWORK, containerId: a.containerId, ifname: 'eth0', netns: a.pod.netns.path, ...ids };
}

/** A valid record of the attachment (no job) made by a caller in `ns`, with `extra` fields on top. */
async function recordWith(a: Att, extra: Record<string, unknown> = {}, ns = a.ns): Promise<string> {
  return JSON.stringify({ ...(await identity(a, ns)), originalMacs: [], ...extra });
}

/** A valid background job for the attachment, of a caller in `ns`: round 1 just sent, rounds 2.. every `intervalMs`. */
async function jobFor(a: Att, intervalMs = 800, rounds = 4, ns = a.ns): Promise<Record<string, unknown>> {
  const now = bootMs();
  return {
    ...(await identity(a, ns)),
    interfaces: [{ name: 'eth0', ipv4: [a.ip], ipv6: [] }],
    hostPeerNames: [],
    arpOps: ['request'],
    schedule: Array.from({ length: rounds }, (_, i) => i * intervalMs),
    firstRoundAt: now,
    readyDeadline: now + 60_000,
    logFile: a.files.logFile,
    logLevel: 'debug',
    idleExitMs: IDLE_EXIT_MS,
  };
}

/** Writes `text` as the attachment's record in `dir`. */
async function plant(a: Att, text: string, dir = a.files.stateDir): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${a.containerId}@eth0.json`);
  await writeFile(file, text, { mode: 0o600 });
  return file;
}

/** The warning for a record that cannot be read (src/announce/state.ts). */
const INVALID_RECORD = 'invalid state record: removing it without acting on it';

/** The attachment's `DEL done` records with these outcomes (a RegExp matches the field's text). */
function delDone(a: Att, background: string | RegExp, macsRestored: string) {
  const fields = { containerId: a.containerId, ifname: 'eth0', background, macsRestored, recordRemoved: true };
  return a.files.logged('info', 'DEL done', fields);
}

describe.skipIf(skipIntegration())('hostile state: records, stateDir, races', () => {
  const scope = scopePerTest();

  const delGCAndTitle =
    'DEL, GC and a repeated ADD signal nothing, whatever the record holds; ' +
    'an invalid one is removed, never acted on';
  describe(delGCAndTitle, () => {
    // Records name no process. Fields that would name one (a pid of -1 meant kill(-1) to a careless reader) are
    // unknown fields, ignored; whatever they hold, nothing is signalled.
    const cases: [string, (a: Att) => Promise<string>, 'valid' | 'invalid'][] = [
      [
        'a record with unknown fields naming processes (pid -1, the namespace init with its start time)',
        async (a) => recordWith(a, { pid: -1, tail: { pid: 1, startTime: await startTimeOf(a.ns.initPid) } }),
        'valid',
      ],
      // The traced announcer started before it was planted: DEL and GC remove it, the repeated ADD replaces it.
      [
        'a valid job carrying pid -1 and a tail of its own',
        async (a) => recordWith(a, { tail: { pid: -1 }, job: { ...(await jobFor(a)), pid: -1, tail: { pid: 0 } } }),
        'valid',
      ],
      ['only {"tail":{"pid":-1}}', async () => '{"tail":{"pid":-1}}', 'invalid'],
      ['garbage JSON', async () => '{"containerId": "x", "tail": {"pid": -1', 'invalid'],
      [
        'a job whose netns is a relative path',
        async (a) => recordWith(a, { job: { ...(await jobFor(a)), netns: 'pod' } }),
        'invalid',
      ],
      [
        'a job with an unknown ARP op',
        async (a) => recordWith(a, { job: { ...(await jobFor(a)), arpOps: ['both'] } }),
        'invalid',
      ],
      [
        'a job without the netns identity',
        async (a) => recordWith(a, { job: { ...(await jobFor(a)), netnsId: undefined } }),
        'invalid',
      ],
      [
        'a record of another attachment under this name',
        async (a) => recordWith(a, { containerId: `${a.containerId}-other` }),
        'invalid',
      ],
    ];
    for (const [name, makeRecord, validity] of cases) {
      it(name, async () => {
        const a = await attachment(scope(), 'bad');
        // Started before the record is planted: it reads the record only when a command comes.
        const announcer = await a.ns.traceAnnouncer(ANNOUNCER, a.files.stateDir);
        const file = await plant(a, await makeRecord(a));
        const d = await del(a, { trace: true });
        assertCniOk('DEL', d);
        expect(d.signals).toEqual([]);
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        await plant(a, await makeRecord(a));
        const g = await gc(a, [], true);
        assertCniOk('GC', g);
        expect(g.signals).toEqual([]);
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        await plant(a, await makeRecord(a));
        // idleExitMs well past the checks below: the traced announcer must still run when stop() comes,
        // however loaded the machine (with the tests' 500 ms it once idle-exited first).
        const r = await add(a, { count: 1, idleExitMs: 60_000 }, true);
        assertCniOk('ADD', r);
        expect(r.signals).toEqual([]);
        // count 1 and no MAC change: nothing to record; the planted record is gone.
        expect(await stateFiles(a.files.stateDir)).toEqual([]);

        expect(await announcer.stop()).toEqual([]);
        expect(await a.ns.signalsSeen()).toEqual([]);
        const invalid = await a.files.logged('warn', INVALID_RECORD);
        expect(invalid).toHaveLength(validity === 'invalid' ? 3 : 0);
        if (validity === 'invalid') expect(invalid.map((r) => r.fields.file)).toContain(file);
        // A valid record is acted on for what it holds (its job cancelled), its unknown fields never.
        else expect(await delDone(a, /^(none|not running|cancelled)$/, 'none')).toHaveLength(1);
        expect(await daemonsOf(a.files.stateDir)).toEqual([]);
      });
    }

    const backgroundAnnouncerDropsTitle =
      'the background announcer drops an invalid job and sends nothing for it, while it runs ' +
      'a valid one carrying tail-era fields; it signals nothing';
    it(backgroundAnnouncerDropsTitle, async () => {
      const valid = await attachment(scope(), 'okjob');
      const s = valid.s;
      const invalid = await attachment(s, 'badjob');
      const starter = await attachment(s, 'start');
      const dir = valid.files.stateDir;
      const captures = [
        await startCapture(s, { netns: valid.pod.netns.name, iface: valid.pod.peer }),
        await startCapture(s, { netns: invalid.pod.netns.name, iface: invalid.pod.peer }),
      ];
      const junk = { tail: { pid: -1 }, pid: 1 };
      const validJob = { ...(await jobFor(valid, 600, 10, starter.ns)), ...junk };
      await plant(valid, await recordWith(valid, { ...junk, job: validJob }, starter.ns), dir);
      // The same job with one bad field: the ARP op "both" is not a wire op.
      const invalidJob = { ...(await jobFor(invalid, 600, 10, starter.ns)), arpOps: ['both'] };
      await plant(invalid, await recordWith(invalid, { job: invalidJob }, starter.ns), dir);
      // The announcer, under strace for its whole life, reads every record as it starts; an ADD of a third attachment
      // goes to it.
      const announcer = await starter.ns.traceAnnouncer(ANNOUNCER, dir);
      const call = { command: 'ADD', containerId: starter.containerId, netns: starter.pod.netns.path, ifname: 'eth0' };
      const started = await starter.ns.cniExec(ANNOUNCER, call, conf(starter, { count: 3, intervalMs: 500 }, dir), {
        trace: true,
      });
      await waitFor(async () => (await captures[0]!.count()) >= 2, { what: 'rounds of the valid job' });
      await sleep(1500);
      const [validFrames, invalidFrames] = await Promise.all(captures.map((c) => c.stop()));
      assertCniOk('ADD', started);
      expect(started.signals).toEqual([]);
      expect(garpsFor(validFrames!, valid.pod.mac, valid.ip).length).toBeGreaterThanOrEqual(2);
      expect(garpsFor(invalidFrames!, invalid.pod.mac, invalid.ip)).toEqual([]);
      expect(invalidFrames!.filter((f) => f.eth.src === invalid.pod.mac)).toEqual([]);
      // GC (nothing is live here) removes all three records: the invalid one as invalid.
      assertCniOk('GC', await gc(valid, []));
      expect(await stateFiles(dir)).toEqual([]);
      expect(await valid.files.logged('warn', INVALID_RECORD)).not.toEqual([]);
      expect(await announcer.stop()).toEqual([]);
      expect(await starter.ns.signalsSeen()).toEqual([]);
      expect(await daemonsOf(dir)).toEqual([]);
    });
  });

  describe('stateDir', () => {
    const ownedByAnotherTitle =
      'owned by another uid at mode 1777 with symlinks planted: ADD 105 and STATUS 50 ' +
      'say what to fix, nothing is written through them';
    it(ownedByAnotherTitle, async () => {
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
      expect(r.json.msg).toBe(
        `unsafe stateDir: ${dir} is owned by uid 65534, not root: chown root ${dir} and chmod 0700 ${dir}`,
      );
      const st = await a.ns.cniExec(
        ANNOUNCER,
        { command: 'STATUS' },
        { cniVersion: '1.1.0', name: NETWORK, type: 'announcer', stateDir: dir },
      );
      expect(st.json).toMatchObject({ code: 50 });
      expect(st.json.msg).toContain(`chown root ${dir} and chmod 0700 ${dir}`);
      const d = await del(a, { stateDir: dir });
      assertCniOk('DEL', d);
      expect(d.stderr).toMatch(/DEL did nothing: unsafe stateDir/);
      // GC reports it (code 105, as an announcer that runs GC does): libcni runs every plugin's GC and joins errors.
      const g = await gc(a, [], false, dir);
      expect(g.code).toBe(1);
      expect(g.json).toMatchObject({
        code: 105,
        msg: expect.stringContaining(`chown root ${dir} and chmod 0700 ${dir}`),
      });

      expect(await readFile(victim, 'utf8')).toBe('precious\n');
      // Nothing created either: no announcer socket or lock, and no announcer.
      expect((await stateFiles(dir)).sort()).toEqual(planted.map((p) => p.slice(dir.length + 1)).sort());
      expect(await processesOf(a.containerId)).toEqual([]);
      expect(await daemonsOf(dir)).toEqual([]);
    });

    it('writable by its group: ADD 105 says chmod 0700', async () => {
      const a = await attachment(scope(), 'grp');
      const dir = join(a.files.dir, 'grp');
      await mkdir(dir);
      await chmod(dir, 0o770);
      const r = await add(a, { count: 3 }, false, dir);
      expect(r.json).toMatchObject({
        code: 105,
        msg: `unsafe stateDir: ${dir} is writable by group or others (mode 0770): chmod 0700 ${dir}`,
      });
      expect(await stateFiles(dir)).toEqual([]);
      expect(await daemonsOf(dir)).toEqual([]);
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
        expect(await daemonsOf(dir)).toEqual([]);
      }
      expect(await readFile(file, 'utf8')).toBe('keep');
      expect(await stateFiles(real)).toEqual([]);
    });

    const fullENOSPCOnTitle =
      'full (ENOSPC on a 4 KiB tmpfs): ADD 105, no temporary file or lock left, no job, the MAC unchanged';
    it(fullENOSPCOnTitle, async () => {
      const a = await attachment(scope(), 'full');
      const tiny = join(a.files.dir, 'tiny', 'state');
      // The shim starts the announcer before the ADD it runs fails there (inside the mount namespace, ours by RUN_TAG).
      stopDaemonAtClose(a.s, tiny);
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
      // Nothing of the attachment: only the announcer's own locks and socket.
      const left = (/^left:(.*)$/m.exec(out.stderr)?.[1] ?? 'no listing').split(' ').filter((f) => f !== '');
      const own = ['announcer-daemon.flock', 'announcer-resident.flock', DAEMON_SOCKET];
      expect(left.filter((f) => !own.includes(f))).toEqual([]);
      expect(await processesOf(a.containerId)).toEqual([]);
      expect((await linkShow('eth0', a.pod.netns.name))?.mac).toBe(a.pod.mac);
      // The tmpfs went with the mount namespace: nothing is mounted on the host.
      expect((await run('findmnt', ['-n', '-o', 'TARGET', '-S', 'announcer-enospc'])).stdout.trim()).toBe('');
    });
  });

  describe('one attachment, concurrent commands', () => {
    const delWhileADDTitle =
      'DEL while ADD waits for readiness: DEL waits, then cancels the job ADD ' +
      'recorded; nothing is announced afterwards';
    it(delWhileADDTitle, async () => {
      const a = await attachment(scope(), 'delrace', { up: false });
      const adding = add(a, { count: 3, intervalMs: 1000, addWaitMs: 1500, readyTimeoutMs: 20000 });
      // DEL arrives while ADD waits for readiness (addWaitMs 1500): before ADD has written any record.
      await waitFor(async () => (await processesOf(a.containerId, { now: true })).length > 0, {
        what: 'the ADD process',
      });
      await sleep(500);
      expect(await stateFiles(a.files.stateDir)).not.toContain(`${a.containerId}@eth0.json`);
      const deleting = del(a);
      const [r, d] = await Promise.all([adding, deleting]);
      assertCniOk('ADD', r);
      assertCniOk('DEL', d);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
      const said = logRecords(await a.files.log()).map((r) => r.msg);
      // ADD left the pod to the background (deferred); DEL came after it and found that job.
      const deferred = said.indexOf('pod not ready yet: announcing from the background once it is');
      expect(deferred).toBeGreaterThanOrEqual(0);
      expect(said.indexOf('DEL done')).toBeGreaterThan(deferred);
      expect(await delDone(a, /^(cancelled|not running)$/, 'none')).toHaveLength(1);
      expect((await announcerStatus(a.files.stateDir)).attachments).toEqual([]);
      // The pod comes up now: nobody announces it any more.
      const capture = await startCapture(a.s, { netns: a.pod.netns.name, iface: a.pod.peer });
      await runOk('ip', ['-n', a.pod.netns.name, 'link', 'set', 'eth0', 'up']);
      await sleep(2000);
      expect(garpsFor(await capture.stop(), a.pod.mac, a.ip)).toEqual([]);
      // The ADD ran in the announcer and left it the job's idleExitMs: with the job cancelled, it exits.
      await waitDaemonGone(a.files.stateDir);
    });

    const twoConcurrentADDsTitle =
      'two concurrent ADDs leave exactly one recorded job and one background ' +
      'announcer; after DEL nothing is announced (4 trials)';
    it(twoConcurrentADDsTitle, async () => {
      const a = await attachment(scope(), 'addrace');
      for (let trial = 0; trial < 4; trial++) {
        const [r1, r2] = await Promise.all([
          add(a, { count: 6, intervalMs: 1000 }),
          add(a, { count: 6, intervalMs: 1000 }),
        ]);
        assertCniOk(`ADD 1, trial ${trial}`, r1);
        assertCniOk(`ADD 2, trial ${trial}`, r2);
        const record = JSON.parse(await readFile(join(a.files.stateDir, `${a.containerId}@eth0.json`), 'utf8'));
        expect(record.job.containerId).toBe(a.containerId);
        const mine = (await announcerStatus(a.files.stateDir)).attachments.filter(
          (x) => x.containerId === a.containerId,
        );
        expect(mine, `trial ${trial}`).toHaveLength(1);
        expect((await daemonsOf(a.files.stateDir)).length, `trial ${trial}`).toBe(1);
        const capture = await startCapture(a.s, { netns: a.pod.netns.name, iface: a.pod.peer });
        assertCniOk('DEL', await del(a));
        const afterDel = Date.now();
        expect(await stateFiles(a.files.stateDir)).toEqual([]);
        expect((await announcerStatus(a.files.stateDir)).attachments).toEqual([]);
        await sleep(1500);
        const late = garpsFor(await capture.stop(), a.pod.mac, a.ip).filter((f) => f.time * 1000 > afterDel);
        expect(late, `trial ${trial}`).toEqual([]);
      }
      await waitDaemonGone(a.files.stateDir);
    });
  });

  const recordChanges: [string, (file: string) => Promise<void>][] = [
    ['removing the record', (file) => rm(file)],
    ['replacing it with an invalid one', (file) => writeFile(file, '{"tail":{"pid":-1}}', { mode: 0o600 })],
  ];
  for (const [what, change] of recordChanges) {
    const title =
      `${what} while its burst runs changes nothing the announcer does (its table is the truth, the record its ` +
      'journal): every round goes out, and DEL leaves no file';
    it(title, async () => {
      const a = await attachment(scope(), 'rmrec');
      const capture = await startCapture(scope(), { netns: a.pod.netns.name, iface: a.pod.peer });
      const burst = { count: 4, intervalMs: 400 };
      assertCniOk('ADD', await add(a, burst));
      await waitFor(async () => (await capture.count()) >= 2, { what: 'round 2 from the background announcer' });
      await change(join(a.files.stateDir, `${a.containerId}@eth0.json`));
      await waitFor(async () => (await announcerStatus(a.files.stateDir)).attachments.length === 0, {
        what: 'the burst to end',
      });
      assertCniOk('DEL', await del(a));
      await sleep(500);
      expect(garpsFor(await capture.stop(), a.pod.mac, a.ip)).toHaveLength(burst.count);
      // An invalid record is removed by DEL without acting on it; a removed one is not there to act on.
      expect(await a.files.logged('info', 'DEL: no state record, nothing to undo')).toHaveLength(1);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
    });
  }

  for (const length of [250, 1000]) {
    it(`a ${length}-character CNI_CONTAINERID works: a hashed file name, the full ID in the record`, async () => {
      const id = `${PREFIX}-long-`.padEnd(length, 'a');
      const a = await attachment(scope(), 'long', { containerId: id });
      assertCniOk('ADD', await add(a, { count: 3, intervalMs: 1000 }));
      const files = await stateFiles(a.files.stateDir);
      const name = files.find((f) => f.endsWith('.json'))!;
      expect(name).toMatch(/^sha256-[0-9a-f]{64}\.json$/);
      expect(files).toEqual([name]);
      const record = JSON.parse(await readFile(join(a.files.stateDir, name), 'utf8'));
      expect(record.containerId).toBe(id);
      expect(record.job.containerId).toBe(id);
      // The running announcer (not the records) reports the job, under the full ID.
      const running = await daemonStatus(a.files.stateDir);
      expect(running.attachments.map((x) => x.containerId)).toEqual([id]);
      assertCniOk('DEL', await del(a));
      expect(await delDone(a, 'cancelled', 'none')).toHaveLength(1);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
      expect((await announcerStatus(a.files.stateDir)).attachments).toEqual([]);
      await waitDaemonGone(a.files.stateDir);
    });
  }

  const delAfterBackgroundTitle =
    'DEL after the background announcer was killed: the next announcer takes the job up from the ' +
    'record, DEL cancels it and removes the record; nobody signals anything';
  it(delAfterBackgroundTitle, async () => {
    const a = await attachment(scope(), 'killed');
    assertCniOk('ADD', await add(a, { count: 3, intervalMs: 60_000 }));
    await daemonStatus(a.files.stateDir);
    await killDaemon(a.files.stateDir);
    // The next announcer (the one DEL would start), under strace: it reads the record as it starts.
    const announcer = await a.ns.traceAnnouncer(ANNOUNCER, a.files.stateDir);
    expect((await announcerStatus(a.files.stateDir)).attachments.map((x) => x.containerId)).toEqual([a.containerId]);
    const d = await del(a, { trace: true });
    assertCniOk('DEL', d);
    expect(d.signals).toEqual([]);
    expect(await delDone(a, 'cancelled', 'none')).toHaveLength(1);
    expect(await stateFiles(a.files.stateDir)).toEqual([]);
    expect(await announcer.stop()).toEqual([]);
    expect(await a.ns.signalsSeen()).toEqual([]);
    expect(await daemonsOf(a.files.stateDir)).toEqual([]);
  });

  describe('DEL without CNI_NETNS restores MACs only into the netns they were recorded in', () => {
    it('the netns path now names a new pod: its MAC is left alone', async () => {
      const a = await attachment(scope(), 'reuse');
      assertCniOk('ADD', await add(a, { mac: 'ip-derived' }));
      const derived = (await linkShow('eth0', a.pod.netns.name))!.mac;
      expect(derived).not.toBe(a.pod.mac);
      // The pod goes away and a new pod gets a netns under the same path.
      const name = a.pod.netns.name;
      await runOk('ip', ['netns', 'del', name]);
      await runOk('ip', ['netns', 'add', name]);
      await runOk('ip', ['-n', name, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0']);
      const newMac = (await linkShow('eth0', name))!.mac;
      assertCniOk('DEL', await del(a, { netns: false }));
      expect((await linkShow('eth0', name))?.mac).toBe(newMac);
      const notThere = 'the netns at this path is not the one the MACs were recorded in: not restoring them';
      expect(await a.files.logged('warn', notThere)).toHaveLength(1);
      expect(await delDone(a, /./, 'none')).toHaveLength(1);
      expect(await stateFiles(a.files.stateDir)).toEqual([]);
    });
  });

  it('GC drops invalid records and temp files of dead writers, and keeps live attachments', async () => {
    const a = await attachment(scope(), 'gc');
    assertCniOk('ADD', await add(a, { mac: 'ip-derived' }));
    const live = `${a.containerId}@eth0.json`;
    const dir = a.files.stateDir;
    await writeFile(join(dir, 'other@eth0.json'), '{"tail":{"pid":-1}}', { mode: 0o600 });
    await writeFile(join(dir, '.gone@eth0.json.4194305.deadbeef.tmp'), '{', { mode: 0o600 });
    // GC goes to an announcer under strace (the ADD's, stopped first; this one reads the records as it starts).
    const announcer = await a.ns.traceAnnouncer(ANNOUNCER, dir);
    const g = await gc(a, [{ containerID: a.containerId, ifname: 'eth0' }], true);
    assertCniOk('GC', g);
    expect(g.signals).toEqual([]);
    expect(await announcer.stop()).toEqual([]);
    expect(await a.ns.signalsSeen()).toEqual([]);
    expect(await stateFiles(dir)).toEqual([live]);
    assertCniOk('DEL', await del(a));
    expect(await stateFiles(dir)).toEqual([]);
  });
});
