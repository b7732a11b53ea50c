// The stale-entry scenario of the README ("What it is and why"), chained after
// the real bridge plugin 1.1.1: a pod reusing an IP leaves the node's entry
// STALE with the old MAC; with the announcer chained, the entry holds the new MAC the moment ADD
// returns and the node's first ping gets through. Also the control without the
// announcer, `ipv4: false`, and a pod that is not ready within the wait.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  allocSubnet,
  announcerAdd,
  attachmentOf,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  bridgeWithKeeper,
  killStrays,
  quietStandIn,
  linkShow,
  neighEntry,
  run,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  stalePod,
  withScope,
  type Scope,
  type Subnet,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `b4${RUN_TAG}`;
const TRIALS = 5;
const POD_HOST = 5;

/** A stalePod (.5, its node entry planted STALE); the result's MAC is the one really on its eth0. */
async function addPod(scope: Scope, net: Subnet, bridge: string | undefined, containerId: string) {
  const pod = await stalePod(scope, { prefix: PREFIX, net, ...(bridge ? { bridge } : {}), containerId });
  expect((await linkShow('eth0', pod.netns.name))?.mac).toBe(pod.mac);
  return pod;
}

describe.skipIf(skipIntegration())('stale-entry scenario: bridge plugin 1.1.1 + announcer, IPv4', () => {
  const scope = scopePerTest(PREFIX);

  const repairsStaleEntryTitle =
    'repairs the stale entry before ADD returns and the first ping gets through, ' + `in every one of ${TRIALS} trials`;
  it(repairsStaleEntryTitle, async () => {
    killStrays(scope(), { strict: true });
    const net = allocSubnet();
    const ip = net.v4(POD_HOST);
    const bridge = await bridgeWithKeeper(scope(), net, { prefix: PREFIX });

    for (let trial = 1; trial <= TRIALS; trial++) {
      // Each trial: a fresh pod and fresh announcer files, all undone before the next trial reuses the IP.
      await withScope(async (own) => {
        const files = await announcerFiles(own);
        const containerId = `${PREFIX}-seed${trial}`;
        const pod = await addPod(own, net, bridge, containerId);
        const attachment = attachmentOf(pod, files);

        const add = await announcerAdd(own, attachment);
        // The moment ADD returns: no waiting, no retries.
        const entry = await neighEntry(bridge, ip);
        const ping = await run('ping', ['-c1', '-W2', ip]);

        expect(add.code, `trial ${trial}: ${add.stdout}`).toBe(0);
        expect(add.json, `trial ${trial}`).toEqual(pod.result);
        expect(entry?.mac, `trial ${trial}: node entry for ${ip} (${entry?.state})`).toBe(pod.mac);
        expect(ping.code, `trial ${trial}: first ping: ${ping.stdout}`).toBe(0);
        expect(await files.logged('info', 'announced', { containerId, round: 1 }), `trial ${trial}`).toHaveLength(1);

        // DEL stops the background rounds of the default burst and removes its record.
        expect(await announcerDel(attachment)).toMatchObject({ code: 0, stdout: '' });
        expect(await announcerLeftovers(files)).toEqual([]);
      });
    }
  });

  it('control, without the announcer: the bridge ADD alone leaves the old MAC and the first ping is lost', async () => {
    const net = allocSubnet();
    const ip = net.v4(POD_HOST);
    const { mac: podMac, bridge } = await addPod(scope(), net, undefined, `${PREFIX}-control`);

    expect(podMac).not.toBe(OLD_MAC);
    expect(await neighEntry(bridge, ip)).toEqual({ state: 'STALE', states: ['STALE'], mac: OLD_MAC });
    expect((await run('ping', ['-c1', '-W2', ip])).code).not.toBe(0);
    expect((await neighEntry(bridge, ip))?.mac).not.toBe(podMac);
  });

  it('with ipv4: false sends nothing, leaves the stale entry and passes the result through', async () => {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const net = allocSubnet();
    const ip = net.v4(POD_HOST);
    const pod = await addPod(scope(), net, undefined, `${PREFIX}-noipv4`);
    const capture = await startCapture(scope(), { iface: pod.hostVeth, filter: 'arp' });

    const add = await announcerAdd(scope(), attachmentOf(pod, files, { options: { ipv4: false } }));
    const entry = await neighEntry(pod.bridge, ip);
    const frames = await capture.stop();

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(pod.result);
    expect(entry).toMatchObject({ state: 'STALE', mac: OLD_MAC });
    expect(frames.filter((f) => f.eth.src === pod.mac)).toEqual([]);
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  const podWhoseLinkTitle =
    'a pod whose link is down: ADD (addWaitMs 200, readyTimeoutMs 200) exits ' +
    '0, sends nothing, logs that it was not ready';
  it(podWhoseLinkTitle, async () => {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const net = allocSubnet();
    // Only the announcer may send ARP here, not the kernel when the link goes up below.
    const standIn = await quietStandIn(scope(), { prefix: PREFIX, net, host: POD_HOST, up: false });
    const ns = standIn.netns.name;
    expect((await linkShow(standIn.ifname, ns))?.up).toBe(false);
    const prevResult = standIn.result;
    const containerId = `${PREFIX}-down`;
    const capture = await startCapture(scope(), { netns: ns, iface: standIn.peer, filter: 'arp' });

    const how = { network: 'harness', containerId, options: { addWaitMs: 200, readyTimeoutMs: 200 } };
    const add = await announcerAdd(scope(), attachmentOf(standIn, files, how));
    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(prevResult);
    // readyTimeoutMs ≤ addWaitMs: no deferred announce either. Once the link
    // comes up, still nothing may be sent; watch for a second to be sure.
    await runOk('ip', ['-n', ns, 'link', 'set', standIn.ifname, 'up']);
    await sleep(1000);
    const frames = await capture.stop();

    expect(frames.filter((f) => f.arp)).toEqual([]);
    const why = { containerId, waitingFor: /eth0 is down/ };
    expect(await files.logged('warn', 'pod not ready in time: not announcing', why)).toHaveLength(1);
    expect(await files.logged('info', 'announced')).toEqual([]);
    expect(await announcerLeftovers(files)).toEqual([]);
  });
});
