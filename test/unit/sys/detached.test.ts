import { describe, expect, it, vi } from 'vitest';
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
    const got = detachedEnv(env, true);
    expect(got).toEqual({ PATH: '/usr/bin:/bin', ...ANNOUNCER_RUNTIME_ENV, QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu' });
  });
});

/** What the mocked readlinkSync and existsSync answer; undefined: node:fs's own. */
const fake = vi.hoisted(() => ({
  links: undefined as ((path: string) => string) | undefined,
  exists: undefined as ((path: string) => boolean) | undefined,
}));

vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>();
  return {
    ...fs,
    readlinkSync: ((path: string) => (fake.links ?? fs.readlinkSync)(path)) as typeof fs.readlinkSync,
    existsSync: (path: string) => (fake.exists ?? fs.existsSync)(path),
  };
});

/**
 * userModeEmulator when readlink answers /proc/self/exe with `program` and the kernel's link with `kernel` (qemu-user
 * answers the former with the emulated program), and `kernel` exists or not.
 */
function emulatorWith(program: string, kernel: string | Error, exists = true): string | undefined {
  fake.links = (path) => {
    if (kernel instanceof Error) throw kernel;
    if (path === '/proc/self/exe') return program;
    if (path === `/proc/self/task/${process.pid}/exe`) return kernel;
    throw new Error(`unexpected readlink ${path}`);
  };
  fake.exists = () => exists;
  try {
    return userModeEmulator();
  } finally {
    fake.links = undefined;
    fake.exists = undefined;
  }
}

describe('userModeEmulator', () => {
  it('is none when the kernel runs this program itself (as here)', () => {
    expect(userModeEmulator()).toBeUndefined();
    expect(emulatorWith('/opt/cni/bin/announcer', '/opt/cni/bin/announcer')).toBeUndefined();
  });

  it('is the program the kernel runs when that is not this program (qemu-user)', () => {
    const expected = '/usr/bin/qemu-aarch64-static';
    expect(emulatorWith('/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static')).toBe(expected);
  });

  const isNoneWhenTitle =
    'is none when that program is not there to run (binfmt_misc with a ' +
    'preloaded emulator), or a link cannot be read';
  it(isNoneWhenTitle, () => {
    expect(emulatorWith('/opt/bin/announcer-arm64', '/usr/bin/qemu-aarch64-static', false)).toBeUndefined();
    expect(emulatorWith('/opt/bin/announcer-arm64', 'qemu (deleted)')).toBeUndefined();
    expect(emulatorWith('/opt/bin/announcer-arm64', new Error('EACCES'))).toBeUndefined();
  });
});
