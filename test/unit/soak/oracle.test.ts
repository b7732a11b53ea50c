// The fault soak's oracle (scripts/soak) on hand-made runs: which frames count as the announcer's, whose pod each is,
// and each row's verdict, the kernel's arp_notify GARPs told apart by MAC and time.
import { describe, expect, it } from 'vitest';
import { builtFrame, framesByCycle, type BuiltFrame } from '../../../scripts/soak/frames';
import type { CallRecord, Cycle, FaultRecord, Profile } from '../../../scripts/soak/model';
import { judge } from '../../../scripts/soak/oracle-more';
import { RESTORE_SLACK_MS, type OracleInput, type Row } from '../../../scripts/soak/oracle';
import type { Frame } from '../../../test/integration/harness/tshark';

const T0 = 1_800_000_000_000;
const GW = { v4: '10.88.7.254', v6: 'fd00:88:7::254' };
const OWN = '02:00:00:00:00:0a';
const DERIVED = '0a:58:0a:58:07:0a';

const profile = (p: Partial<Profile> = {}): Profile => ({
  ipDerived: false,
  ipv6: false,
  routed: true,
  deferred: false,
  announce: 'yes',
  count: 3,
  intervalMs: 400,
  addWaitMs: 2000,
  releaseAfterMs: 0,
  checkPausesMs: [],
  holdMs: 0,
  ...p,
});

function call(command: CallRecord['command'], start: number, end: number, more: Partial<CallRecord> = {}): CallRecord {
  return {
    pod: 'pod',
    command,
    attempt: 1,
    start: T0 + start,
    end: T0 + end,
    code: 0,
    stdout: '',
    stderr: '',
    ...more,
  };
}

/** A pod: ADD over [100, 200] ms, its DEL served at 2000 ms (times relative to T0). */
function cycle(p: Partial<Profile> = {}, more: Partial<Cycle> = {}): Cycle {
  const ipDerived = p.ipDerived ?? false;
  return {
    worker: 0,
    seq: 0,
    containerId: 'pod',
    profile: profile(p),
    ip4: '10.88.7.10',
    originalMac: OWN,
    ...(ipDerived ? { derivedMac: DERIVED, resultMac: DERIVED } : { resultMac: OWN }),
    start: T0,
    add: call('ADD', 100, 200),
    checks: [],
    dels: [call('DEL', 1900, 2000)],
    delServedAt: T0 + 2000,
    macAfterDel: OWN,
    netnsFreedMs: 5,
    ...more,
  };
}

const garp = (t: number, mac: string, n = 1): BuiltFrame => ({
  t: T0 + t,
  kind: 'garp',
  ip: '10.88.7.10',
  mac,
  number: n,
});

function input(c: Cycle, frames: BuiltFrame[], faults: FaultRecord[] = []): OracleInput {
  return {
    startedAt: T0,
    cycles: [c],
    faults,
    framesOf: new Map([[c, frames]]),
    stops: [],
    end: { at: T0 + 10_000, left: [], announcers: [], markers: [] },
    graceMs: 5000,
  };
}

const violations = (rows: Row[], n: number): string[] => rows[n - 1]!.violations.map((v) => v.what);
/** A SIGKILL of the announcer at `t` ms. */
const kill = (t: number): FaultRecord => ({
  kind: 'SIGKILL',
  at: T0 + t,
  end: T0 + t,
  counted: true,
  detail: '',
  killedAt: T0 + t,
});

const frame = (f: Partial<Frame>): Frame => ({
  number: 1,
  time: 1,
  length: 42,
  eth: { src: OWN, dst: 'ff:ff:ff:ff:ff:ff', type: 0x806 },
  expert: [],
  malformed: false,
  ...f,
});
/** An ARP frame of `op` from `mac`. */
const arp = (op: number, senderIp: string, targetIp: string, mac = OWN) =>
  frame({
    eth: { src: mac, dst: 'ff:ff:ff:ff:ff:ff', type: 0x806 },
    arp: { opcode: op, senderMac: mac, senderIp, targetMac: '00:00:00:00:00:00', targetIp, isGratuitous: false },
  });

describe('which frames the announcer builds', () => {
  const nd = (type: number, src: string, target: string, dst = '33:33:00:00:00:01', hopLimit = 255) =>
    frame({
      eth: { src: OWN, dst, type: 0x86dd },
      ipv6: { src, dst: 'ff02::1', hopLimit },
      icmpv6: { type, code: 0, checksumStatus: 'good', target, optionTypes: [] },
    });

  it('a GARP of either op, a probe, the ask to the gateway; not an answer or another ARP request', () => {
    expect(builtFrame(arp(1, '10.88.7.10', '10.88.7.10'), GW)?.kind).toBe('garp');
    expect(builtFrame(arp(2, '10.88.7.10', '10.88.7.10'), GW)?.kind).toBe('garp');
    expect(builtFrame(arp(1, '0.0.0.0', '10.88.7.10'), GW)).toMatchObject({ kind: 'probe', ip: '10.88.7.10' });
    expect(builtFrame(arp(1, '10.88.7.10', GW.v4), GW)).toMatchObject({ kind: 'gateway arp', ip: '10.88.7.10' });
    expect(builtFrame(arp(2, GW.v4, '10.88.7.10'), GW)).toBeUndefined();
    expect(builtFrame(arp(1, '10.88.7.10', '10.88.7.1'), GW)).toBeUndefined();
  });

  it('an unsolicited NA to all nodes at hop limit 255, an NS for the gateway; not DAD, nor a solicited NA', () => {
    expect(builtFrame(nd(136, 'fd00:88:7::10', 'fd00:88:7::0010'), GW)).toMatchObject({
      kind: 'na',
      ip: 'fd00:88:7::10',
    });
    expect(builtFrame(nd(136, 'fd00:88:7::10', 'fd00:88:7::10', '33:33:00:00:00:01', 64), GW)).toBeUndefined();
    expect(builtFrame(nd(136, 'fd00:88:7::10', 'fd00:88:7::10', OWN), GW)).toBeUndefined();
    expect(builtFrame(nd(135, 'fd00:88:7::10', GW.v6), GW)).toMatchObject({ kind: 'gateway ns' });
    expect(builtFrame(nd(135, '::', GW.v6), GW)).toBeUndefined();
    expect(builtFrame(nd(135, '::', 'fd00:88:7::10'), GW)).toBeUndefined();
  });

  it("a frame of an IP-derived MAC belongs to the worker's last pod that had started by then", () => {
    const first = cycle({ ipDerived: true });
    const second = cycle({ ipDerived: true }, { seq: 1, start: T0 + 5000, originalMac: '02:00:00:00:00:0b' });
    const at = (t: number): Frame => ({ ...arp(1, '10.88.7.10', '10.88.7.10', DERIVED), time: (T0 + t) / 1000 });
    const { of, unplaced } = framesByCycle([at(3000), at(6000), at(-5)], [first, second], GW);
    expect(of.get(first)!.map((f) => f.t - T0)).toEqual([3000]);
    expect(of.get(second)!.map((f) => f.t - T0)).toEqual([6000]);
    expect(unplaced).toHaveLength(1);
  });
});

describe('round 1 before ADD returned, once (row 2)', () => {
  it('own MAC: one GARP before ADD exited holds; none, or two close together, do not', () => {
    expect(violations(judge(input(cycle(), [garp(150, OWN)])), 2)).toEqual([]);
    expect(violations(judge(input(cycle(), [garp(250, OWN)])), 2)[0]).toMatch(/round 1 not on the wire/);
    expect(violations(judge(input(cycle(), [garp(150, OWN), garp(160, OWN, 2)])), 2)[0]).toMatch(/round 1 twice/);
  });

  it("IP-derived: the kernel's GARP of the MAC change comes with round 1; a round 2 before the exit is fine", () => {
    const c = cycle({ ipDerived: true }, { add: call('ADD', 100, 700) });
    expect(violations(judge(input(c, [garp(150, DERIVED), garp(151, DERIVED)])), 2)).toEqual([]);
    expect(violations(judge(input(c, [garp(150, DERIVED), garp(151, DERIVED), garp(560, DERIVED)])), 2)).toEqual([]);
    expect(violations(judge(input(c, [garp(150, DERIVED)])), 2)[0]).toMatch(/1 garp .* 2 expected \(the kernel/);
  });

  it('a deferred pod, count 0 and an opted-out pod are not checked', () => {
    for (const p of [{ deferred: true }, { announce: 'count0' as const }, { announce: 'optout' as const }])
      expect(judge(input(cycle(p), []))[1]!.checked).toBe(0);
  });
});

describe('nothing after the DEL was served (rows 3 and 4)', () => {
  it("IP-derived: the restored MAC's GARP within the slack is the kernel's; the derived MAC's never is", () => {
    const c = cycle({ ipDerived: true });
    expect(violations(judge(input(c, [garp(1995, OWN), garp(2000 + RESTORE_SLACK_MS, OWN)])), 4)).toEqual([]);
    expect(violations(judge(input(c, [garp(2001, DERIVED)])), 4)[0]).toMatch(
      /^garp for 10.88.7.10 from 0a:58.* after its DEL was served/,
    );
    expect(violations(judge(input(c, [garp(2001 + RESTORE_SLACK_MS, OWN)])), 4)).toHaveLength(1);
  });

  it('own MAC: anything after the DEL counts; a failed ADD is row 3 too', () => {
    const failed = cycle({}, { add: call('ADD', 100, 200, { code: 1 }) });
    const rows = judge(input(failed, [garp(2050, OWN)]));
    expect([violations(rows, 3).length, violations(rows, 4).length]).toEqual([1, 1]);
  });
});

describe('calls (rows 1 and 6)', () => {
  const stop: FaultRecord = { kind: 'SIGSTOP', at: T0 + 500, end: T0 + 3000, counted: true, detail: '' };
  const hung = { code: 1, json: { code: 11, msg: 'the announcer … did not answer: no answer within 5000 ms on …' } };

  it('waiting out the deadline counts unless a SIGSTOP overlapped the call', () => {
    const c = cycle({}, { add: call('ADD', 100, 5200, hung) });
    expect(violations(judge(input(c, [])), 1)).toHaveLength(1);
    expect(violations(judge(input(c, [], [stop])), 1)).toEqual([]);
  });

  it('refused at every try (handover) for its whole deadline is waiting it out; for less it is only lost', () => {
    const refused = { code: 1, json: { code: 11, msg: 'did not answer: it refused the request on … (handover)' } };
    const whole = cycle({}, { add: call('ADD', 100, 100 + 2000 + 3000, refused) });
    expect(violations(judge(input(whole, [])), 1)[0]).toMatch(/^waited out its deadline, no SIGSTOP meanwhile: ADD/);
    const short = cycle({}, { add: call('ADD', 100, 1100, refused) });
    expect([violations(judge(input(short, [])), 1).length, violations(judge(input(short, [])), 6).length]).toEqual([
      0, 1,
    ]);
  });

  it('a call without an answer is lost unless a SIGSTOP or a SIGKILL (up to 1 s before it) excuses it', () => {
    const dropped = { code: 1, json: { code: 11, msg: 'did not answer: the connection … ended before the answer' } };
    const c = cycle({}, { add: call('ADD', 100, 200, dropped) });
    expect(violations(judge(input(c, [])), 6)[0]).toMatch(/^no answer, no SIGSTOP or SIGKILL/);
    expect(violations(judge(input(c, [], [kill(50)])), 6)).toEqual([]);
    const late = cycle({}, { add: call('ADD', 1100, 1200, dropped) });
    expect(violations(judge(input(late, [], [kill(50)])), 6)).toHaveLength(1);
  });

  it("the announcer's own code 11 counts unless an announcer stopped; a DEL left queued is unserved", () => {
    const undone = { code: 1, json: { code: 11, msg: 'stopping: ADD undone' } };
    const c = cycle({}, { add: call('ADD', 100, 200, undone) });
    expect(violations(judge(input(c, [])), 6)[0]).toMatch(/code 11 while none stopped/);
    const stopping = { ...input(c, []), stops: [{ at: T0 + 150, pid: 7, why: 'SIGTERM' }] };
    expect(violations(judge(stopping), 6)).toEqual([]);
    const queued = call('DEL', 1000, 3000, { stderr: 'announcer: DEL left queued or not run: …\n' });
    const d = cycle({}, { dels: [queued, call('DEL', 3300, 3310)], delServedAt: T0 + 3310 });
    expect(violations(judge(input(d, [])), 6)).toHaveLength(1);
    expect(violations(judge(input(d, [], [stop])), 6)).toEqual([]);
  });
});

describe('rounds beyond the plan (row 7) and the end (row 5)', () => {
  it('more GARPs than rounds count, but a SIGKILL between ADD and DEL exempts the pod', () => {
    const c = cycle({ count: 2 });
    const four = [garp(150, OWN), garp(600, OWN, 2), garp(1000, OWN, 3), garp(1400, OWN, 4)];
    expect(violations(judge(input(c, four)), 7)[0]).toMatch(/4 garp .* 2 rounds planned/);
    expect(judge(input(c, four, [kill(700)]))[6]!.checked).toBe(0);
  });

  it('a netns kept alive, a MAC not restored, a record or an announcer left: each one violation', () => {
    const c = cycle({ ipDerived: true }, { netnsFreedMs: 'kept', macAfterDel: DERIVED });
    const i = input(c, [garp(150, DERIVED), garp(151, DERIVED)]);
    i.end = { ...i.end, left: ['pod@eth0.json'], announcers: ['pid 9: announcer daemon /s'] };
    expect(violations(judge(i), 5)).toEqual([
      'left in stateDir: pod@eth0.json',
      'still running after its idle exit was due: pid 9: announcer daemon /s',
      'its netns was not freed within 5 s of ip netns del, nor later',
      `eth0 has ${DERIVED} once DEL was served; the bridge plugin gave it ${OWN}`,
    ]);
  });
});
