// Which CNI commands the announcer drops once no one waits for them, and until when a taken one is wanted.
import { describe, expect, it } from 'vitest';
import { droppedLate, Gate, tooLate, wantedWhile } from '../../../src/daemon/admission';
import { NotWantedError } from '../../../src/announce/errors';
import { ACK_MARGIN_MS } from '../../../src/shim/wire';

describe('admission', () => {
  it('drops only ADD and CHECK late; DEL, GC, STATUS and a request without CNI_COMMAND run however late', () => {
    expect(['ADD', 'CHECK', 'DEL', 'GC', 'STATUS', undefined].map(droppedLate)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
    expect(tooLate({ ackBy: 5000, deadline: 5000, command: 'ADD' }, 5000)).toBe(true);
    expect(tooLate({ ackBy: 5000, deadline: 5000, command: 'DEL' }, 9000)).toBe(false);
    expect(tooLate({ ackBy: 5000, command: 'ADD' }, 5000 - ACK_MARGIN_MS)).toBe(false); // an older shim
    expect(tooLate({ ackBy: 5000, command: 'ADD' }, 5001 - ACK_MARGIN_MS)).toBe(true);
  });

  it("wants an ADD while its client is connected and before its deadline; an older shim's ADD has none", () => {
    let now = 0;
    let connected = true;
    const wanted = wantedWhile(
      'ADD',
      1000,
      () => now,
      () => connected,
    );
    const older = wantedWhile(
      'ADD',
      undefined,
      () => now,
      () => connected,
    );
    expect([wanted(), older()]).toEqual([true, true]);
    now = 1000;
    expect([wanted(), older()]).toEqual([false, true]);
    connected = false;
    expect(older()).toBe(false);
    expect(
      wantedWhile(
        'DEL',
        1000,
        () => now,
        () => connected,
      )(),
    ).toBe(true);
  });

  const gateTitle =
    "Gate: no reason while its command is wanted; the caller's going is one; a stop is another, which wins, " +
    'aborts its signal with a NotWantedError naming it, and says the step in that error; acting is remembered';
  it(gateTitle, () => {
    let wanted = true;
    const gate = new Gate(() => wanted);
    expect([gate.stopReason(), gate.acted, gate.signal.aborted]).toEqual([undefined, false, false]);
    gate.acting();
    expect(gate.acted).toBe(true);
    wanted = false;
    expect(gate.stopReason()).toBe(NotWantedError.CALLER_GONE);
    gate.stop('the announcer (pid 7) stops');
    gate.stop('a second stop changes nothing');
    expect(gate.stopReason()).toBe('the announcer (pid 7) stops');
    expect(gate.signal.reason).toBeInstanceOf(NotWantedError);
    expect((gate.signal.reason as Error).message).toBe(
      'the announcer (pid 7) stops: stopped before the end of its wait',
    );
  });
});
