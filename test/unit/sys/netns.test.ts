// checkNetnsPath against the real namespace files of this process: no root needed. threadsInOtherNetns with a
// thread moved into a netns of its own: root.
import { fstatSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadLibc, type Libc } from '../../../src/sys/libc';
import { checkNetnsPath, threadsInOtherNetns } from '../../../src/sys/netns';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { notRoot, skipUnless } from '../../support/skip';
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
    const got = checkNetnsPath(libc, `/proc/${process.pid}/ns/${file}`);
    expect(got).toEqual({ kind: 'not-netns', reason: `it is a ${name} namespace` });
  });

  it("recognises the plugin's own network namespace", () => {
    expect(checkNetnsPath(libc, `/proc/${process.pid}/ns/net`)).toEqual({ kind: 'own' });
  });

  it('reports a missing path, and a regular file without opening or querying it', () => {
    expect(checkNetnsPath(libc, '/var/run/netns/does-not-exist-announcer')).toEqual({ kind: 'missing' });
    const regular = fileURLToPath(import.meta.url); // this test file
    expect(checkNetnsPath(fakeLibc({}), regular)).toEqual({ kind: 'not-netns', reason: 'not a namespace file (nsfs)' });
  });

  it('refuses a namespace file whose type cannot be read', () => {
    const failing = fakeLibc({
      nsType: () => {
        throw new Error('ioctl(NS_GET_NSTYPE): ENOTTY');
      },
    });
    const seen = checkNetnsPath(failing, `/proc/${process.pid}/ns/net`);
    expect(seen).toEqual({ kind: 'not-netns', reason: 'ioctl(NS_GET_NSTYPE): ENOTTY' });
  });

  describe('without ioctl(NS_GET_NSTYPE) (ENOTTY before Linux 4.11, ENOSYS under qemu-user)', () => {
    const own = `/proc/${process.pid}/ns/net`;
    /** A libc without the ioctl whose setns(CLONE_NEWNET) accepts only `netns` (by inode), recording each call. */
    function noIoctl(errno: number, setnsErrno?: number): { libc: Libc; calls: string[] } {
      const calls: string[] = [];
      const netnsIno = statSync(own).ino;
      const libc = fakeLibc({
        nsType: () => {
          throw new SysError('ioctl(NS_GET_NSTYPE)', errno);
        },
        setns: (fd) => {
          const isNetns = fstatSync(fd).ino === netnsIno;
          calls.push(isNetns ? 'setns(netns)' : 'setns(other)');
          if (setnsErrno !== undefined || !isNetns) throw new SysError('setns', setnsErrno ?? 22);
        },
      });
      return { libc, calls };
    }

    for (const errno of [25, 38]) {
      it(`errno ${errno}: setns(CLONE_NEWNET) tells, and a netns entered is left at once`, () => {
        const accepted = noIoctl(errno);
        expect(checkNetnsPath(accepted.libc, own)).toEqual({ kind: 'own' });
        expect(accepted.calls).toEqual(['setns(netns)', 'setns(netns)']);
        const refused = noIoctl(errno);
        const got = checkNetnsPath(refused.libc, `/proc/${process.pid}/ns/mnt`);
        expect(got).toEqual({ kind: 'not-netns', reason: 'it is not a network namespace' });
        expect(refused.calls).toEqual(['setns(other)']);
      });
    }

    it('refuses when setns fails otherwise, and on any other errno of the ioctl', () => {
      expect(checkNetnsPath(noIoctl(38, 1).libc, own)).toEqual({ kind: 'not-netns', reason: 'setns: EPERM' });
      const shown = checkNetnsPath(noIoctl(9).libc, own);
      expect(shown).toEqual({ kind: 'not-netns', reason: 'ioctl(NS_GET_NSTYPE): EBADF' });
    });
  });
});

describe('threadsInOtherNetns', () => {
  it('finds none while every thread is in this netns', () => {
    expect(threadsInOtherNetns()).toEqual([]);
  });

  it.skipIf(skipUnless('root', notRoot()))('finds a thread that entered another netns, by tid and name', async () => {
    const name = `announcer-threads-${process.pid}`;
    execFileSync('ip', ['netns', 'add', name]);
    // A worker thread that moves itself into the netns (setns moves the calling thread alone) and stays there.
    const code = `
      const { parentPort } = require('node:worker_threads');
      const koffi = require('koffi');
      const setns = koffi.load('libc.so.6').func('int setns(int fd, int nstype)');
      const fd = require('node:fs').openSync('/var/run/netns/${name}', 'r');
      parentPort.postMessage(setns(fd, 0x40000000));
      setInterval(() => undefined, 1000);`;
    const worker = new Worker(code, { eval: true });
    try {
      expect(await new Promise((resolve) => worker.once('message', resolve))).toBe(0);
      const found = threadsInOtherNetns();
      expect(found).toHaveLength(1);
      expect(found[0]!.tid).toBeGreaterThan(0);
    } finally {
      await worker.terminate();
      execFileSync('ip', ['netns', 'del', name]);
    }
  });
});
