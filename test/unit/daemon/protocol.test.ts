import { describe, expect, it } from 'vitest';
import { decodeReply, decodeRequest, encodeMessage, MAX_MESSAGE_BYTES } from '../../../src/daemon/protocol';

const wire = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

describe('control protocol', () => {
  it('round-trips the requests', () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 2 };
    expect(decodeRequest(encodeMessage({ op: 'sync', record: 'c1@eth0.json', sent, conflicts: 1 }))).toEqual({
      op: 'sync',
      record: 'c1@eth0.json',
      sent,
      conflicts: 1,
    });
    expect(decodeRequest(encodeMessage({ op: 'count', sent, conflicts: 2 }))).toEqual({ op: 'count', sent, conflicts: 2 });
    expect(decodeRequest(encodeMessage({ op: 'cancel', record: 'c1@eth0.json' }))).toEqual({ op: 'cancel', record: 'c1@eth0.json' });
    expect(decodeRequest(encodeMessage({ op: 'status' }))).toEqual({ op: 'status' });
  });

  it('accepts only record file names, never paths', () => {
    for (const record of ['../x.json', '/etc/passwd', 'a/b.json', '.hidden.json', 'x.txt', 7]) {
      expect(decodeRequest(wire({ op: 'cancel', record }))).toBe('bad record name');
    }
  });

  it('says what is wrong with a request', () => {
    expect(decodeRequest(Buffer.from('{'))).toBe('not JSON');
    expect(decodeRequest(wire([1]))).toBe('not an object');
    expect(decodeRequest(wire({ op: 'kill' }))).toBe('unknown op "kill"');
  });

  it('turns bad frame and conflict counts into zeros', () => {
    expect(decodeRequest(wire({ op: 'count', sent: { garpRequest: -1, garpReply: 'x', na: 1.5 }, conflicts: 1e6 }))).toEqual({
      op: 'count',
      sent: { garpRequest: 0, garpReply: 0, na: 0 },
      conflicts: 0,
    });
  });

  it('reads a missing conflict count (an older client) as zero', () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    expect(decodeRequest(wire({ op: 'sync', record: 'c1@eth0.json', sent }))).toEqual({ op: 'sync', record: 'c1@eth0.json', sent, conflicts: 0 });
  });

  it("carries the announcer's settings on sync and count, checked against the options' own ranges", () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    const settings = { idleExitMs: 300, metricsFile: '/run/m.prom' };
    expect(decodeRequest(encodeMessage({ op: 'count', sent, settings }))).toEqual({ op: 'count', sent, conflicts: 0, settings });
    expect(decodeRequest(encodeMessage({ op: 'sync', record: 'c1@eth0.json', sent, settings: { idleExitMs: 100 } }))).toEqual({
      op: 'sync',
      record: 'c1@eth0.json',
      sent,
      conflicts: 0,
      settings: { idleExitMs: 100 },
    });
    for (const bad of [{ idleExitMs: 99 }, { idleExitMs: 1.5 }, { metricsFile: '/m' }, { idleExitMs: 300, metricsFile: 'rel' }, 'fast']) {
      expect(decodeRequest(wire({ op: 'count', sent, settings: bad }))).toEqual({ op: 'count', sent, conflicts: 0 });
    }
  });

  it('decodes replies and refuses what is not one', () => {
    expect(decodeReply(wire({ ok: true }))).toEqual({ ok: true });
    expect(decodeReply(wire({ ok: false, error: 'x' }))).toEqual({ ok: false, error: 'x' });
    expect(decodeReply(wire({ fine: 1 }))).toBeUndefined();
    expect(decodeReply(Buffer.from('nope'))).toBeUndefined();
  });

  it('refuses to encode a message over the size limit', () => {
    expect(() => encodeMessage({ ok: false, error: 'x'.repeat(MAX_MESSAGE_BYTES) })).toThrow(RangeError);
  });
});
