import { describe, expect, it } from 'vitest';
import { COLOURS, PLAIN, outcome, renderTable, verdict, type Observation } from '../../../scripts/demo/table';

const OLD = '86:03:17:7a:eb:6e';
const bug: Observation = { entry: { state: 'STALE', mac: OLD }, podMac: '5e:e8:36:5f:8f:62', result: 'ok (bridge)' };
const fix: Observation = {
  entry: { state: 'STALE', mac: '8e:18:76:d5:16:57' },
  podMac: '8e:18:76:d5:16:57',
  pingMs: '0.112',
  result: 'prevResult passed through',
};
const opts = { oldMac: OLD, pingWaitS: 2, style: PLAIN };

describe('renderTable', () => {
  it('lays out the before/after table in fixed columns, every cell padded', () => {
    expect(renderTable(bug, fix, opts)).toEqual([
      '                          BEFORE: bridge alone        AFTER: bridge + announcer   ',
      '  node entry after ADD    STALE 86:03:17:7a:eb:6e     STALE 8e:18:76:d5:16:57     ',
      "  pod's eth0 MAC          5e:e8:36:5f:8f:62           8e:18:76:d5:16:57           ",
      "  entry holds pod's MAC   no: old pod's MAC           yes                         ",
      '  ADD result              ok (bridge)                 prevResult passed through   ',
      '  first ping (-W2)        lost (no reply in 2 s)      ok (0.112 ms)               ',
    ]);
  });

  it('shows a missing entry as none and a MAC that is neither the pod\'s nor the old one as "no"', () => {
    const [, entry, , holds] = renderTable(
      { ...bug, entry: undefined },
      { ...fix, entry: { state: 'REACHABLE', mac: '02:00:00:00:00:01' } },
      opts,
    );
    expect(entry).toBe('  node entry after ADD    none -                      REACHABLE 02:00:00:00:00:01 ');
    expect(holds).toBe("  entry holds pod's MAC   no                          no                          ");
  });

  it('colours what shows the bug red and what shows the fix green, padding inside the colour', () => {
    const [, entry] = renderTable(bug, fix, { ...opts, style: COLOURS });
    expect(entry).toBe(
      `  node entry after ADD    \x1b[31m${'STALE 86:03:17:7a:eb:6e'.padEnd(28)}\x1b[0m` +
        `\x1b[32m${'STALE 8e:18:76:d5:16:57'.padEnd(28)}\x1b[0m`,
    );
  });
});

describe('outcome and verdict', () => {
  const countBugAsTitle =
    'count the bug as shown when the old MAC stays and the ping is lost, the fix ' +
    "when the pod's MAC is there and the ping answered";
  it(countBugAsTitle, () => {
    expect(outcome(bug, fix)).toEqual({ bugShown: true, fixShown: true });
    expect(verdict(bug, fix, { ip: '10.88.0.5', style: PLAIN })).toEqual([
      "Before: the node kept the old pod's MAC for 10.88.0.5, so its first packet went to a MAC that is gone.",
      "After:  the announcer's gratuitous ARP repaired the entry before ADD returned; the first ping got through.",
    ]);
  });

  it('say what was seen instead when a case did not show', () => {
    const lucky = { ...bug, entry: { state: 'REACHABLE', mac: bug.podMac }, pingMs: '0.2' };
    const invalid = { ...fix, result: 'INVALID: not JSON' };
    expect(outcome(lucky, invalid)).toEqual({ bugShown: false, fixShown: false });
    expect(verdict(lucky, invalid, { ip: '10.88.0.5', style: PLAIN })).toEqual([
      'Before: the bug did not show this time (entry REACHABLE 5e:e8:36:5f:8f:62, ping ok).',
      'After:  the fix did not show (entry STALE 8e:18:76:d5:16:57, pod 8e:18:76:d5:16:57, ping ok, ' +
        'result: INVALID: not JSON).',
    ]);
  });
});
