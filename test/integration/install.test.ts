// `make install`: one self-contained ELF executable at
// $(DESTDIR)/opt/cni/bin/announcer that works where nothing else is there. Each
// run of the installed plugin happens in a private mount namespace, "sealed":
// - no `node`, `nodejs` or `bun` can be executed from any PATH directory
//   (/dev/null is bind-mounted over each one, and the prelude checks that none runs);
// - the checkout is covered by an empty tmpfs;
// - /tmp and /dev/shm are fresh, empty tmpfs mounts, listed after the run:
//   nothing may be left there (koffi's addon goes to an anonymous file);
// - the plugin's state dir is a private tmpfs of its own.
// The installed file lives under /var/tmp, outside everything covered.
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  allocSubnet,
  ANNOUNCER,
  killStrays,
  leftoversAfterTeardown,
  neighEntry,
  ownAnnouncerProcesses,
  run,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  stalePod,
  waitFor,
  type CniCall,
  type CniOutput,
  type Scope,
  stopDaemonAtClose,
  tempDir,
} from './harness';
import { DEFAULT_STATE_DIR } from '../../src/cni/option-bounds';
import { cniExecInMountNs } from './harness/mountns-helpers';
import { bunfsNames, elfHeader, EM_X86_64 } from './harness/elf';

/** The checkout, from this file's place in it (test/integration/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = `in${RUN_TAG}`;
const VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
const VERSION = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version as string;
const ABOUT = `CNI announcer plugin v${VERSION}\nCNI protocol versions supported: ${VERSIONS.join(', ')}\n`;

/**
 * The sealing prelude. `$1` the checkout, `$2` the test's dir (outside all that
 * is covered), `$3` the plugin's private state tmpfs. With `noexec`, /dev/shm
 * and /tmp are mounted noexec and /run is made read-only and noexec (its
 * submounts, the netns files, kept): koffi's addon must then come from the
 * binary's own directory.
 */
function seal(opts: { noexec?: boolean } = {}): string {
  const x = opts.noexec ? ',noexec' : '';
  return [
    // A checkout under /tmp (or /dev/shm) is covered by their fresh tmpfs below.
    'case "$1" in /tmp/*|/dev/shm/*) ;; *) mount -t tmpfs -o mode=0755 none "$1" ;; esac',
    `mount -t tmpfs -o mode=1777${x} none /tmp`,
    `mount -t tmpfs -o mode=1777${x} none /dev/shm`,
    'mount -t tmpfs -o mode=0700 none "$3"',
    ...(opts.noexec ? ['mount --rbind /run /run', 'mount -o remount,bind,ro,noexec,nosuid,nodev /run'] : []),
    'for d in $(echo "$PATH" | tr : " "); do',
    '  for n in node nodejs bun; do if [ -e "$d/$n" ]; then mount --bind /dev/null "$d/$n"; fi; done',
    'done',
    'for n in node nodejs bun; do if "$n" --version >/dev/null 2>&1; then echo "$n still runs" >&2; exit 97; fi; done',
    'for d in "$1" /tmp /dev/shm "$3"; do if [ -e "$d" ] && [ -n "$(ls -A "$d")" ]; then echo "$d is not ' +
      'empty" >&2; exit 97; fi; done',
  ].join('\n');
}

/** After the plugin: what it left in /tmp and /dev/shm, for the test to read. */
const LIST_LEFTOVERS = 'ls -A /tmp /dev/shm > "$2/leftovers.txt" 2>&1 || true';

describe.skipIf(skipIntegration())('make install: a self-contained executable', () => {
  const scope = scopePerTest();
  let destDir: string;
  let installed: string;

  beforeAll(async () => {
    // Not under /tmp: the sealed runs cover /tmp.
    destDir = await mkdtemp('/var/tmp/announcer-destdir-');
    const before = await stat(ANNOUNCER);
    // `-o bin/announcer`: install what is built, never rebuild it (others test the same bin/ concurrently).
    const make = ['-C', ROOT, '--no-print-directory', '-o', 'bin/announcer', 'install', `DESTDIR=${destDir}`];
    const res = await runOk('make', make);
    expect(res.stdout).toContain('install -D -m 0755 bin/announcer');
    expect((await stat(ANNOUNCER)).mtimeMs).toBe(before.mtimeMs);
    installed = join(destDir, 'opt/cni/bin/announcer');
  });

  afterAll(async () => {
    if (destDir) await rm(destDir, { recursive: true, force: true });
    expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
    expect(await ownAnnouncerProcesses()).toEqual([]);
  });

  /**
   * A per-test dir under /var/tmp (leftover listing, state mount point), removed at scope close; no announcer process
   * of ours left.
   */
  async function testDir(s: Scope): Promise<{ dir: string; stateDir: string }> {
    const dir = await tempDir(s, 'announcer-install-', '/var/tmp');
    killStrays(s, { strict: true });
    await runOk('mkdir', ['-m', '0700', join(dir, 'state')]);
    stopDaemonAtClose(s, join(dir, 'state')); // every command leaves the announcer of its stateDir running
    return { dir, stateDir: join(dir, 'state') };
  }

  /** Runs the installed plugin sealed; `dir` receives the leftover listing. */
  function runSealed(
    call: CniCall,
    config: object,
    dir: string,
    opts: { noexec?: boolean; cwd?: string; pluginArgs?: string[]; prelude?: string } = {},
  ): Promise<CniOutput> {
    return cniExecInMountNs(installed, { cniPath: dirname(installed), ...call }, config, {
      prelude: [seal(opts), opts.prelude ?? ''].join('\n'),
      args: [ROOT, dir, join(dir, 'state')],
      epilogue: LIST_LEFTOVERS,
      bareEnv: true,
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      ...(opts.pluginArgs ? { pluginArgs: opts.pluginArgs } : {}),
    });
  }

  /** What the sealed run left in /tmp and /dev/shm. */
  async function leftInTmp(dir: string): Promise<string[]> {
    // `ls -A /tmp /dev/shm` prints a "/tmp:" and a "/dev/shm:" header and the entries under each.
    return (await readFile(join(dir, 'leftovers.txt'), 'utf8')).split('\n').filter((l) => l !== '' && !l.endsWith(':'));
  }

  it('installs one regular file, mode 0755, a copy of bin/announcer: an x86-64 ELF executable', async () => {
    const all: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(join(d, e.name));
        else all.push(relative(destDir, join(d, e.name)));
      }
    };
    await walk(destDir);
    expect(all).toEqual(['opt/cni/bin/announcer']);
    const st = await lstat(installed);
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o7777).toBe(0o755);
    const [mine, built] = await Promise.all([readFile(installed), readFile(ANNOUNCER)]);
    expect(createHash('sha256').update(mine).digest('hex')).toBe(createHash('sha256').update(built).digest('hex'));
    const x64 = { type: 'executable', machine: EM_X86_64, interpreter: '/lib64/ld-linux-x86-64.so.2' };
    expect(elfHeader(mine)).toEqual(x64);
  });

  const carriesKoffiAsTitle =
    'carries koffi as a plain asset, no native module for Bun to extract, none ' +
    "of koffi's JS entry, and no path of the checkout";
  it(carriesKoffiAsTitle, async () => {
    const text = (await readFile(installed)).toString('latin1');
    const koffi = JSON.parse(await readFile(join(ROOT, 'node_modules/koffi/package.json'), 'utf8')).version as string;
    const embedded = bunfsNames(text);
    expect(embedded).toContainEqual(
      expect.stringMatching(
        new RegExp(`^/\\$bunfs/root/koffi-${koffi.replaceAll('.', '\\.')}-linux-x64-\\w+\\.addon$`),
      ),
    );
    expect(embedded.filter((p) => p.endsWith('.node'))).toEqual([]);
    // (Never hand the 100 MB text itself to expect: a failure message would try to print it.)
    expect(text.includes(`${ROOT}/`), `${ROOT}/ in the binary`).toBe(false);
    // koffi's entry would search node_modules for an addon; the bundle takes the embedded one's exports.
    const entry = await readFile(join(ROOT, 'node_modules/koffi/src/koffi/index.js'), 'utf8');
    const marker = 'Cannot find the native Koffi module';
    expect(entry.includes(marker), `koffi's entry still says "${marker}"`).toBe(true);
    expect(text.includes(marker), "koffi's entry in the binary").toBe(false);
  });

  const loadsKoffiAddonTitle =
    "loads koffi's addon from the bytes it carries, through an anonymous file: no path of an addon is ever opened";
  it(loadsKoffiAddonTitle, async () => {
    const dir = await mkdtemp(join('/var/tmp', 'announcer-strace-'));
    try {
      const trace = join(dir, 'trace');
      // `status` loads koffi (libc) to ask for a background announcer; none runs in this empty stateDir.
      const status = [installed, 'status', '--json', '--state-dir', join(dir, 'state')];
      const res = await run('strace', ['-f', '-e', 'trace=openat,open', '-o', trace, ...status], { inheritEnv: false });
      expect(res.code, res.stderr).toBe(0);
      const opens = (await readFile(trace, 'utf8')).split('\n').filter((l) => /\bopen(at)?\(/.test(l));
      // The embedded asset is read from Bun's memory (no open); the one file the addon is written to has no name.
      const anonymous = opens.filter((l) => /O_TMPFILE/.test(l));
      expect(anonymous).toHaveLength(1);
      expect(anonymous[0]).not.toMatch(/= -1 /);
      expect(opens.filter((l) => /koffi|\.addon"|\.node"|bunfs/.test(l))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  const answersVERSIONSealedTitle =
    'answers VERSION sealed, leaves /tmp and /dev/shm empty, and ignores a ' +
    'bunfig.toml preload and a .env in its working directory';
  it(answersVERSIONSealedTitle, async () => {
    const { dir } = await testDir(scope());
    // A plugin runs as root in the runtime's working directory: Bun's autoloads must be off.
    const hostile = [
      'mkdir -p "$2/cwd"',
      `printf 'preload = ["./preload.js"]\\n' > "$2/cwd/bunfig.toml"`,
      `printf 'require("fs").writeFileSync("%s/pwned", "")\\n' "$2" > "$2/cwd/preload.js"`,
      `printf 'CNI_CONTAINERID=${PREFIX}-dotenv\\nCNI_IFNAME=eth0\\n' > "$2/cwd/.env"`,
    ].join('\n');
    const cwd = join(dir, 'cwd');
    const version = await runSealed({ command: 'VERSION' }, { cniVersion: '1.0.0' }, dir, { prelude: hostile, cwd });
    expect(version.code, version.stdout + version.stderr).toBe(0);
    expect(version.json).toEqual({ cniVersion: '1.0.0', supportedVersions: VERSIONS });
    expect(version.stderr).toBe('');
    expect(await leftInTmp(dir)).toEqual([]);
    expect(await readdir(dir)).not.toContain('pwned');
    // Were .env loaded, it would supply the ids this DEL lacks. Without a stateDir it goes to the
    // announcer of the default one, started inside the sealed mount namespace (ours by RUN_TAG).
    stopDaemonAtClose(scope(), DEFAULT_STATE_DIR);
    const del = await runSealed(
      { command: 'DEL' },
      { cniVersion: '1.0.0', name: `${PREFIX}-net`, type: 'announcer' },
      dir,
      { prelude: hostile, cwd },
    );
    expect(del.code).toBe(1);
    expect(del.json).toMatchObject({ code: 4, msg: expect.stringContaining('CNI_CONTAINERID') });
    expect(await readdir(dir)).not.toContain('pwned');
  });

  const sealedWithoutCNITitle =
    'sealed, without CNI_COMMAND prints the about text to stderr and exits 0; --version prints it to stdout';
  it(sealedWithoutCNITitle, async () => {
    const { dir } = await testDir(scope());
    const about = await runSealed({ command: '' }, {}, dir);
    expect([about.code, about.stdout, about.stderr]).toEqual([0, '', ABOUT]);
    const version = await runSealed({ command: '' }, {}, dir, { pluginArgs: ['--version'] });
    expect([version.code, version.stderr]).toEqual([0, '']);
    expect(version.stdout).toMatch(
      new RegExp(
        `^${ABOUT.replace(/[.()]/g, '\\$&')}Build: [0-9a-f]{16}\nThird-party licences: ` +
          `THIRD_PARTY_NOTICES, shipped next to this executable\n$`,
      ),
    );
    expect(await leftInTmp(dir)).toEqual([]);
  });

  for (const noexec of [false, true]) {
    const where = noexec ? ' with /dev/shm, /tmp and /run noexec (/run also read-only)' : '';
    it(`repairs a planted stale entry with a real ADD chained after the bridge plugin, sealed${where}`, async () => {
      const { dir, stateDir } = await testDir(scope());
      const net = allocSubnet();
      const containerId = `${PREFIX}-add${noexec ? '-noexec' : ''}`;
      const pod = await stalePod(scope(), { prefix: PREFIX, net, containerId });
      const { bridge, netns: podNs, result, conf, mac: podMac } = pod;
      expect(await neighEntry(bridge, net.v4(5))).toEqual({ state: 'STALE', states: ['STALE'], mac: OLD_MAC });
      // count 1: no background announcer. The state dir is the private tmpfs, gone with the namespace.
      const config = { type: 'announcer', count: 1, stateDir, name: conf.name, cniVersion: conf.cniVersion };
      const call = { command: 'ADD', containerId, netns: podNs.path, ifname: 'eth0' };

      const out = await runSealed(call, { ...config, prevResult: result }, dir, { noexec });
      const entry = await neighEntry(bridge, net.v4(5));

      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.json).toEqual(result);
      expect(entry?.mac, `entry ${entry?.state}`).toBe(podMac);
      expect((await run('ping', ['-c1', '-W2', net.v4(5)])).code).toBe(0);
      expect(await leftInTmp(dir)).toEqual([]);
      await waitFor(async () => (await ownAnnouncerProcesses()).every((p) => p.containerId !== containerId), {
        what: `no announcer process left for ${containerId}`,
      });
    });
  }
});
