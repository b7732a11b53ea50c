import { describe, expect, it } from 'vitest';
import {
  afterWindow,
  describeVerdict,
  firstVerdict,
  isFinal,
  OFF_VERDICT,
  type GatewayReply,
} from '../../../src/announce/gateway-verdict';

const V4 = { interface: 'eth0', gateway: '10.88.0.1' };
const V6 = { interface: 'eth0', gateway: 'fd00::1' };
const reply = (g: typeof V4, afterMs: number, mac = '0a:58:0a:58:00:01'): GatewayReply => ({ ...g, mac, afterMs });

describe('firstVerdict', () => {
  it('is pending with every routed gateway unanswered, or no-gateway (final) when nothing is routed', () => {
    expect(firstVerdict([V4, V6])).toEqual({ result: 'pending', answered: [], unanswered: [V4, V6], asks: 0 });
    expect(firstVerdict([])).toEqual({ result: 'no-gateway', answered: [], unanswered: [], asks: 0 });
    expect(isFinal(firstVerdict([]))).toBe(true);
    expect(isFinal(firstVerdict([V4]))).toBe(false);
    expect(isFinal(OFF_VERDICT)).toBe(true);
    expect(OFF_VERDICT).toEqual({ result: 'off', answered: [], unanswered: [], asks: 0 });
  });
});

describe('afterWindow', () => {
  it('is answered once every gateway answered, counting the asks', () => {
    const one = afterWindow(firstVerdict([V4, V6]), [reply(V4, 3)], false);
    expect(one).toEqual({ result: 'pending', answered: [reply(V4, 3)], unanswered: [V6], asks: 1 });
    const two = afterWindow(one, [reply(V6, 1004, '0a:58:00:00:00:06')], false);
    expect(two.result).toBe('answered');
    expect(two.unanswered).toEqual([]);
    expect(two.asks).toBe(2);
    // The first window's answer stays.
    expect(two.answered).toEqual([reply(V4, 3), reply(V6, 1004, '0a:58:00:00:00:06')]);
    expect(afterWindow(one, [], true)).toMatchObject({ result: 'no-answer', answered: [reply(V4, 3)] });
  });

  it('keeps the first answer of a gateway', () => {
    const v = afterWindow(firstVerdict([V4]), [reply(V4, 3), reply(V4, 9, '02:00:00:00:00:09')], true);
    expect(v.answered).toEqual([reply(V4, 3)]);
  });

  it('is final no-answer after the last window, still listing what did answer', () => {
    const v = afterWindow(firstVerdict([V4, V6]), [reply(V4, 3)], true);
    expect(v).toEqual({ result: 'no-answer', answered: [reply(V4, 3)], unanswered: [V6], asks: 1 });
    expect(afterWindow(firstVerdict([V4]), [], false).result).toBe('pending');
  });

  it('tells the same gateway on two interfaces apart', () => {
    const net1 = { interface: 'net1', gateway: '10.88.0.1' };
    const v = afterWindow(firstVerdict([V4, net1]), [reply(V4, 3)], true);
    expect(v).toMatchObject({ result: 'no-answer', answered: [reply(V4, 3)], unanswered: [net1] });
    const both = afterWindow(v, [reply(net1, 5), reply(net1, 6)], true);
    expect(both.answered).toEqual([reply(V4, 3), reply(net1, 5)]);
  });

  it('ignores an answer from a gateway that was not asked', () => {
    const v = afterWindow(firstVerdict([V4]), [reply(V6, 2)], true);
    expect(v.result).toBe('no-answer');
  });
});

describe('describeVerdict', () => {
  it('says which MAC answered, how soon, and who did not', () => {
    expect(describeVerdict(afterWindow(firstVerdict([V4]), [reply(V4, 3)], true))).toBe(
      'answered: 10.88.0.1 by 0a:58:0a:58:00:01 after 3 ms (eth0)',
    );
    expect(describeVerdict(afterWindow(firstVerdict([V4, V6]), [reply(V4, 3)], true))).toBe(
      'no answer from fd00::1 (eth0) after 1 asks; answered: 10.88.0.1 by 0a:58:0a:58:00:01 after 3 ms (eth0)',
    );
    expect(describeVerdict(firstVerdict([V4]))).toBe('waiting for 10.88.0.1 (eth0)');
    expect(describeVerdict(firstVerdict([V4, V6]))).toBe('waiting for 10.88.0.1 (eth0), fd00::1 (eth0)');
    expect(describeVerdict(afterWindow(firstVerdict([V4, V6]), [], true))).toBe(
      'no answer from 10.88.0.1 (eth0), fd00::1 (eth0) after 1 asks',
    );
    const two = afterWindow(firstVerdict([V4, V6]), [reply(V4, 3), reply(V6, 4, '02:00:00:00:00:06')], true);
    expect(describeVerdict(two)).toBe(
      'answered: 10.88.0.1 by 0a:58:0a:58:00:01 after 3 ms (eth0), fd00::1 by 02:00:00:00:00:06 after 4 ms (eth0)',
    );
    expect(describeVerdict(firstVerdict([]))).toBe('no routed gateway: nothing sent');
    expect(describeVerdict(OFF_VERDICT)).toBe('off (gatewayCheck: off)');
  });
});
