import { describe, expect, it } from 'vitest';
import { ANNOUNCER_RUNTIME_ENV, detachedEnv, userModeEmulator } from '../../../src/sys/detached';

describe('detachedEnv', () => {
  const env = {
    PATH: '/usr/bin:/bin',
    CNI_COMMAND: 'ADD',
    CNI_NETNS: '/var/run/netns/pod',
    LD_LIBRARY_PATH: '/opt/containerd/lib:',
    QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu',
  };

  it("is PATH and the GC setting alone: nothing of the call (CNI_*) nor of the runtime's own variables", () => {
    expect(detachedEnv(env, false)).toEqual({ PATH: '/usr/bin:/bin', BUN_JSC_numberOfGCMarkers: '1' });
    expect(ANNOUNCER_RUNTIME_ENV).toEqual({ BUN_JSC_numberOfGCMarkers: '1' });
  });

  it('takes a usual PATH when this process has none', () => {
    expect(detachedEnv({ PATH: '' }, false)).toEqual({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ...ANNOUNCER_RUNTIME_ENV,
    });
  });

  it("carries the emulator's QEMU_* settings when an emulator runs this process", () => {
    expect(detachedEnv(env, true)).toEqual({
      PATH: '/usr/bin:/bin',
      ...ANNOUNCER_RUNTIME_ENV,
      QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu',
    });
  });
});

/** readlink answering like the kernel, or like qemu-user (which answers /proc/self/exe with the emulated program). */
function links(program: string, kernel: string): (path: string) => string {
  return (path) => {
    if (path === '/proc/self/exe') return program;
    if (path === '/proc/self/task/42/exe') return kernel;
    throw new Error(`unexpected readlink ${path}`);
  };
}

describe('userModeEmulator', () => {
  it('is none when the kernel runs this program itself (as here)', () => {
    expect(userModeEmulator()).toBeUndefined();
    expect(userModeEmulator(42, links('/opt/cni/bin/announcer', '/opt/cni/bin/announcer'), () => true)).toBeUndefined();
  });

  it('is the program the kernel runs when that is not this program (qemu-user)', () => {
    expect(userModeEmulator(42, links('/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static'), () => true)).toBe(
      '/usr/bin/qemu-aarch64-static',
    );
  });

  const isNoneWhenTitle =
    'is none when that program is not there to run (binfmt_misc with a ' +
    'preloaded emulator), or a link cannot be read';
  it(isNoneWhenTitle, () => {
    expect(
      userModeEmulator(42, links('/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static'), () => false),
    ).toBeUndefined();
    expect(userModeEmulator(42, links('/opt/bin/announcer-arm64', 'qemu (deleted)'), () => true)).toBeUndefined();
    expect(
      userModeEmulator(
        42,
        () => {
          throw new Error('EACCES');
        },
        () => true,
      ),
    ).toBeUndefined();
  });
});
