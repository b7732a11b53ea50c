import { describe, expect, it } from 'vitest';
import { DAEMON_USAGE, parseDaemonArgs } from '../../../src/daemon/daemon-args';

describe('parseDaemonArgs', () => {
  it('takes the stateDir alone, and the fd of its ready line, as a shim starts it', () => {
    // Strict: a flag not given is no key at all.
    expect(parseDaemonArgs(['/run/cni-announcer'])).toStrictEqual({
      ok: true,
      args: { stateDir: '/run/cni-announcer', resident: false, settings: {} },
    });
    expect(parseDaemonArgs(['/run/a', '--ready-fd=3'])).toEqual({
      ok: true,
      args: { stateDir: '/run/a', resident: false, readyFd: 3, settings: {} },
    });
  });

  it('takes the DaemonSet flags', () => {
    expect(parseDaemonArgs(['/run/a', '--resident', '--log-format=json', '--listen', '127.0.0.1:9464'])).toEqual({
      ok: true,
      args: { stateDir: '/run/a', resident: true, logFormat: 'json', listen: '127.0.0.1:9464', settings: {} },
    });
    expect(parseDaemonArgs(['/run/a', '--log-format=logfmt', '--listen=[::1]:80', '--listen-x']).ok).toBe(false);
    expect(parseDaemonArgs(['/run/a', '--listen=:9464'])).toMatchObject({ ok: true, args: { listen: ':9464' } });
  });

  it('names every flag in its usage line, the node settings among them', () => {
    expect(DAEMON_USAGE).toMatch(
      /^usage: announcer daemon <stateDir> \[--resident\] .*\[--listen=HOST:PORT\] \[--ready-fd=N\] .*--idle-exit-ms/,
    );
  });

  it.each([
    [[], /stateDir must be an absolute path \(got ""\)/],
    [['run/a'], /absolute path \(got "run\/a"\)/],
    [['/run/a', 'extra'], /unknown argument "extra"/],
    [['/run/a', '--log-format=xml'], /--log-format must be json or logfmt \(got "xml"\)/],
    [['/run/a', '--listen=9464'], /--listen must be HOST:PORT \(got "9464"\)/],
    [['/run/a', '--resident=yes'], /--resident takes no value/],
    [['/run/a', '--ready-fd=2'], /--ready-fd must be 3 or more \(got 2\)/],
    [['/run/a', '--ready-fd=x'], /--ready-fd must be a whole number/],
  ])('refuses %j, naming the argument', (argv, problem) => {
    const parsed = parseDaemonArgs(argv);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(problem);
  });
});
