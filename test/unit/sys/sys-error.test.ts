import { describe, it, expect } from 'vitest';
import { fromNetlinkError, hasErrno, isSysError, netlinkCall, SysError } from '../../../src/sys/sys-error';

describe('SysError', () => {
  it('names the operation and the errno in its message', () => {
    const e = new SysError('setns(/var/run/netns/pod)', 2);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('SysError');
    expect(e.message).toBe('setns(/var/run/netns/pod): ENOENT');
    expect(e.errno).toBe(2);
    expect(e.code).toBe('ENOENT');
    expect(e.operation).toBe('setns(/var/run/netns/pod)');
  });

  it('shows an errno without a name as a number', () => {
    const e = new SysError('sendto', 4000);
    expect(e.code).toBe('errno 4000');
    expect(e.message).toBe('sendto: errno 4000');
  });
});

describe('fromNetlinkError', () => {
  it('recovers the errno from "Request rejected: ENODEV"', () => {
    const cause = new Error('Request rejected: ENODEV');
    const e = fromNetlinkError('RTM_GETLINK eth9', cause);
    expect(e).toBeInstanceOf(SysError);
    expect(e.errno).toBe(19);
    expect(e.code).toBe('ENODEV');
    expect(e.operation).toBe('RTM_GETLINK eth9');
    expect(e.message).toBe('RTM_GETLINK eth9: ENODEV');
    expect(e.cause).toBe(cause);
  });

  it('recovers the errno from the numeric form the package uses for unnamed errnos', () => {
    const negative = fromNetlinkError('RTM_NEWADDR', new Error('Request rejected: -17'));
    expect([negative.errno, negative.code, negative.message]).toEqual([17, 'EEXIST', 'RTM_NEWADDR: EEXIST']);
    const unnamed = fromNetlinkError('RTM_NEWADDR', new Error('Request rejected: -4000'));
    expect([unnamed.errno, unnamed.code, unnamed.message]).toEqual([4000, 'errno 4000', 'RTM_NEWADDR: errno 4000']);
  });

  it('takes errno from an ErrnoException (negative, libuv style)', () => {
    const cause = Object.assign(new Error('send EPERM'), { errno: -1, code: 'EPERM', syscall: 'send' });
    const e = fromNetlinkError('RTM_SETLINK eth0', cause);
    expect([e.errno, e.code, e.message]).toEqual([1, 'EPERM', 'RTM_SETLINK eth0: EPERM']);
    expect(e.cause).toBe(cause);
  });

  it('takes errno from an error carrying a positive errno', () => {
    const e = fromNetlinkError('bind', Object.assign(new Error('bind failed'), { errno: 98 }));
    expect([e.errno, e.code]).toEqual([98, 'EADDRINUSE']);
  });

  it('prefers .errno over the message', () => {
    const e = fromNetlinkError('op', Object.assign(new Error('Request rejected: ENODEV'), { errno: -13 }));
    expect(e.code).toBe('EACCES');
  });

  it('maps an unknown error to EIO, keeping it as the cause', () => {
    const cause = new Error('socket hang up');
    const e = fromNetlinkError('RTM_GETADDR', cause);
    expect([e.errno, e.code, e.message]).toEqual([5, 'EIO', 'RTM_GETADDR: EIO']);
    expect(e.cause).toBe(cause);
  });

  it('maps an unknown errno name and a non-Error to EIO', () => {
    expect(fromNetlinkError('op', new Error('Request rejected: EBOGUS')).code).toBe('EIO');
    const thrown = fromNetlinkError('op', 'boom');
    expect(thrown.code).toBe('EIO');
    expect(thrown.cause).toBe('boom');
    expect(fromNetlinkError('op', { errno: 19 }).code).toBe('EIO');
  });

  it('passes a SysError through unwrapped', () => {
    const original = new SysError('setns', 1);
    expect(fromNetlinkError('RTM_GETLINK', original)).toBe(original);
  });
});

describe('isSysError and hasErrno', () => {
  const enodev = new SysError('RTM_GETLINK eth9', 19);

  it('recognises a SysError by class or by name', () => {
    expect(isSysError(enodev)).toBe(true);
    const foreign = Object.assign(new Error('from another copy'), { name: 'SysError', code: 'ENODEV' });
    expect(isSysError(foreign)).toBe(true);
    expect(hasErrno(foreign, 'ENODEV')).toBe(true);
    expect(isSysError(new Error('plain'))).toBe(false);
    expect(isSysError({ name: 'SysError' })).toBe(false);
  });

  it('matches any of the given errno names', () => {
    expect(hasErrno(enodev, 'ENODEV')).toBe(true);
    expect(hasErrno(enodev, 'ENOENT', 'ENODEV')).toBe(true);
    expect(hasErrno(enodev, 'ENOENT')).toBe(false);
    expect(hasErrno(enodev)).toBe(false);
  });

  it('is false for errors that are not SysErrors, even with a matching code', () => {
    const errno = Object.assign(new Error('ENODEV'), { code: 'ENODEV', errno: -19 });
    expect(hasErrno(errno, 'ENODEV')).toBe(false);
    expect(hasErrno(undefined, 'ENODEV')).toBe(false);
  });
});

describe('netlinkCall', () => {
  it('returns what the request resolves to', async () => {
    expect(await netlinkCall('RTM_GETLINK', async () => [1, 2])).toEqual([1, 2]);
  });

  it('rethrows a rejection as a SysError', async () => {
    const cause = new Error('Request rejected: EEXIST');
    const err = await netlinkCall('RTM_NEWADDR 10.88.0.5/24', () => Promise.reject(cause)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SysError);
    expect((err as SysError).message).toBe('RTM_NEWADDR 10.88.0.5/24: EEXIST');
    expect((err as SysError).errno).toBe(17);
    expect((err as SysError).cause).toBe(cause);
  });

  it('also wraps a request that throws synchronously', async () => {
    const err = await netlinkCall('RTM_GETLINK', () => {
      throw new Error('socket closed');
    }).catch((e: unknown) => e);
    expect(isSysError(err)).toBe(true);
    expect((err as SysError).message).toBe('RTM_GETLINK: EIO');
  });
});

describe('errno names shared by two constants', () => {
  it('uses the usual name: EAGAIN, not EWOULDBLOCK; ENOTSUP, not EOPNOTSUPP', () => {
    const again = fromNetlinkError('RTM_NEWLINK', new Error('Request rejected: EAGAIN'));
    expect(again.code).toBe('EAGAIN');
    expect(again.message).toBe('RTM_NEWLINK: EAGAIN');
    expect(hasErrno(again, 'EAGAIN')).toBe(true);
    expect(new SysError('sendto', 95).code).toBe('ENOTSUP');
  });
});

describe('netlink request timeouts', () => {
  it('become ETIMEDOUT', () => {
    const e = fromNetlinkError('RTM_GETLINK dump', new Error('Timeout has been reached'));
    expect([e.code, e.message]).toEqual(['ETIMEDOUT', 'RTM_GETLINK dump: ETIMEDOUT']);
  });
});
