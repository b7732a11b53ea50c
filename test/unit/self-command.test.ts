import { describe, expect, it } from 'vitest';
import { readyOutcome, selfCommand } from '../../src/self-command';

describe('selfCommand', () => {
  it('is the executable alone in a Bun-compiled binary (argv[1] is a virtual /$bunfs/ path)', () => {
    const got = selfCommand(['bun', '/$bunfs/root/announcer', 'tail', 'x'], '/opt/cni/bin/announcer');
    expect(got).toEqual(['/opt/cni/bin/announcer']);
  });

  it('is the runtime and the script under Node', () => {
    const seen = selfCommand(['/usr/bin/node', '/work/bin/announcer.js', 'tail'], '/usr/bin/node');
    expect(seen).toEqual(['/usr/bin/node', '/work/bin/announcer.js']);
  });

  it('is the executable alone when there is no script', () => {
    expect(selfCommand(['/usr/bin/node'], '/usr/bin/node')).toEqual(['/usr/bin/node']);
  });

  it('is the program now at the path when the executable was renamed over (an upgrade): no " (deleted)"', () => {
    const argv = ['bun', '/$bunfs/root/announcer'];
    expect(selfCommand(argv, '/opt/cni/bin/announcer (deleted)')).toEqual(['/opt/cni/bin/announcer']);
    expect(selfCommand(argv, '/opt/cni/bin/announcer (deleted) x')).toEqual(['/opt/cni/bin/announcer (deleted) x']);
  });

  it('puts the user-mode emulator that runs this process first', () => {
    expect(
      selfCommand(['bun', '/$bunfs/root/announcer'], '/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static'),
    ).toEqual(['/usr/bin/qemu-aarch64-static', '/opt/bin/announcer-arm64']);
  });
});

describe('readyOutcome', () => {
  it('reads what the ready line says', () => {
    expect(readyOutcome('listening')).toBe('listening');
    expect(readyOutcome('served')).toBe('served');
    expect(readyOutcome('failed: cannot open x: ELOOP')).toEqual({ failed: 'cannot open x: ELOOP' });
    expect(readyOutcome('')).toEqual({ failed: 'it exited before it listened' });
    expect(readyOutcome('garbage')).toEqual({ failed: 'it said "garbage"' });
  });
});
