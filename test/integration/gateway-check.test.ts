// The gateway check (issue 26) against a real Linux gateway: a netns on the
// test bridge that holds the address the pod routes through. The GARPs of the
// announcement create no entry there (arp_accept=0) and cannot fix a stale
// one the gateway will not take (drop_gratuitous_arp=1), an unsolicited NA
// creates none either; the check's ARP request and NS, addressed to the
// gateway, do. Each case prints the gateway's entry before and after.
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  announcerDel,
  announcerLeftovers,
  garpsFor,
  run,
  announcerStatus,
  waitFor,
  nasFor,
  plantStale,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
} from './harness';
import {
  addCaptured,
  arpRequestsTo,
  BURST,
  burstOver,
  createGateway,
  gatewayNetwork,
  finalVerdict,
  GATEWAY_DEV,
  gatewayNeigh,
  nsTo,
  routedPod,
  type Gateway,
} from './harness/gateway';

/** Every netns and link this file creates starts with this. */
const PREFIX = `gc${RUN_TAG}`;

function show(what: string, gw: Gateway, entry: { mac?: string; state: string } | undefined): string {
  return `${what}: gateway ${gw.v4} ${GATEWAY_DEV} entry ${entry ? `${entry.mac ?? '-'} ${entry.state}` : 'none'}`;
}

const CASE_A = '(a) IPv4, the gateway has no entry and arp_accept=0: GARPs create none (off), the check does (report)';
const CASE_B =
  '(b) a stale entry the gateway keeps against gratuitous ARP (drop_gratuitous_arp=1) takes the new MAC from the check';
const CASE_C =
  '(c) IPv6: an unsolicited NA creates no entry at the router (off), the NS with its source link-layer option does';
const CASE_E =
  '(e) the node-local proof: the pod MAC learned on its own port converges; another port sending from it: a duplicate';

describe.skipIf(skipIntegration())('gateway check against a real Linux gateway', () => {
  const scope = scopePerTest(PREFIX);

  it(CASE_A, async () => {
    for (const mode of ['off', 'report'] as const) {
      const s = scope();
      const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX });
      const pod = await routedPod(s, { prefix: PREFIX, net, bridge });
      const before = await gatewayNeigh(gw, pod.ip);
      const { files, capture, att, add } = await addCaptured(s, pod, { gatewayCheck: mode });
      expect(add.code, add.stdout).toBe(0);
      const verdict = mode === 'report' ? await finalVerdict(files, pod.containerId) : undefined;
      await burstOver();
      const after = await gatewayNeigh(gw, pod.ip);
      const frames = await capture.stop();
      console.info(`(a) ${mode}: ${show('before', gw, before)}; ${show('after', gw, after)}`);
      expect(before).toBeUndefined();
      expect(garpsFor(frames, pod.mac, pod.ip)).toHaveLength(BURST.count);
      if (mode === 'off') {
        expect(arpRequestsTo(frames, pod.mac, gw.v4)).toEqual([]);
        expect(after).toBeUndefined();
      } else {
        expect(arpRequestsTo(frames, pod.mac, gw.v4)).toHaveLength(1);
        expect(verdict).toMatchObject({ result: 'answered', asks: 1, unanswered: [] });
        expect(verdict!.answered).toEqual([
          { interface: 'eth0', gateway: gw.v4, mac: gw.mac, afterMs: expect.any(Number) },
        ]);
        expect(after?.mac).toBe(pod.mac);
      }
      expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
      expect(await announcerLeftovers(files)).toEqual([]);
    }
  }, 60_000);

  it(CASE_B, async () => {
    for (const mode of ['off', 'report'] as const) {
      const s = scope();
      const { net, bridge, gw } = await gatewayNetwork(s, {
        prefix: PREFIX,
        sysctls: { 'net.ipv4.conf.%.drop_gratuitous_arp': 1 },
      });
      const pod = await routedPod(s, { prefix: PREFIX, net, bridge });
      await plantStale(GATEWAY_DEV, pod.ip, OLD_MAC, gw.netns.name);
      const before = await gatewayNeigh(gw, pod.ip);
      const { files, capture, add } = await addCaptured(s, pod, { gatewayCheck: mode });
      expect(add.code, add.stdout).toBe(0);
      if (mode === 'report') expect((await finalVerdict(files, pod.containerId)).result).toBe('answered');
      await burstOver();
      const after = await gatewayNeigh(gw, pod.ip);
      const frames = await capture.stop();
      console.info(`(b) ${mode}: ${show('before', gw, before)}; ${show('after', gw, after)}`);
      expect(before?.mac).toBe(OLD_MAC);
      expect(garpsFor(frames, pod.mac, pod.ip)).toHaveLength(BURST.count);
      expect(arpRequestsTo(frames, pod.mac, gw.v4)).toHaveLength(mode === 'off' ? 0 : 1);
      expect(after?.mac).toBe(mode === 'off' ? OLD_MAC : pod.mac);
    }
  }, 60_000);

  it(CASE_C, async () => {
    for (const mode of ['off', 'report'] as const) {
      const s = scope();
      const { net, bridge, gw } = await gatewayNetwork(s, { prefix: PREFIX, ip6: true });
      const pod = await routedPod(s, { prefix: PREFIX, net, bridge, ip6: true });
      const ip6 = net.v6(5);
      const before = await gatewayNeigh(gw, ip6);
      const { files, capture, add } = await addCaptured(s, pod, { gatewayCheck: mode, ipv4: false });
      expect(add.code, add.stdout).toBe(0);
      const verdict = mode === 'report' ? await finalVerdict(files, pod.containerId) : undefined;
      await burstOver();
      const after = await gatewayNeigh(gw, ip6);
      const frames = await capture.stop();
      console.info(
        `(c) ${mode}: router ${gw.v6} entry for ${ip6}: before ${before?.mac ?? 'none'}, after ${after?.mac ?? 'none'}`,
      );
      expect(before).toBeUndefined();
      expect(nasFor(frames, pod.mac, ip6)).toHaveLength(BURST.count);
      // ipv4: false: no ARP of the check either.
      expect(arpRequestsTo(frames, pod.mac, gw.v4)).toEqual([]);
      if (mode === 'off') {
        expect(nsTo(frames, pod.mac, gw.v6!)).toEqual([]);
        expect(after).toBeUndefined();
      } else {
        expect(nsTo(frames, pod.mac, gw.v6!)).toHaveLength(1);
        expect(verdict).toMatchObject({ result: 'answered', unanswered: [] });
        expect(verdict!.answered.map((a) => [a.gateway, a.mac])).toEqual([[gw.v6, gw.mac]]);
        expect(after?.mac).toBe(pod.mac);
      }
    }
  }, 60_000);

  it(CASE_E, async () => {
    for (const twin of [false, true]) {
      const s = scope();
      const { net, bridge } = await gatewayNetwork(s, { prefix: PREFIX });
      const pod = await routedPod(s, { prefix: PREFIX, net, bridge });
      // The twin: another port of the bridge whose host sends from the pod's MAC all through the window.
      const other = twin ? await createGateway(s, { prefix: PREFIX, bridge, net, host: 77, mac: pod.mac }) : undefined;
      const pinging =
        other && run('ip', ['netns', 'exec', other.netns.name, 'ping', '-q', '-c', '30', '-i', '0.1', net.v4(1)]);
      const { files, add } = await addCaptured(s, pod, { gatewayCheck: 'report' });
      expect(add.code, add.stdout).toBe(0);
      const node = await waitFor(
        async () => {
          const status = await announcerStatus(files.stateDir);
          const mine = status.attachments.find((a) => a.containerId === pod.containerId);
          return mine?.gateway?.node;
        },
        { what: 'the node-local proof in status', timeoutMs: 15_000 },
      );
      await pinging;
      console.info(`(e) ${twin ? 'twin' : 'alone'}: ${JSON.stringify(node)}`);
      const seen = node[0] && 'seen' in node[0] ? node[0].seen : undefined;
      expect(node).toHaveLength(1);
      expect(seen?.fdb).toEqual(
        twin
          ? { kind: 'duplicate', port: pod.hostVeth, others: [other!.port] }
          : { kind: 'converged', port: pod.hostVeth },
      );
      expect(seen?.neighbours.map((n) => n.address)).toEqual([pod.ip]);
      const view = twin ? /^node view: eth0: fdb duplicate MAC on / : /^node view: eth0: fdb /;
      expect(await files.logged('info', view)).not.toEqual([]);
    }
  }, 60_000);
});
