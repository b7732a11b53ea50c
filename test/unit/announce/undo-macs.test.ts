import { describe, expect, it } from 'vitest';
import type { PodSession } from '../../../src/announce/session';
import type { AttachmentRecord } from '../../../src/announce/state';
import { restoreRecordedMacs } from '../../../src/announce/undo-macs';
import { createLogger, silentLogger } from '../../../src/log';

function fakeSession(failOn: number | undefined) {
  const set: { index: number; mac: string }[] = [];
  const session = {
    interfaces: [
      { name: 'eth0', index: 2 },
      { name: 'net1', index: 3 },
    ],
    pod: {
      rtnl: {
        setMac(index: number, mac: Uint8Array) {
          if (index === failOn) throw new Error('set MAC of ifindex 3: EBUSY');
          set.push({ index, mac: Buffer.from(mac).toString('hex') });
        },
      },
    },
  } as unknown as PodSession;
  return { session, set };
}

const record = (): AttachmentRecord => ({
  network: 'podnet',
  containerId: 'c0ffee',
  ifname: 'eth0',
  netns: '/var/run/netns/pod',
  netnsId: { dev: 4, ino: 4026532300 },
  originalMacs: [
    { name: 'eth0', mac: '02:42:0a:58:00:05' },
    { name: 'net1', mac: '02:42:0a:59:00:07' },
    { name: 'gone0', mac: '02:42:0a:5a:00:09' },
  ],
});

describe('restoreRecordedMacs', () => {
  it('puts every recorded MAC back and leaves only those it could not restore in the record', () => {
    const { session, set } = fakeSession(3);
    const r = record();
    restoreRecordedMacs(session, r, silentLogger);
    expect(set).toEqual([{ index: 2, mac: '02420a580005' }]);
    expect(r.originalMacs).toEqual([
      { name: 'net1', mac: '02:42:0a:59:00:07' },
      { name: 'gone0', mac: '02:42:0a:5a:00:09' },
    ]);
  });

  it('empties the record when all are restored', () => {
    const { session } = fakeSession(undefined);
    const r = { ...record(), originalMacs: record().originalMacs.slice(0, 2) };
    restoreRecordedMacs(session, r, silentLogger);
    expect(r.originalMacs).toEqual([]);
  });
});

describe('restoreRecordedMacs logs', () => {
  const eachMACRestoredTitle =
    'each MAC restored and each it could not restore; an interface no longer in the pod is left to DEL silently';
  it(eachMACRestoredTitle, () => {
    const lines: string[] = [];
    const log = createLogger(
      (line) => void lines.push(line.slice(25, -1)),
      'debug',
      {},
      () => new Date(0),
    );
    restoreRecordedMacs(fakeSession(3).session, record(), log);
    expect(lines).toEqual([
      'INFO restored the original MAC interface=eth0 mac=02:42:0a:58:00:05',
      'ERROR cannot restore the original MAC: DEL will try again interface=net1 mac=02:42:0a:59:00:07 ' +
        'error="set MAC of ifindex 3: EBUSY"',
    ]);
  });
});
