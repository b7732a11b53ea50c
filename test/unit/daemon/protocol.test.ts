// The control operations a request line may carry (checkControlRequest), and the
// refusal of the retired ones (retiredOpRefusal).
import { describe, expect, it } from 'vitest';
import { checkControlRequest, checkReply, retiredOpRefusal } from '../../../src/daemon/protocol';

describe('checkControlRequest', () => {
  it('takes the two operations, without their extra fields', () => {
    expect(checkControlRequest({ op: 'status', extra: 1 })).toEqual({ op: 'status' });
    expect(checkControlRequest({ op: 'handover', record: 'c1@eth0.json' })).toEqual({ op: 'handover' });
  });

  it('says what is wrong with a request', () => {
    expect(checkControlRequest([1])).toBe('not an object');
    expect(checkControlRequest(null)).toBe('not an object');
    expect(checkControlRequest({ op: 'kill' })).toBe('unknown op "kill"');
    expect(checkControlRequest({})).toBe('unknown op undefined');
  });

  it('no longer takes the ops of an in-process shim (sync, count, cancel)', () => {
    for (const op of ['sync', 'count', 'cancel']) expect(checkControlRequest({ op })).toBe(`unknown op "${op}"`);
  });
});

describe('retiredOpRefusal', () => {
  it("refuses sync, count and cancel of a previous release's shim by name, saying what becomes of its record", () => {
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    for (const request of [
      { op: 'sync', record: 'c1@eth0.json', sent, conflicts: 1, settings: { idleExitMs: 300 } },
      { op: 'count', sent },
      { op: 'cancel', record: 'c1@eth0.json' },
    ]) {
      expect(retiredOpRefusal(request)).toBe(
        `op "${request.op}" is retired: this announcer runs every CNI command itself; ` +
          'a record written by an older shim is taken up at the next announcer start, or removed by DEL or GC',
      );
    }
  });

  it('says nothing of any other request', () => {
    for (const request of [{ op: 'status' }, { op: 'handover' }, { op: 'kill' }, null, [1], 'sync'])
      expect(retiredOpRefusal(request)).toBeUndefined();
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
