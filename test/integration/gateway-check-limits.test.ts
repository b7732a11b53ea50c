// The gateway check's limits (issue 26): a gateway that never answers
// (report: ADD returns, the verdict says so after the bounded asks; require:
// ADD fails within gatewayCheckMs and leaves nothing), the opt-out (nothing on
// the wire at all), a network that routes nothing (no frame of the check),
// and the node-wide rate limit (the check's frames are within it).
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  attachmentOf,
  busiestSecond,
  garpsFor,
  linkShow,
  ms,
  RUN_TAG,
  runOk,
  scopePerTest,
  setSysctl,
  skipIntegration,
  startCapture,
  announcerAdd,
  type Frame,
} from './harness';
import {
  addCaptured,
  arpRequestsTo,
  BURST,
  burstOver,
  gatewayNetwork,
  finalVerdict,
  GATEWAY_HOST,
  nsTo,
  routedPod,
} from './harness/gateway';
import type { BridgePod } from './harness/bridge-pods';
import { recordName } from '../../src/state-files';

const PREFIX = `gl${RUN_TAG}`;
/** Where no host answers. */
const SILENT_HOST = 253;

/** Every frame of ARP, NS and NA from `mac`: what the announcer and its check send. */
function everythingFrom(frames: readonly Frame[], mac: string): Frame[] {
  return frames.filter((f) => f.eth.src === mac && (f.arp !== undefined || [135, 136].includes(f.icmpv6?.type ?? 0)));
}

const NO_ANSWER_REPORT =
  '(d) report: a gateway that never answers is asked once per round, ADD succeeds, status says "no answer"';
const NO_ANSWER_REQUIRE =
  '(d) require: ADD fails with code 107 within gatewayCheckMs plus a margin; the MAC is restored, no record, no job';
const NOTHING_ROUTED =
  '(g0) a network that routes nothing (a gateway field alone): no frame of the check, "no routed gateway" logged';

const UNREPORTED_ROUTE = "(g0') a next hop only the pod's routing table has (prevResult routes nothing): asked too";

describe.skipIf(skipIntegration())('gateway check: no answer, opt-out, nothing routed, rate limit', () => {
  const scope = scopePerTest(PREFIX);

  it(NO_ANSWER_REPORT, async () => {
    const s = scope();
    const { net, bridge } = await gatewayNetwork(s, { prefix: PREFIX });
    const silent = net.v4(SILENT_HOST);
    const pod = await routedPod(s, { prefix: PREFIX, net, bridge, via: { v4: silent } });
    const { files, capture, add } = await addCaptured(s, pod, { gatewayCheck: 'report', gatewayCheckMs: 200 });
    expect(add.code, add.stdout).toBe(0);
    const verdict = await finalVerdict(files, pod.containerId);
    const frames = await capture.stop();
    expect(verdict).toMatchObject({
      result: 'no-answer',
      answered: [],
      unanswered: [{ interface: 'eth0', gateway: silent }],
      asks: BURST.count,
    });
    expect(verdict.node).toEqual([{ interface: 'eth0', seen: expect.objectContaining({ fdb: expect.anything() }) }]);
    expect(arpRequestsTo(frames, pod.mac, silent)).toHaveLength(BURST.count);
    const noAnswer = `gateway check: no answer from ${silent} (eth0) after ${BURST.count} asks`; // as the docs quote it
    expect(await files.logged('info', noAnswer)).toHaveLength(1);
  }, 60_000);

  it(NO_ANSWER_REQUIRE, async () => {
    const s = scope();
    const { net, bridge } = await gatewayNetwork(s, { prefix: PREFIX });
    const silent = net.v4(SILENT_HOST);
    const pod = await routedPod(s, { prefix: PREFIX, net, bridge, via: { v4: silent } });
    // The kernel's own GARP on the MAC change (the bridge plugin sets arp_notify) is not ours.
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);
    const windowMs = 500;
    const t0 = Date.now();
    const options = { gatewayCheck: 'require', gatewayCheckMs: windowMs, mac: 'ip-derived' };
    const { files, capture, add } = await addCaptured(s, pod, options);
    const took = Date.now() - t0;
    await burstOver();
    const frames = await capture.stop();
    console.info(`(d) require: ADD failed after ${took} ms (gatewayCheckMs ${windowMs})`);
    expect(add.code).not.toBe(0);
    expect(add.json).toMatchObject({
      code: 107,
      msg: expect.stringContaining(`gateway ${silent} (eth0) did not answer`),
    });
    expect(took).toBeLessThan(windowMs + 3000);
    // Round 1 and the one request went out; nothing after the failure.
    const derived = (await linkShow('eth0', pod.netns.name))?.mac;
    expect(derived).toBe(pod.mac);
    // From the IP-derived MAC ADD had set: one request, and round 1 before it.
    const asked = frames.filter((f) => f.arp?.opcode === 1 && f.arp.senderIp === pod.ip && f.arp.targetIp === silent);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.eth.src).not.toBe(pod.mac);
    expect(garpsFor(frames, asked[0]!.eth.src, pod.ip)).toHaveLength(1);
    expect(existsSync(`${files.stateDir}/${recordName(pod.containerId, 'eth0')}`)).toBe(false);
    expect(await announcerDel(attachmentOf(pod, files))).toMatchObject({ code: 0 });
    expect(await announcerLeftovers(files)).toEqual([]);
  }, 60_000);

  it('(f) opt-out (enabled=false): nothing on the wire, not even the check', async () => {
    const s = scope();
    const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX });
    const pod = await routedPod(s, { prefix: PREFIX, net, bridge });
    const optOut = { gatewayCheck: 'require', args: { cni: { announce: { enabled: false } } } };
    const { capture, add } = await addCaptured(s, pod, optOut);
    expect(add.code, add.stdout).toBe(0);
    await burstOver();
    const frames = await capture.stop();
    expect(everythingFrom(frames, pod.mac)).toEqual([]);
    expect(arpRequestsTo(frames, pod.mac, gw.v4)).toEqual([]);
  }, 60_000);

  it(NOTHING_ROUTED, async () => {
    const s = scope();
    const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX });
    const pod = await routedPod(s, { prefix: PREFIX, net, bridge, via: null });
    const { files, capture, add } = await addCaptured(s, pod, { gatewayCheck: 'report' });
    expect(add.code, add.stdout).toBe(0);
    await burstOver();
    const frames = await capture.stop();
    // Said once, in the log and the counters; nothing to keep in status or the record.
    const noGateway = 'gateway check: no routed gateway: nothing sent';
    expect(await files.logged('info', noGateway, { containerId: pod.containerId })).toHaveLength(1);
    expect(garpsFor(frames, pod.mac, pod.ip)).toHaveLength(BURST.count);
    expect(arpRequestsTo(frames, pod.mac, gw.v4)).toEqual([]);
    expect(nsTo(frames, pod.mac, net.v6(GATEWAY_HOST))).toEqual([]);
  }, 60_000);

  it(UNREPORTED_ROUTE, async () => {
    const s = scope();
    const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX });
    const pod = await routedPod(s, { prefix: PREFIX, net, bridge, via: null });
    // What a main plugin may do without saying so in its result: the pod's own table routes through the gateway.
    await runOk('ip', ['-n', pod.netns.name, 'route', 'add', 'default', 'via', gw.v4, 'dev', 'eth0']);
    const { files, capture, add } = await addCaptured(s, pod, { gatewayCheck: 'report' });
    expect(add.code, add.stdout).toBe(0);
    const verdict = await finalVerdict(files, pod.containerId);
    const frames = await capture.stop();
    expect(verdict).toMatchObject({ result: 'answered', unanswered: [] });
    expect(verdict.answered.map((a) => [a.gateway, a.mac])).toEqual([[gw.v4, gw.mac]]);
    expect(arpRequestsTo(frames, pod.mac, gw.v4)).toHaveLength(1);
  }, 60_000);

  it('(g) under rateLimit the check frames count: the busiest second stays within rate + burst', async () => {
    const s = scope();
    const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX });
    const limit = { framesPerSecond: 2, burst: 1 };
    const pods: BridgePod[] = [];
    for (const host of [5, 6, 7, 8]) pods.push(await routedPod(s, { prefix: PREFIX, net, bridge, host }));
    const files = await announcerFiles(s);
    const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
    const options = { count: 1, gatewayCheck: 'report', rateLimit: limit, idleExitMs: 500 };
    for (const pod of pods) {
      const add = await announcerAdd(s, attachmentOf(pod, files, { options }));
      expect(add.code, add.stdout).toBe(0);
    }
    const verdicts = [];
    for (const pod of pods) verdicts.push(await finalVerdict(files, pod.containerId));
    const frames = await capture.stop();
    const ours = frames.filter((f) => pods.some((p) => p.mac === f.eth.src) && f.arp?.opcode === 1);
    const asks = pods.flatMap((p) => arpRequestsTo(frames, p.mac, gw.v4));
    console.info(
      `(g) ${ours.length} frames (${asks.length} asks), busiest second ${busiestSecond(ours)}, ` +
        `over ${Math.round(ms(ours.at(-1)!) - ms(ours[0]!))} ms`,
    );
    expect(verdicts.map((v) => v.result)).toEqual(['answered', 'answered', 'answered', 'answered']);
    expect(asks).toHaveLength(pods.length);
    expect(busiestSecond(ours)).toBeLessThanOrEqual(limit.framesPerSecond + limit.burst);
  }, 60_000);
});
