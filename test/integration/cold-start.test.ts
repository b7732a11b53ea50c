// Cold start under concurrency (issues 18 and 25): with no
// announcer running, 20 ADDs of different pods at once start exactly one
// `announcer daemon <stateDir>` (the start marker, O_EXCL, lets one shim spawn
// it; the others retry the socket), and every ADD succeeds. /proc is sampled
// all through: a second announcer, even one that would give up on the
// announcer's flock a few seconds later, is seen.
import { describe, expect, it } from 'vitest';
import {
  allocSubnet,
  announcerAdd,
  announcerDel,
  attachBridgePod,
  attachmentOf,
  bridgeWithKeeper,
  daemonsOf,
  garpsFor,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitDaemonGone,
  waitFor,
  inBatches,
} from './harness';
import { cleanStart } from './harness/executor-steps';
import { sampleDaemons } from './harness/held-announcer';
import { announcerStatus } from './harness/daemon';

/** Every netns and link this file creates starts with this. */
const PREFIX = `cs${RUN_TAG}`;
const PODS = 20;
const BURST = { count: 2, intervalMs: 500 };

describe.skipIf(skipIntegration())('cold start under concurrency', () => {
  const scope = scopePerTest(PREFIX);

  const addsAtOnceTitle =
    `${PODS} ADDs at once with no announcer running: exactly one announcer starts, every ADD ` +
    `succeeds, ${BURST.count} GARPs per pod`;
  it(addsAtOnceTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const net = allocSubnet();
    const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
    const indexes = Array.from({ length: PODS }, (_, n) => n);
    const podAt = (n: number) =>
      attachBridgePod(s, { prefix: PREFIX, net, bridge, host: 10 + n, containerId: `${PREFIX}-pod${n}`, settle: true });
    const pods = await inBatches(indexes, 5, podAt);
    const atts = pods.map((pod) => attachmentOf(pod, files, { options: { idleExitMs: 1000 } }));
    const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
    expect(await daemonsOf(files.stateDir)).toEqual([]);

    const sampler = sampleDaemons(files.stateDir);
    const added = await Promise.all(atts.map((att) => announcerAdd(s, att, BURST)));
    expect(
      added.map((a) => a.code),
      added.map((a) => a.stdout).join('\n'),
    ).toEqual(atts.map(() => 0));
    // The announcer ran every ADD: no CNI process ran one itself.
    expect((await announcerStatus(files.stateDir)).counters?.served.ADD).toBe(PODS);
    await waitFor(async () => (await capture.count()) >= PODS * BURST.count, {
      timeoutMs: 15_000,
      what: `${PODS * BURST.count} GARPs`,
    }).catch(() => undefined);
    for (const att of atts) expect(await announcerDel(att)).toMatchObject({ code: 0 });
    const seen = await sampler.stop();
    const frames = await capture.stop();

    expect([...seen], 'announcers of the stateDir seen while the ADDs and DELs ran').toHaveLength(1);
    await waitDaemonGone(files.stateDir, 10_000);
    expect(pods.map((pod) => garpsFor(frames, pod.mac, pod.ip).length)).toEqual(pods.map(() => BURST.count));
    for (const [i, pod] of pods.entries())
      expect(ms(garpsFor(frames, pod.mac, pod.ip)[0]!)).toBeLessThanOrEqual(added[i]!.exitedAt);
    expect(await files.stateFiles()).toEqual([]);
  }, 120_000);
});
