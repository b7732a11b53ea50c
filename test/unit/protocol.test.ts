// The stream protocol between a CNI call and the announcer (src/protocol.ts): one JSON object per line each way, the
// answers a call tells apart, and the CNI_* variables a request carries. (stateDirOf and waitMsOf: shim.test.ts.)
import { describe, expect, it } from 'vitest';
import { cniEnv, decodeReply, encodeLine, parseObject, WIRE_VERSION } from '../../src/protocol';

describe('the protocol', () => {
  it('encodes a request or an answer as one line, a newline inside a string escaped', () => {
    const request = { v: WIRE_VERSION, build: 'b', deadline: 9, cni: { env: {}, stdin: '{\n}' } };
    const line = encodeLine(request);
    expect([line.indexOf('\n'), JSON.parse(line)]).toEqual([line.length - 1, request]);
    expect(encodeLine({ refused: 'handover' })).toBe('{"refused":"handover"}\n');
  });

  it('decodes the three answers, as they are; anything else is no answer', () => {
    for (const reply of [{ exit: 1, stdout: '{}' }, { control: { ok: true } }, { control: null }, { refused: 'why' }])
      expect(decodeReply(JSON.stringify(reply))).toEqual(reply);
    expect(decodeReply('{"exit":0,"stdout":"","extra":1}')).toEqual({ exit: 0, stdout: '' });
    for (const bad of ['', 'not json', '[]', 'null', '{"exit":1.5,"stdout":""}', '{"exit":0}', '{"refused":1}', '{}'])
      expect([bad, decodeReply(bad)]).toEqual([bad, undefined]);
  });

  it('parses a JSON object only; forwards only the CNI_* variables that are set', () => {
    expect([parseObject('{"a":1}'), parseObject('[1]'), parseObject('null'), parseObject('{')]).toEqual([
      { a: 1 },
      undefined,
      undefined,
      undefined,
    ]);
    expect(cniEnv({ CNI_COMMAND: 'ADD', CNI_ARGS: undefined, PATH: '/bin', cni_x: 'y' })).toEqual({
      CNI_COMMAND: 'ADD',
    });
  });
});
