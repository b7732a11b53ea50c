// The arm64 build, bin/announcer-arm64, run for real under qemu-user: VERSION,
// then the stale-entry scenario (bridge-ipv4.test.ts) with the arm64 plugin
// chained after the real bridge plugin. ADD repairs the entry with a GARP from
// the pod; the background announcer it starts (the arm64 binary again, through
// the same qemu) sends the second round; DEL leaves nothing behind. The GARPs
// are judged by tshark.
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOUNCER_ARM64,
  QEMU_AARCH64,
  QEMU_ANNOUNCER,
  QEMU_ENV,
  allocSubnet,
  announcerAdd,
  attachmentOf,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  arm64Missing,
  daemonsOf,
  killStrays,
  neighEntry,
  runCniCommand,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  skipUnless,
  startCapture,
  stalePod,
  waitFor,
  waitLogged,
} from './harness';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Every netns and link this file creates starts with this. */
const PREFIX = `a6${RUN_TAG}`;
/** A first build fetches ~50 MB packages. */
const BUILD_TIMEOUT_MS = 600_000;
/**
 * The second round's distance from the first: a background announcer under
 * qemu takes seconds to start (a native one, milliseconds), and a round it
 * takes over more than a second late is skipped, not sent (src/daemon/rounds.ts, LATE_GRACE_MS).
 */
const ROUND_GAP_MS = 20_000;

describe.skipIf(skipIntegration() || skipUnless('qemu-user and the arm64 libraries', arm64Missing()))(
  'bin/announcer-arm64 under qemu-user',
  () => {
    const scope = scopePerTest(PREFIX);

    beforeAll(async () => {
      // `make test` built it already; run alone, this file builds it (make does nothing when it is up to date).
      await runOk('make', ['-C', ROOT, '--no-print-directory', 'bin/announcer-arm64'], { timeoutMs: BUILD_TIMEOUT_MS });
    }, BUILD_TIMEOUT_MS);

    it('answers VERSION', async () => {
      const out = await runCniCommand(
        QEMU_AARCH64,
        [ANNOUNCER_ARM64],
        { command: 'VERSION', env: { ...QEMU_ENV } },
        { cniVersion: '1.0.0' },
      );
      expect(out.code, out.stderr).toBe(0);
      expect(out.json).toEqual({
        cniVersion: '1.0.0',
        supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
      });
    });

    it(
      'chained after the bridge plugin: ADD repairs the stale entry, its background announcer runs ' +
        'through qemu and sends round 2, DEL leaves nothing',
      async () => {
        killStrays(scope(), { strict: true });
        const files = await announcerFiles(scope());
        const net = allocSubnet();
        const ip = net.v4(5);
        const pod = await stalePod(scope(), { prefix: PREFIX, net, containerId: `${PREFIX}-arm64` });
        const { bridge } = pod;
        const capture = await startCapture(scope(), { iface: pod.hostVeth, filter: 'arp' });
        const options = { count: 2, intervalMs: ROUND_GAP_MS };
        const attachment = { ...attachmentOf(pod, files, { options }), command: QEMU_ANNOUNCER };

        const add = await announcerAdd(scope(), attachment);
        const entry = await neighEntry(bridge, ip);
        expect(add.code, `${add.stdout}${add.stderr}`).toBe(0);
        expect(add.json).toEqual(pod.result);
        expect(entry?.mac, `node entry for ${ip} (${entry?.state})`).toBe(pod.mac);

        const [daemon] = await waitFor(
          async () => {
            const found = await daemonsOf(files.stateDir);
            return found.length > 0 && found;
          },
          { timeoutMs: ROUND_GAP_MS, what: `the background announcer of ${files.stateDir}` },
        );
        expect([basename(daemon!.argv[0]!), ...daemon!.argv.slice(1, 3)]).toEqual([
          QEMU_AARCH64,
          ANNOUNCER_ARM64,
          'daemon',
        ]);
        await waitLogged(files, 'info', 'announced', { round: 2 }, { timeoutMs: 2 * ROUND_GAP_MS });
        const garps = (await capture.stop()).filter((f) => f.eth.src === pod.mac);

        expect(await files.logged('info', 'announced', { round: 1 })).toHaveLength(1);
        expect(garps.map((f) => ({ dst: f.eth.dst, arp: f.arp, malformed: f.malformed }))).toEqual(
          [1, 2].map(() => ({
            dst: 'ff:ff:ff:ff:ff:ff',
            arp: {
              opcode: 1,
              senderMac: pod.mac,
              senderIp: ip,
              targetMac: '00:00:00:00:00:00',
              targetIp: ip,
              isGratuitous: true,
            },
            malformed: false,
          })),
        );
        expect(await announcerDel(attachment)).toMatchObject({ code: 0, stdout: '' });
        expect(await announcerLeftovers(files)).toEqual([]);
      },
      4 * ROUND_GAP_MS + 60_000,
    );
  },
);
