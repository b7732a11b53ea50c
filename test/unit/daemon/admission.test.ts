// What the announcer takes from its socket (src/daemon/admission.ts): a request line checked before anything acts on
// it, which CNI commands are dropped once no one waits for them, until when a taken one is wanted, and its gate.
import { describe, expect, it } from 'vitest';
import { NotWantedError } from '../../../src/announce/errors';
import { checkRequestLine, droppedLate, Gate, wantedWhile } from '../../../src/daemon/admission';

describe('checkRequestLine', () => {
  const head = '"v":1,"build":"b","deadline":9';

  it('takes a CNI command or one of the two control operations (their extra fields dropped), and its deadline', () => {
    const cni = `{${head},"cni":{"env":{"CNI_COMMAND":"ADD"},"stdin":"{}"},"more":true}`;
    const got = checkRequestLine(cni);
    expect(got).toEqual({ kind: 'cni', build: 'b', deadline: 9, env: { CNI_COMMAND: 'ADD' }, stdin: '{}' });
    for (const op of ['status', 'handover'])
      expect(checkRequestLine(`{${head},"control":{"op":"${op}","record":"c1@eth0.json"}}`)).toEqual({
        kind: 'control',
        build: 'b',
        deadline: 9,
        request: { op },
      });
  });

  it.each([
    ['{"v":', 'not JSON'],
    ['[1]', 'not an object'],
    ['{"v":2,"build":"b","deadline":9}', 'protocol version 2 (this announcer speaks 1)'],
    ['{"v":1,"build":7,"deadline":9,"control":{"op":"status"}}', 'bad build'],
    [`{"v":1,"build":"${'b'.repeat(129)}","deadline":9,"control":{"op":"status"}}`, 'bad build'],
    ['{"v":1,"build":"b","ackBy":9,"control":{"op":"status"}}', 'bad deadline'],
    ['{"v":1,"build":"b","deadline":"9","control":{"op":"status"}}', 'bad deadline'],
    [`{${head},"cni":{"env":{"PATH":"/bin"},"stdin":"{}"}}`, 'bad cni.env'],
    [`{${head},"cni":{"env":{"CNI_COMMAND":1},"stdin":"{}"}}`, 'bad cni.env'],
    [`{${head},"cni":{"env":{},"stdin":{}}}`, 'bad cni.stdin'],
    [`{${head}}`, 'neither cni nor control'],
    [`{${head},"control":[1]}`, 'neither cni nor control'],
    [`{${head},"control":{"op":"reboot"}}`, 'unknown op "reboot"'],
    [`{${head},"control":{}}`, 'unknown op undefined'],
  ])('refuses %s: %s', (line, problem) => {
    expect(checkRequestLine(line)).toBe(problem);
  });
});

describe('which commands are wanted, and until when', () => {
  it.each([
    ['ADD', true],
    ['CHECK', true],
    ['DEL', false],
    ['GC', false],
    ['STATUS', false],
    [undefined, false],
  ])('%s: dropped late (%s), wanted only while its client is connected and before its deadline', (command, late) => {
    let [now, connected] = [0, true];
    const [clock, client] = [() => now, () => connected];
    const wanted = wantedWhile(command, 1000, clock, client);
    expect([droppedLate(command), wanted()]).toEqual([late, true]);
    connected = false;
    expect(wanted()).toBe(!late);
    [now, connected] = [1000, true];
    expect(wanted()).toBe(!late);
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
    const expected = 'the announcer (pid 7) stops: stopped before the end of its wait';
    expect((gate.signal.reason as Error).message).toBe(expected);
  });
});
