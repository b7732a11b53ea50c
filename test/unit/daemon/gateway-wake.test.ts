// When the gateway check needs the announcer's loop (gatewayWakeAt), whether
// it keeps its work alive (gatewayBusy), and what it plans when a job is taken
// (gatewayWorkOf) or a round goes out (askAfterRound), from its state alone.
import { describe, expect, it } from 'vitest';
import type { OpenAsk } from '../../../src/announce/gateway-ask';
import { firstVerdict } from '../../../src/announce/gateway-verdict';
import type { BackgroundJob } from '../../../src/announce/background-job';
import {
  askAfterRound,
  gatewayBusy,
  gatewayWakeAt,
  gatewayWorkOf,
  type GatewayWork,
} from '../../../src/daemon/gateway-state';
import type { NodeWork } from '../../../src/daemon/node-work';
import type { Work } from '../../../src/daemon/rounds';

const GW = { interface: 'eth0', gateway: '10.88.0.1' };
const NOW = 1000;
const pending = firstVerdict([GW]);
const final = { ...pending, result: 'answered' as const };

/** An open ask whose window ends `waitMs` after any time asked. */
const askFor = (waitMs: number) => ({ window: { waitMs: () => waitMs } }) as unknown as OpenAsk;
const nodeUntil = (until: number) => ({ until }) as NodeWork;
const work = (g: Omit<GatewayWork, 'verdict'> & Partial<GatewayWork>): Work =>
  ({ gateway: { verdict: pending, ...g } }) as Work;

describe('gatewayWakeAt', () => {
  it('has nothing to wake for without a check, or with nothing open or planned', () => {
    expect(gatewayWakeAt({} as Work, NOW)).toBeUndefined();
    expect(gatewayWakeAt(work({}), NOW)).toBeUndefined();
  });

  it('wakes for a planned ask or a due window alone, even at boot ms 0', () => {
    expect(gatewayWakeAt(work({ askAt: 1300 }), NOW)).toBe(1300);
    expect(gatewayWakeAt(work({ nodeAt: 1400 }), NOW)).toBe(1400);
    expect(gatewayWakeAt(work({ askAt: 0 }), NOW)).toBe(0);
    expect(gatewayWakeAt(work({ nodeAt: 0 }), NOW)).toBe(0);
  });

  it('wakes at the earlier of the ask and the node window, either way round', () => {
    expect(gatewayWakeAt(work({ askAt: 1300, nodeAt: 1400 }), NOW)).toBe(1300);
    expect(gatewayWakeAt(work({ askAt: 1500, nodeAt: 1400 }), NOW)).toBe(1400);
    expect(gatewayWakeAt(work({ askAt: 0, nodeAt: 1400 }), NOW)).toBe(0);
    expect(gatewayWakeAt(work({ askAt: 1300, nodeAt: 0 }), NOW)).toBe(0);
  });

  it("an open ask wakes at its window's end, an open node window at its own, over what is planned", () => {
    expect(gatewayWakeAt(work({ ask: askFor(150), askAt: 1100 }), NOW)).toBe(1150);
    expect(gatewayWakeAt(work({ node: nodeUntil(1200), nodeAt: 1050 }), NOW)).toBe(1200);
    expect(gatewayWakeAt(work({ ask: askFor(150), node: nodeUntil(1200) }), NOW)).toBe(1150);
    expect(gatewayWakeAt(work({ ask: askFor(300), node: nodeUntil(1200) }), NOW)).toBe(1200);
  });
});

describe('gatewayBusy', () => {
  it('is idle without a check, or with nothing open or planned', () => {
    expect(gatewayBusy({} as Work)).toBe(false);
    expect(gatewayBusy(work({}))).toBe(false);
    expect(gatewayBusy(work({ verdict: final }))).toBe(false);
  });

  it('a pending verdict with an ask open or planned (even at boot ms 0) is busy', () => {
    expect(gatewayBusy(work({ askAt: 1300 }))).toBe(true);
    expect(gatewayBusy(work({ askAt: 0 }))).toBe(true);
    expect(gatewayBusy(work({ ask: askFor(10) }))).toBe(true);
  });

  it('a final verdict asks no more: its planned or open ask keeps nothing alive', () => {
    expect(gatewayBusy(work({ verdict: final, askAt: 1300 }))).toBe(false);
    expect(gatewayBusy(work({ verdict: final, ask: askFor(10) }))).toBe(false);
  });

  it('a node window open or due keeps the check busy, final or not', () => {
    for (const verdict of [pending, final]) {
      expect(gatewayBusy(work({ verdict, nodeAt: 1400 }))).toBe(true);
      expect(gatewayBusy(work({ verdict, nodeAt: 0 }))).toBe(true);
      expect(gatewayBusy(work({ verdict, node: nodeUntil(1200) }))).toBe(true);
    }
  });
});

describe('gatewayWorkOf', () => {
  const job = (firstRoundAt: number | undefined) =>
    ({ gatewayCheck: { windowMs: 200, gateways: [GW] }, firstRoundAt }) as BackgroundJob;
  const both = { askNow: true, afterRoundOne: true };

  it('asks and opens the window at once only once round 1 went out', () => {
    expect(gatewayWorkOf(job(0), undefined, NOW, both)).toEqual({ verdict: pending, askAt: NOW, nodeAt: NOW });
    const deferred = gatewayWorkOf(job(undefined), undefined, NOW, both)!;
    expect([deferred.verdict, deferred.askAt, deferred.nodeAt]).toEqual([pending, undefined, undefined]);
  });

  it('a final verdict plans no ask, only the window', () => {
    const w = gatewayWorkOf(job(0), final, NOW, both)!;
    expect([w.verdict, w.askAt, w.nodeAt]).toEqual([final, undefined, NOW]);
  });
});

describe('askAfterRound', () => {
  it('plans an ask while no verdict is final, and the window only after round 1', () => {
    const w = work({});
    askAfterRound(w, 1200);
    expect([w.gateway?.askAt, w.gateway?.nodeAt]).toEqual([1200, undefined]);
    askAfterRound(w, 1300, true);
    expect([w.gateway?.askAt, w.gateway?.nodeAt]).toEqual([1300, 1300]);
    const done = work({ verdict: final });
    askAfterRound(done, 1200, true);
    expect([done.gateway?.askAt, done.gateway?.nodeAt]).toEqual([undefined, 1200]);
  });
});
