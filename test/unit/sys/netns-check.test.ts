// checkNetnsPath against the real namespace files of this process: no root needed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { checkNetnsPath } from '../../../src/sys/netns';
import { SysError } from '../../../src/sys/sys-error';
import { fakeLibc } from '../../support/fake-libc';

const libc = loadLibc();

describe('checkNetnsPath', () => {
  it.each([
    ['mnt', 'mount'],
    ['uts', 'uts'],
    ['ipc', 'ipc'],
    ['pid', 'pid'],
    ['user', 'user'],
    ['cgroup', 'cgroup'],
  ])('refuses /proc/PID/ns/%s as a %s namespace', (file, name) => {
    expect(checkNetnsPath(libc, `/proc/${process.pid}/ns/${file}`)).toEqual({ kind: 'not-netns', reason: `it is a ${name} namespace` });
  });

  it("recognises the plugin's own network namespace", () => {
    expect(checkNetnsPath(libc, `/proc/${process.pid}/ns/net`)).toEqual({ kind: 'own' });
  });

  it('reports a missing path, and a regular file without opening or querying it', () => {
    expect(checkNetnsPath(libc, '/var/run/netns/does-not-exist-announcer')).toEqual({ kind: 'missing' });
    const dir = mkdtempSync(join(tmpdir(), 'announcer-netns-'));
    try {
      writeFileSync(join(dir, 'f'), '');
      expect(checkNetnsPath(fakeLibc({}), join(dir, 'f'))).toEqual({ kind: 'not-netns', reason: 'not a namespace file (nsfs)' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a namespace file whose type cannot be read', () => {
    const failing = fakeLibc({
      nsType: () => {
        throw new Error('ioctl(NS_GET_NSTYPE): ENOTTY');
      },
    });
    expect(checkNetnsPath(failing, `/proc/${process.pid}/ns/net`)).toEqual({ kind: 'not-netns', reason: 'ioctl(NS_GET_NSTYPE): ENOTTY' });
  });

  describe('without ioctl(NS_GET_NSTYPE) (ENOTTY before Linux 4.11, ENOSYS under qemu-user)', () => {
    for (const errno of [25, 38]) {
      const noIoctl = fakeLibc({
        nsType: () => {
          throw new SysError('ioctl(NS_GET_NSTYPE)', errno);
        },
      });

      it(`errno ${errno}: reads the type from the name nsfs gives the file`, () => {
        expect(checkNetnsPath(noIoctl, `/proc/${process.pid}/ns/net`)).toEqual({ kind: 'own' });
        expect(checkNetnsPath(noIoctl, `/proc/${process.pid}/ns/mnt`)).toEqual({ kind: 'not-netns', reason: 'it is a mount namespace' });
        expect(checkNetnsPath(noIoctl, `/proc/${process.pid}/ns/user`)).toEqual({ kind: 'not-netns', reason: 'it is a user namespace' });
      });
    }

    it('still refuses on any other errno', () => {
      const failing = fakeLibc({
        nsType: () => {
          throw new SysError('ioctl(NS_GET_NSTYPE)', 9);
        },
      });
      expect(checkNetnsPath(failing, `/proc/${process.pid}/ns/net`)).toEqual({ kind: 'not-netns', reason: 'ioctl(NS_GET_NSTYPE): EBADF' });
    });
  });
});
