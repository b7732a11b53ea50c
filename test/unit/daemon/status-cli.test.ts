// `announcer status` (src/daemon/status-cli.ts): the gateway verdict of each attachment, from the announcer (its
// table's status) or from the records.
import { describe, expect, it } from 'vitest';
import type { GatewayVerdict } from '../../../src/announce/gateway-verdict';
import type { AttachmentRecord } from '../../../src/announce/state';
import { fromRecords, render, type StatusReport } from '../../../src/daemon/status-cli';
import { newCounters } from '../../../src/daemon/metrics';
import { settledStatus } from '../../../src/daemon/table';

const IDS = { network: 'net', containerId: 'c1', ifname: 'eth0', netns: '/run/netns/pod' };
const CALLER = { mnt: { dev: 4, ino: 1 }, net: { dev: 4, ino: 2 } };
const ANSWERED: GatewayVerdict = {
  result: 'answered',
  answered: [{ interface: 'eth0', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 3 }],
  unanswered: [],
  asks: 1,
};
const record = (extra: Partial<AttachmentRecord>): AttachmentRecord => ({
  ...IDS,
  caller: CALLER,
  netnsId: { dev: 4, ino: 4026532999 },
  originalMacs: [],
  ...extra,
});

describe('render', () => {
  it('shows the gateway check and what the node saw under its attachment', () => {
    const node = [
      { interface: 'eth0', seen: { fdb: { kind: 'converged' as const, port: 'veth1' }, neighbours: [] } },
      { interface: 'net1', unseen: 'a macvlan interface: the node cannot see the segment' },
    ];
    const verdict = { ...ANSWERED, node };
    const report: StatusReport = {
      source: 'records',
      stateDir: '/var/lib/announcer',
      attachments: [
        settledStatus({ ...IDS, caller: CALLER, netnsId: { dev: 4, ino: 9 }, schedule: [0, 1000] }, verdict),
      ],
    };
    expect(render(report)).toEqual([
      'background announcer: not running; from the records in /var/lib/announcer (no counters)',
      'net c1 eth0 netns=/run/netns/pod rounds=2/2 no round planned',
      '  gateway check: answered: 10.88.0.1 by 52:54:00:12:34:56 after 3 ms (eth0)',
      '  node view: eth0: fdb converged on veth1; neighbours: none',
      '  node view: net1: a macvlan interface: the node cannot see the segment',
    ]);
  });

  it("renders the running announcer's headline and counters", () => {
    const report: StatusReport = { source: 'daemon', stateDir: '/s', pid: 7, attachments: [], counters: newCounters() };
    const lines = render(report);
    expect(lines.slice(0, 2)).toEqual(['background announcer: running, pid 7, stateDir /s', 'no active attachments']);
    const got = lines.slice(-2);
    expect(got).toEqual(['gateway checks: answered=0 no-answer=0 no-gateway=0 off=0 requests=0', 'errors: 0']);
  });
});

describe('fromRecords', () => {
  it('lists a record with a gateway verdict and no job', () => {
    const read = { kind: 'ok' as const, record: record({ gateway: ANSWERED }) };
    const found = fromRecords([{ read }], 0);
    expect(found).toEqual([{ ...IDS, roundsSent: 1, roundsPlanned: 1, deferred: false, gateway: ANSWERED }]);
    expect(fromRecords([{ read: { kind: 'ok', record: record({}) } }], 0)).toEqual([]);
  });
});
