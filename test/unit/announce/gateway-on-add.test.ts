// ADD's part of the gateway check (gateway-on-add.ts), driven through
// announceOnAdd in the fake world of test/support/add-harness.ts: the gateway
// answers (or not) an ARP request from inside the pod.
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd } from '../../../src/announce/announce-on-add';
import { GatewayUnansweredError } from '../../../src/announce/errors';
import type { GatewayCheckMode } from '../../../src/announce/gateway-check';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import { recordPath, type AttachmentRecord } from '../../../src/announce/state';
import type { AnnouncePlan } from '../../../src/plan';
import { parseArp } from '../../../src/wire/arp';
import { parseIPv4 } from '../../../src/wire/ip';
import { AddHarness, PACKET_FD, PLAN, POD_MAC, RECEIVER_FD } from '../../support/add-harness';
import { fakeAddress } from '../../support/fake-rtnl';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
});
afterEach(() => h.cleanup());

const file = () => recordPath(h.stateDir, 'c1', 'eth0');
const readBack = (): AttachmentRecord => JSON.parse(readFileSync(file(), 'utf8')) as AttachmentRecord;
const GW = { interface: 'eth0', gateway: '10.88.0.1' };
const GW_MAC = Buffer.from('525400123456', 'hex');
const DERIVED = Buffer.from('0a580a580063', 'hex');

const check = (mode: GatewayCheckMode, gateways = [GW]) => ({ gatewayCheck: { mode, windowMs: 500, gateways } });

/** The gateway's ARP reply to `to` (address and MAC), as Linux answers a request, assembled from RFC 826. */
function gatewayReply(to = '10.88.0.5', toMac: Buffer = POD_MAC): Buffer {
  const head = Buffer.from('08060001080006040002', 'hex');
  return Buffer.concat([toMac, GW_MAC, head, GW_MAC, parseIPv4('10.88.0.1'), toMac, parseIPv4(to)]);
}

/** The ARP requests that went out, GARPs and probes (sender 0.0.0.0) left out: `sender > target`. */
function requests(): string[] {
  return h.sent.flatMap(({ frame }) => {
    const arp = parseArp(frame);
    if (arp?.op !== 1 || arp.senderIp.equals(arp.targetIp) || arp.senderIp.every((b) => b === 0)) return [];
    return [`${arp.senderIp.join('.')} > ${arp.targetIp.join('.')}`];
  });
}

describe('gatewayCheck off and nothing routed', () => {
  it('off: an OFF verdict, no request and no record', async () => {
    await announceOnAdd(h.deps(), h.job({ ...check('off'), plan: { ...PLAN, schedule: [0] } }));
    expect(h.handed[0]).toMatchObject({ gateway: OFF_VERDICT });
    expect(requests()).toEqual([]);
    expect(existsSync(file())).toBe(false);
  });

  it('no routed gateway: final at once, nothing asked, nothing recorded and no job for it', async () => {
    await announceOnAdd(h.deps(), h.job({ ...check('require', []), plan: { ...PLAN, schedule: [0] } }));
    const verdict = { result: 'no-gateway', answered: [], unanswered: [], asks: 0 };
    expect(h.handed[0]).toMatchObject({ gateway: verdict });
    expect(requests()).toEqual([]);
    expect(h.receiversOpened).toEqual([]);
    expect(h.handed[0]).toMatchObject({ job: false });
    expect(existsSync(recordPath(h.stateDir, 'c1', 'eth0'))).toBe(false);
  });
});

describe('gatewayCheck report', () => {
  it('asks nothing in ADD: the verdict is pending, and even a one-round job carries the check', async () => {
    h.arpIn.set(2, [gatewayReply()]);
    await announceOnAdd(h.deps(), h.job({ ...check('report'), plan: { ...PLAN, schedule: [0] } }));
    expect(requests()).toEqual([]);
    expect(h.handed[0]).toMatchObject({ job: true, gateway: { result: 'pending', unanswered: [GW] } });
    expect(readBack().job?.gatewayCheck).toEqual({ windowMs: 500, gateways: [GW] });
    expect(h.timers.now()).toBe(0);
  });
});

describe('gatewayCheck require', () => {
  it('sends one ARP request after round 1 and takes the answer, with the MAC that gave it', async () => {
    h.arpIn.set(2, [gatewayReply()]);
    await announceOnAdd(h.deps(), h.job(check('require')));
    expect(requests()).toEqual(['10.88.0.5 > 10.88.0.1']);
    expect(h.sent).toHaveLength(2);
    expect(parseArp(h.sent[0]!.frame)?.targetIp).toEqual(parseIPv4('10.88.0.5')); // round 1's GARP first
    const verdict = {
      result: 'answered',
      answered: [{ ...GW, mac: '52:54:00:12:34:56', afterMs: 0 }],
      unanswered: [],
      asks: 1,
    };
    expect(h.handed[0]).toMatchObject({ gateway: verdict });
    expect(readBack().gateway).toEqual(verdict);
    expect(h.lines).toContainEqual(expect.stringContaining('INFO gateway check: answered: 10.88.0.1 by 52:54:00'));
  });

  it('fails ADD after exactly gatewayCheckMs without an answer, restoring the MAC and leaving nothing', async () => {
    const plan: AnnouncePlan = { ...PLAN, interfaces: [{ ...PLAN.interfaces[0]!, targetMac: DERIVED }] };
    const err = await announceOnAdd(h.deps(), h.job({ ...check('require'), plan })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayUnansweredError);
    expect((err as GatewayUnansweredError).unanswered).toEqual([GW]);
    expect((err as Error).message).toBe(
      'gateway 10.88.0.1 (eth0) did not answer: 1 requests sent, no answer within 500 ms (gatewayCheck: require)',
    );
    expect(h.timers.now()).toBe(500);
    expect(h.waited).toEqual([{ fds: [RECEIVER_FD], ms: 500 }]);
    expect(h.pod.setMacs).toEqual([
      { index: 2, mac: '0a580a580063' },
      { index: 2, mac: '0a580a580005' },
    ]);
    expect(existsSync(file())).toBe(false);
    expect(h.handed).toEqual([{ cancel: 'c1@eth0.json' }]); // no job handed; any work the table had ends
    expect(h.released).toEqual([[RECEIVER_FD], [PACKET_FD]]);
  });

  it('never asks from an address the conflict probe left out', async () => {
    h.pod.addresses.push(fakeAddress(2, '10.88.0.6'));
    const squatter = Buffer.from('5254000000aa', 'hex');
    const head = Buffer.from('08060001080006040002', 'hex');
    const squat = Buffer.concat([POD_MAC, squatter, head, squatter, parseIPv4('10.88.0.5'), POD_MAC, Buffer.alloc(4)]);
    h.arpIn.set(2, [squat]);
    const deps = h.deps();
    const receivers = deps.open.receivers;
    let opened = 0;
    deps.open = {
      ...deps.open,
      // The gateway answers the check's request, which comes after the probe's receivers were opened.
      receivers: (netns, ifindexes, ethertype) => {
        if (++opened === 2) h.arpIn.set(2, [gatewayReply('10.88.0.6')]);
        return receivers(netns, ifindexes, ethertype);
      },
    };
    const two = { ...PLAN.interfaces[0]!, ipv4: ['10.88.0.5', '10.88.0.6'] };
    const conflictCheck = { action: 'warn' as const, probeMs: 200, probes: 1 };
    await announceOnAdd(deps, h.job({ ...check('require'), conflictCheck, plan: { ...PLAN, interfaces: [two] } }));
    expect(requests()).toEqual(['10.88.0.6 > 10.88.0.1']);
    expect(h.handed[0]).toMatchObject({ gateway: { result: 'answered' } });
  });

  it('acts as report, and says so, for a pod not ready within addWaitMs', async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, running: false };
    await announceOnAdd(h.deps(), h.job({ ...check('require'), addWaitMs: 1000, readyTimeoutMs: 5000 }));
    expect(h.lines).toContainEqual(
      'WARN gatewayCheck require acts as report: the pod was not ready within addWaitMs addWaitMs=1000',
    );
    expect(h.sent).toEqual([]);
    expect(readBack().job?.gatewayCheck).toEqual({ windowMs: 500, gateways: [GW] });
  });
});
