import { describe, expect, it } from 'vitest';
import {
  AddressConflictError,
  AttachmentBusyError,
  InterfaceMissingError,
  StateError,
} from '../../../src/announce/errors';
import { CniError } from '../../../src/cni/errors';
import { toCniError } from '../../../src/commands/errors';
import { SysError } from '../../../src/sys/sys-error';

const conflict = { address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0', kind: 'reply' as const };

describe('toCniError', () => {
  it.each([
    [new StateError('cannot write state in /run/x: EACCES'), 105, 'cannot write state in /run/x: EACCES'],
    [
      new AttachmentBusyError(10_000),
      11,
      'another command on this attachment still runs after 10000 ms: try again later',
    ],
    [
      new InterfaceMissingError(['eth0', 'net1'], '/run/netns/p'),
      101,
      'pod interface "eth0", "net1" not found in /run/netns/p',
    ],
    [
      new InterfaceMissingError(['eth0'], '/run/netns/p', true),
      101,
      'pod interface "eth0" disappeared from /run/netns/p',
    ],
    [
      new AddressConflictError([conflict]),
      106,
      'IPv4 address conflict: 10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 (it answered ' +
        'ARP for that address on eth0): announcing nothing (conflictCheck: fail)',
    ],
    [new SysError('setns(/run/netns/p)', 1), 100, 'ADD: setns(/run/netns/p): EPERM'],
  ])('gives %s its code and message, keeping it as the cause', (err, code, msg) => {
    const mapped = toCniError(err, 'ADD') as CniError;
    expect(mapped).toBeInstanceOf(CniError);
    expect(mapped.toSpec('1.1.0')).toEqual({ cniVersion: '1.1.0', code, msg });
    expect(mapped.cause).toBe(err);
  });

  it('passes a CniError and anything unknown through unchanged', () => {
    const cni = new CniError(7, 'bad config');
    const bug = new TypeError('x is undefined');
    expect(toCniError(cni, 'ADD')).toBe(cni);
    expect(toCniError(bug, 'ADD')).toBe(bug);
  });
});
