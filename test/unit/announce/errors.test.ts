import { describe, expect, it } from 'vitest';
import {
  AddressConflictError,
  AttachmentBusyError,
  InterfaceMissingError,
  StateError,
} from '../../../src/announce/errors';

describe('the announce layer errors', () => {
  it('name themselves (the CNI code is chosen by class, logs show the name)', () => {
    expect(new StateError('x').name).toBe('StateError');
    expect(new AttachmentBusyError(11_000).name).toBe('AttachmentBusyError');
    expect(new InterfaceMissingError(['eth0'], '/run/netns/pod').name).toBe('InterfaceMissingError');
    expect(new AddressConflictError([]).name).toBe('AddressConflictError');
  });

  it('say which interfaces are missing, and whether they left while ADD waited', () => {
    expect(new InterfaceMissingError(['eth0', 'net1'], '/run/netns/pod').message).toBe(
      'pod interface "eth0", "net1" not found in /run/netns/pod',
    );
    expect(new InterfaceMissingError(['net1'], '/run/netns/pod', true).message).toBe(
      'pod interface "net1" disappeared from /run/netns/pod',
    );
  });

  it('describe every address conflict, and that nothing was announced', () => {
    const err = new AddressConflictError([
      { address: '10.88.0.5', mac: '52:54:00:12:34:56', interface: 'eth0', kind: 'reply' },
      { address: '10.88.0.6', mac: '52:54:00:12:34:57', interface: 'eth0', kind: 'probe' },
    ]);
    expect(err.message).toBe(
      'IPv4 address conflict: 10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 (it answered ' +
        'ARP for that address on eth0); ' +
        '10.88.0.6 is in use by the host with MAC 52:54:00:12:34:57 (it is probing for that address ' +
        'itself on eth0): announcing nothing (conflictCheck: fail)',
    );
  });

  it('say how long the attachment stayed busy', () => {
    expect(new AttachmentBusyError(11_000).message).toBe(
      'another command on this attachment still runs after 11000 ms: try again later',
    );
  });
});
