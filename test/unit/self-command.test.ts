import { describe, expect, it } from 'vitest';
import { selfCommand } from '../../src/self-command';

describe('selfCommand', () => {
  it('is the executable alone in a Bun-compiled binary (argv[1] is a virtual /$bunfs/ path)', () => {
    expect(selfCommand(['bun', '/$bunfs/root/announcer', 'tail', 'x'], '/opt/cni/bin/announcer')).toEqual([
      '/opt/cni/bin/announcer',
    ]);
  });

  it('is the runtime and the script under Node', () => {
    expect(selfCommand(['/usr/bin/node', '/work/bin/announcer.js', 'tail'], '/usr/bin/node')).toEqual([
      '/usr/bin/node',
      '/work/bin/announcer.js',
    ]);
  });

  it('is the executable alone when there is no script', () => {
    expect(selfCommand(['/usr/bin/node'], '/usr/bin/node')).toEqual(['/usr/bin/node']);
  });

  it('puts the user-mode emulator that runs this process first', () => {
    expect(
      selfCommand(['bun', '/$bunfs/root/announcer'], '/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static'),
    ).toEqual(['/usr/bin/qemu-aarch64-static', '/opt/bin/announcer-arm64']);
  });
});
