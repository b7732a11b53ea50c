// The control operations a request line may carry (checkControlRequest): what
// stays of the control protocol once the request line is the envelope.
import { describe, expect, it } from 'vitest';
import { checkControlRequest, checkReply } from '../../../src/daemon/protocol';

describe('checkControlRequest', () => {
  it('takes the five operations', () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 2 };
    expect(checkControlRequest({ op: 'sync', record: 'c1@eth0.json', sent, conflicts: 1 })).toEqual({
      op: 'sync',
      record: 'c1@eth0.json',
      sent,
      conflicts: 1,
    });
    expect(checkControlRequest({ op: 'count', sent, conflicts: 2 })).toEqual({ op: 'count', sent, conflicts: 2 });
    expect(checkControlRequest({ op: 'cancel', record: 'c1@eth0.json' })).toEqual({
      op: 'cancel',
      record: 'c1@eth0.json',
    });
    expect(checkControlRequest({ op: 'status', extra: 1 })).toEqual({ op: 'status' });
    expect(checkControlRequest({ op: 'handover', record: 'c1@eth0.json' })).toEqual({ op: 'handover' });
  });

  it('takes a handover request, which has no fields', () => {
    expect(checkControlRequest({ op: 'handover', record: 'c1@eth0.json' })).toEqual({ op: 'handover' });
  });

  it('accepts only record file names, never paths', () => {
    for (const record of [
      '../x.json',
      '/etc/passwd',
      'a/b.json',
      '.hidden.json',
      'x.txt',
      `${'x'.repeat(252)}.json`,
      7,
    ]) {
      expect(checkControlRequest({ op: 'cancel', record })).toBe('bad record name');
      expect(checkControlRequest({ op: 'sync', record, sent: {} })).toBe('bad record name');
    }
    expect(checkControlRequest({ op: 'cancel', record: `${'x'.repeat(250)}.json` })).toEqual({
      op: 'cancel',
      record: `${'x'.repeat(250)}.json`,
    });
  });

  it('says what is wrong with a request', () => {
    expect(checkControlRequest([1])).toBe('not an object');
    expect(checkControlRequest(null)).toBe('not an object');
    expect(checkControlRequest({ op: 'kill' })).toBe('unknown op "kill"');
    expect(checkControlRequest({})).toBe('unknown op undefined');
  });

  it('turns bad frame and conflict counts into zeros, a missing conflict count too', () => {
    expect(
      checkControlRequest({ op: 'count', sent: { garpRequest: -1, garpReply: 'x', na: 1.5 }, conflicts: 1e6 }),
    ).toEqual({
      op: 'count',
      sent: { garpRequest: 0, garpReply: 0, na: 0 },
      conflicts: 0,
    });
    expect(checkControlRequest({ op: 'count', sent: 'x', conflicts: 999_999 })).toEqual({
      op: 'count',
      sent: { garpRequest: 0, garpReply: 0, na: 0 },
      conflicts: 999_999,
    });
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    expect(checkControlRequest({ op: 'sync', record: 'c1@eth0.json', sent })).toEqual({
      op: 'sync',
      record: 'c1@eth0.json',
      sent,
      conflicts: 0,
    });
  });

  it('drops the settings an older shim puts on sync and count: node settings never come from a request', () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    const settings = { idleExitMs: 300, metricsFile: '/run/m.prom' };
    expect(checkControlRequest({ op: 'count', sent, settings })).toStrictEqual({ op: 'count', sent, conflicts: 0 });
    expect(checkControlRequest({ op: 'sync', record: 'c1@eth0.json', sent, settings })).toStrictEqual({
      op: 'sync',
      record: 'c1@eth0.json',
      sent,
      conflicts: 0,
    });
  });
});

describe('checkReply', () => {
  const status = {
    pid: 7,
    attachments: [
      { network: 'n', containerId: 'c', ifname: 'eth0', netns: '/x', roundsSent: 1, roundsPlanned: 3, deferred: false },
    ],
    counters: {},
  };

  it('takes the replies the announcer sends, as they are', () => {
    for (const reply of [
      { ok: true },
      { ok: true, status },
      { ok: false, error: 'internal error' },
      { ok: true, future: 1 },
    ])
      expect(checkReply(reply)).toEqual(reply);
  });

  it('refuses what is not one: no ok, a failure without its error, a status of the wrong shape', () => {
    const attachment = status.attachments[0]!;
    for (const bad of [
      null,
      [],
      'ok',
      { ok: 'yes' },
      { ok: false },
      { ok: true, status: { ...status, pid: '7' } },
      { ok: true, status: { ...status, attachments: [{ ...attachment, deferred: 'no' }] } },
    ]) {
      expect(checkReply(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });
});
