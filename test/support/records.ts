// An attachment record for tests: a valid one, with `over` replacing any of its fields.
import type { AttachmentRecord } from '../../src/announce/state';

/** The record of pod c0ffee's eth0 in netns /var/run/netns/pod, one original MAC; `over` replaces any field. */
export function attachmentRecord(over: Partial<AttachmentRecord> = {}): AttachmentRecord {
  return {
    network: 'podnet',
    containerId: 'c0ffee',
    ifname: 'eth0',
    netns: '/var/run/netns/pod',
    netnsId: { dev: 4, ino: 4026532300 },
    caller: { mnt: { dev: 4, ino: 4026531841 }, net: { dev: 4, ino: 4026531840 } },
    originalMacs: [{ name: 'eth0', mac: '86:03:17:7a:eb:6e' }],
    ...over,
  };
}
