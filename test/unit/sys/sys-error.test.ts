import { constants } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  EAGAIN,
  EINTR,
  EINVAL,
  EIO,
  ENAMETOOLONG,
  errnoName,
  errnoNumber,
  hasErrno,
  isSysError,
  SysError,
  sysErrorFrom,
} from '../../../src/sys/sys-error';

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

describe('sysErrorFrom', () => {
  it('carries the errno of a node:fs error, and the error as its cause', () => {
    const fsError = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT', errno: -2 });
    const e = sysErrorFrom('open /x', fsError);
    expect(e.message).toBe('open /x: ENOENT');
    expect(e.errno).toBe(2);
    expect(e.cause).toBe(fsError);
  });

  it('reads EIO when the code names no errno, and passes a SysError through', () => {
    expect(sysErrorFrom('write /x', new Error('odd')).code).toBe('EIO');
    expect(sysErrorFrom('write /x', Object.assign(new Error('odd'), { code: 'ERR_SOMETHING' })).code).toBe('EIO');
    const own = new SysError('append /x: not a regular file', 22);
    expect(sysErrorFrom('write /x', own)).toBe(own);
  });
});

describe('errno', () => {
  it('agrees with node:os on every name and number', () => {
    for (const [name, n] of Object.entries(constants.errno)) {
      expect(errnoNumber(name), name).toBe(n);
      expect(errnoNumber(errnoName(n)!), `${n}`).toBe(n);
    }
  });

  it('uses the usual name of a number with two', () => {
    expect(errnoName(11)).toBe('EAGAIN');
    expect(errnoName(95)).toBe('ENOTSUP');
    expect(errnoName(19)).toBe('ENODEV');
    expect(errnoName(41)).toBeUndefined();
    expect(errnoName(9999)).toBeUndefined();
  });

  it('declares each named constant with its number', () => {
    for (const [name, n] of Object.entries({ EINTR, EIO, EAGAIN, EINVAL, ENAMETOOLONG })) {
      expect(n, name).toBe(constants.errno[name as keyof typeof constants.errno]);
      expect(errnoName(n)).toBe(name);
    }
  });
});
