// What each command returns when the announcer did not answer (src/shim/unavailable.ts): exact replies, per command
// and per onUnavailable.
import { describe, expect, it } from 'vitest';
import { stateDirReply, unavailableReply } from '../../../src/shim/unavailable';

const WHY = { stateDir: '/s', reason: 'no answer within 5000 ms on /s/announcer.sock', pid: 42 };
const TEXT = 'the announcer of stateDir /s (pid 42) did not answer: no answer within 5000 ms on /s/announcer.sock';
const NO_PID = 'no pid holds its lock';
const PREV = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [] };

describe('unavailableReply', () => {
  it('fails ADD and CHECK with code 11 and STATUS with 50; without cniVersion the reply says 1.1.0', () => {
    const got = unavailableReply('CHECK', { cniVersion: '1.0.0' }, WHY);
    expect(got).toEqual({ exit: 1, stdout: `${JSON.stringify({ cniVersion: '1.0.0', code: 11, msg: TEXT })}\n` });
    expect(unavailableReply('STATUS', {}, { ...WHY, pid: undefined })).toEqual({
      exit: 1,
      stdout: `${JSON.stringify({ cniVersion: '1.1.0', code: 50, msg: TEXT.replace('pid 42', NO_PID) })}\n`,
    });
  });

  it('never fails DEL or GC: exit 0, one line on stderr', () => {
    for (const command of ['DEL', 'GC'])
      expect(unavailableReply(command, { onUnavailable: 'skip' }, WHY)).toEqual({
        exit: 0,
        stderr: `announcer: ${command} left queued or not run: ${TEXT}\n`,
      });
    for (const [fate, said] of [
      ['unsure', 'may not have run'],
      ['not run', 'not run'],
    ] as const)
      expect(unavailableReply('DEL', {}, { ...WHY, fate })).toEqual({
        exit: 0,
        stderr: `announcer: DEL ${said}: ${TEXT}\n`,
      });
    const seen = stateDirReply('DEL', {}, 'stateDir /s is a symlink');
    expect(seen).toEqual({ exit: 0, stderr: 'announcer: DEL did nothing: stateDir /s is a symlink\n' });
  });

  it('GC of a stateDir that cannot be used: code 105 naming the problem, as the docs promise', () => {
    expect(stateDirReply('GC', {}, 'stateDir /s is a symlink')).toEqual({
      exit: 1,
      stdout: `${JSON.stringify({ cniVersion: '1.1.0', code: 105, msg: 'stateDir /s is a symlink' })}\n`,
    });
  });

  it('with onUnavailable skip: ADD prints prevResult unannounced, CHECK and STATUS exit 0; each warns', () => {
    const config = { cniVersion: '1.1.0', onUnavailable: 'skip', prevResult: PREV };
    const warn = (command: string) => `announcer: WARN ${command} not announced (onUnavailable: skip): ${TEXT}\n`;
    const expected = { exit: 0, stdout: `${JSON.stringify({ ...PREV, cniVersion: '1.1.0' })}\n`, stderr: warn('ADD') };
    expect(unavailableReply('ADD', config, WHY)).toEqual(expected);
    for (const command of ['CHECK', 'STATUS'])
      expect(unavailableReply(command, config, WHY)).toEqual({ exit: 0, stderr: warn(command) });
    for (const prevResult of [[1], 'ab', null])
      expect(unavailableReply('ADD', { ...config, prevResult }, WHY).stdout).toBe('{"cniVersion":"1.1.0"}\n');
    expect(unavailableReply('VERSION', config, WHY).exit).toBe(1);
  });

  it.each([
    [{ mac: 'ip-derived' }, false],
    [{ conflictCheck: 'fail' }, false],
    [{ gatewayCheck: 'require' }, false],
    [{ podOverrides: ['mac'] }, false],
    [{ podOverrides: ['gatewayCheck'] }, false],
    [{ conflictCheck: 'warn' }, true],
    [{ podOverrides: ['mac=keep'] }, true],
    [{ gatewayCheck: 'report', podOverrides: ['gatewayCheckMs'] }, true],
  ])(
    'with onUnavailable skip and %j: skips only where the result does not depend on the announcer (%s)',
    (o, skips) => {
      const reply = unavailableReply(
        'ADD',
        { cniVersion: '1.1.0', onUnavailable: 'skip', prevResult: PREV, ...o },
        WHY,
      );
      expect(reply.exit).toBe(skips ? 0 : 1);
      if (!skips) expect(JSON.parse(reply.stdout!)).toMatchObject({ code: 11, msg: TEXT });
    },
  );
});
