// `make install` (issue 2, item 2): one self-contained file at
// $(DESTDIR)/opt/cni/bin/announcer that works with the checkout out of reach.
// Each run of the installed plugin happens in a private mount namespace where
// the checkout and the native-addon cache (/run/cni-announcer) are covered by
// empty tmpfs mounts, so koffi and netlink can only come from the file itself.
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  allocSubnet,
  createStandInPod,
  killStrays,
  listNetns,
  ownAnnouncerProcesses,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  type CniCall,
  type CniOutput,
  type Scope,
} from './harness';
import { cniExecInMountNs } from './harness/mountns-helpers';

/** The checkout, from this file's place in it (test/integration/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PREFIX = `in${RUN_TAG}`;
const VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
const ADDON_CACHE_PARENT = '/run/cni-announcer';
const TRAILER_MARKER = '/*@cni-announcer-addons';

/**
 * Covers the checkout and the addon cache's parent with empty tmpfs mounts and
 * checks they really are empty before the plugin runs. /run/cni-announcer is
 * created first if missing (a mount point must exist; it is the plugin's own
 * default directory).
 */
const HIDE_CHECKOUT = [
  'mount -t tmpfs -o mode=0755 none "$1"',
  `mkdir -p -m 0700 ${ADDON_CACHE_PARENT}`,
  `mount -t tmpfs -o mode=0700 none ${ADDON_CACHE_PARENT}`,
  `if [ -n "$(ls -A "$1")$(ls -A ${ADDON_CACHE_PARENT})" ]; then echo "checkout or addon cache still visible" >&2; exit 97; fi`,
].join('\n');
/** After the plugin: what it extracted into the (private, fresh) addon cache, for the test to read. */
const LIST_CACHE = `ls -1 ${ADDON_CACHE_PARENT}/lib > "$2" 2>&1 || true`;

/** One `name sha256 data` line of the installed file's trailer, decoded. */
interface Payload {
  name: string;
  sha256: string;
  bytes: Buffer;
}

/** The payloads embedded after the trailer marker (brotli-compressed or plain base64), each checked against its SHA-256. */
function payloads(text: string): Payload[] {
  const at = text.lastIndexOf(TRAILER_MARKER);
  if (at < 0) return [];
  return text
    .slice(at)
    .split('\n')
    .map((line) => line.split(' '))
    .filter((parts) => parts.length === 3 && /^[0-9a-f]{64}$/.test(parts[1]!))
    .map(([name, sha256, data]) => {
      const raw = Buffer.from(data!, 'base64');
      let bytes = raw;
      try {
        bytes = brotliDecompressSync(raw);
      } catch {
        // Stored as plain base64.
      }
      return { name: name!, sha256: sha256!, bytes };
    });
}

/** The string arguments of every `require("…")` in JS source. */
function requireLiterals(js: string): string[] {
  return [...js.matchAll(/\brequire\(\s*(["'`])([^"'`]*)\1\s*\)/g)].map((m) => m[2]!);
}

describe.skipIf(skipIntegration())('make install: a self-contained plugin', () => {
  const scope = scopePerTest();
  let destDir: string;
  let installed: string;

  beforeAll(async () => {
    destDir = await mkdtemp(join(tmpdir(), 'announcer-destdir-'));
    const before = await stat(ANNOUNCER);
    // `-o bin/announcer`: install what is built, never rebuild it (others test the same bin/ concurrently).
    const res = await runOk('make', ['-C', ROOT, '--no-print-directory', '-o', 'bin/announcer', 'install', `DESTDIR=${destDir}`]);
    expect(res.stdout).toContain('install -D -m 0755 bin/announcer');
    expect((await stat(ANNOUNCER)).mtimeMs).toBe(before.mtimeMs);
    installed = join(destDir, 'opt/cni/bin/announcer');
  });

  afterAll(async () => {
    if (destDir) await rm(destDir, { recursive: true, force: true });
    await waitFor(async () => (await listNetns()).every((n) => !n.startsWith(PREFIX)), { what: `no netns named ${PREFIX}*` });
    expect(await ownAnnouncerProcesses()).toEqual([]);
  });

  /** A per-test temp dir (state, log, cache listing), removed at scope close, with no announcer process of ours left. */
  async function testDir(s: Scope): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'announcer-install-'));
    s.defer(() => rm(dir, { recursive: true, force: true }), `temp dir ${dir}`);
    killStrays(s, { strict: true });
    return dir;
  }

  /** Runs the installed plugin with the checkout and the addon cache hidden; `listing` receives the cache's contents afterwards. */
  function runIsolated(call: CniCall, config: object, listing: string): Promise<CniOutput> {
    return cniExecInMountNs(installed, { cniPath: dirname(installed), ...call }, config, {
      prelude: HIDE_CHECKOUT,
      args: [ROOT, listing],
      epilogue: LIST_CACHE,
      bareEnv: true,
    });
  }

  it('installs one regular file, mode 0755, a copy of bin/announcer', async () => {
    const all: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(join(dir, e.name));
        else all.push(relative(destDir, join(dir, e.name)));
      }
    };
    await walk(destDir);
    expect(all).toEqual(['opt/cni/bin/announcer']);
    const st = await lstat(installed);
    expect(st.isFile()).toBe(true);
    expect(st.isSymbolicLink()).toBe(false);
    expect(st.mode & 0o7777).toBe(0o755);
    const [mine, built] = await Promise.all([readFile(installed), readFile(ANNOUNCER)]);
    expect(createHash('sha256').update(mine).digest('hex')).toBe(createHash('sha256').update(built).digest('hex'));
    expect(mine.subarray(0, 20).toString('latin1')).toBe('#!/usr/bin/env node\n');
  });

  it('carries koffi and netlink inside it, and requires nothing but Node built-ins', async () => {
    const text = await readFile(installed, 'latin1');
    const embedded = payloads(text);
    expect(embedded.map((p) => p.name)).toEqual(expect.arrayContaining(['koffi', 'netlink']));
    for (const p of embedded) expect(createHash('sha256').update(p.bytes).digest('hex'), p.name).toBe(p.sha256);
    for (const name of ['koffi', 'netlink']) {
      // An ELF shared object (the .node addon).
      expect(embedded.find((p) => p.name === name)!.bytes.subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    }

    // The JS that runs: the file before its trailer, plus any JS payload (a loader may keep the bundle there).
    const sources = [text.slice(0, text.lastIndexOf(TRAILER_MARKER)), ...embedded.filter((p) => p.bytes[0] !== 0x7f).map((p) => p.bytes.toString('utf8'))];
    const builtins = new Set(builtinModules);
    for (const js of sources) {
      expect(js).not.toContain(`${ROOT}/`);
      const required = requireLiterals(js);
      expect(required.filter((r) => r.startsWith('/'))).toEqual([]);
      expect(required.filter((r) => r.includes('node_modules/'))).toEqual([]);
      expect(required.filter((r) => !r.startsWith('node:') && !builtins.has(r))).toEqual([]);
    }
  });

  it('answers VERSION with the checkout out of reach', async () => {
    const dir = await testDir(scope());
    const out = await runIsolated({ command: 'VERSION' }, { cniVersion: '1.0.0' }, join(dir, 'cache.txt'));
    expect(out.code, out.stdout + out.stderr).toBe(0);
    expect(out.json).toEqual({ cniVersion: '1.0.0', supportedVersions: VERSIONS });
  });

  it('answers STATUS (loads koffi) with the checkout and the addon cache out of reach', async () => {
    const dir = await testDir(scope());
    const stateDir = `${ADDON_CACHE_PARENT}/state`; // inside the private tmpfs
    const out = await runIsolated(
      { command: 'STATUS' },
      { cniVersion: '1.1.0', name: `${PREFIX}-net`, type: 'announcer', stateDir },
      join(dir, 'cache.txt'),
    );
    expect([out.code, out.stdout, out.stderr]).toEqual([0, '', '']);
    const koffi = payloads(await readFile(installed, 'latin1')).find((p) => p.name === 'koffi')!;
    expect((await readFile(join(dir, 'cache.txt'), 'utf8')).split('\n')).toContain(`koffi-${koffi.sha256.slice(0, 16)}.node`);
  });

  it('runs a chained ADD on a stand-in pod (loads netlink and koffi) and the gratuitous ARP goes out', async () => {
    const dir = await testDir(scope());
    const net = allocSubnet();
    const pod = await createStandInPod(scope(), { prefix: PREFIX, v4: [net.v4Cidr(5)] });
    const stateDir = join(dir, 'state');
    const prevResult = {
      cniVersion: '1.0.0',
      interfaces: [{ name: pod.ifname, mac: pod.mac, sandbox: pod.netns.path }],
      ips: [{ address: net.v4Cidr(5), interface: 0 }],
    };
    const config = {
      cniVersion: '1.0.0',
      name: `${PREFIX}-net`,
      type: 'announcer',
      count: 1,
      stateDir,
      logFile: join(dir, 'announcer.log'),
      prevResult,
    };
    const capture = await startCapture(scope(), { netns: pod.netns.name, iface: pod.peer, filter: 'arp' });
    const containerId = `${PREFIX}-add`;
    const out = await runIsolated({ command: 'ADD', containerId, netns: pod.netns.path, ifname: pod.ifname }, config, join(dir, 'cache.txt'));
    const frames = await capture.stop();

    expect(out.code, out.stdout + out.stderr).toBe(0);
    expect(out.json).toEqual(prevResult);
    const garps = frames.filter((f) => f.arp?.isGratuitous && f.arp.senderIp === net.v4(5));
    expect(garps).toHaveLength(1);
    expect(garps[0]).toMatchObject({
      eth: { src: pod.mac, dst: 'ff:ff:ff:ff:ff:ff', type: 0x0806 },
      arp: { opcode: 1, senderMac: pod.mac, senderIp: net.v4(5), targetMac: '00:00:00:00:00:00', targetIp: net.v4(5) },
      malformed: false,
    });

    const embedded = payloads(await readFile(installed, 'latin1'));
    const cache = (await readFile(join(dir, 'cache.txt'), 'utf8')).split('\n');
    for (const name of ['koffi', 'netlink']) {
      const sha = embedded.find((p) => p.name === name)!.sha256;
      expect(cache).toContain(`${name}-${sha.slice(0, 16)}.node`);
    }
    // count 1: no background tail, so nothing recorded and nothing left running.
    expect(await readdir(stateDir).catch(() => [])).toEqual([]);
    expect((await ownAnnouncerProcesses()).filter((p) => p.containerId === containerId)).toEqual([]);
  });
});
