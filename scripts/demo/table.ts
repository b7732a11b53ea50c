// The demo's before/after table and verdict, from what it saw (pure).

/** What the demo saw for one pod taking the reused IP. */
export interface Observation {
  /** The node's neighbour entry for the IP right after ADD returned; undefined when there was none. */
  entry?: { state: string; mac?: string };
  /** The MAC of the pod's eth0. */
  podMac: string;
  /** The first ping's reply time (ms, as ping printed it), or undefined when it was lost. */
  pingMs?: string;
  /** What ADD returned, e.g. `ok (bridge)` or `prevResult passed through`; `INVALID: …` when it was no result. */
  result: string;
}

/** ANSI styles, or none. */
export interface Style {
  bold: string;
  dim: string;
  red: string;
  green: string;
  yellow: string;
  off: string;
}

/** Styles for a terminal that shows colours. */
export const COLOURS: Style = {
  bold: '\x1b[1m',
  dim: '\x1b[2m',
  red: '\x1b[31m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  off: '\x1b[0m',
};
/** No styles: plain text. */
export const PLAIN: Style = { bold: '', dim: '', red: '', green: '', yellow: '', off: '' };

/** The facts the table shows for a case. */
interface Facts {
  entryText: string;
  holdsPodMac: boolean;
  matchText: string;
  pingText: string;
}

function facts(o: Observation, oldMac: string, pingWaitS: number): Facts {
  const mac = o.entry?.mac;
  const holdsPodMac = mac === o.podMac;
  return {
    entryText: `${o.entry?.state ?? 'none'} ${mac ?? '-'}`,
    holdsPodMac,
    matchText: holdsPodMac ? 'yes' : mac === oldMac ? "no: old pod's MAC" : 'no',
    pingText: pingText(o.pingMs, pingWaitS),
  };
}

/** The text of the first ping, as the table and the step lines show it. */
export function pingText(pingMs: string | undefined, pingWaitS: number): string {
  return pingMs === undefined ? `lost (no reply in ${pingWaitS} s)` : `ok (${pingMs} ms)`;
}

/**
 * Whether the bug showed before (old MAC kept, ping lost) and the fix after (pod's MAC, ping answered, a valid result).
 */
export function outcome(before: Observation, after: Observation): { bugShown: boolean; fixShown: boolean } {
  return {
    bugShown: before.entry?.mac !== before.podMac && before.pingMs === undefined,
    fixShown: after.entry?.mac === after.podMac && after.pingMs !== undefined && !after.result.startsWith('INVALID'),
  };
}

const LABEL_WIDTH = 24;
const CELL_WIDTH = 28;

/** The before/after table, one string per line. */
export function renderTable(
  before: Observation,
  after: Observation,
  opts: { oldMac: string; pingWaitS: number; style: Style },
): string[] {
  const s = opts.style;
  const b = facts(before, opts.oldMac, opts.pingWaitS);
  const a = facts(after, opts.oldMac, opts.pingWaitS);
  const cell = (text: string, kind: 'good' | 'bad' | 'plain'): string => {
    const colour = kind === 'good' ? s.green : kind === 'bad' ? s.red : '';
    return `${colour}${text.padEnd(CELL_WIDTH)}${colour === '' ? '' : s.off}`;
  };
  const judged = (text: string, good: boolean): string => cell(text, good ? 'good' : 'bad');
  const row = (label: string, ...cells: string[]): string => `  ${label.padEnd(LABEL_WIDTH)}${cells.join('')}`;
  const heading = `${'BEFORE: bridge alone'.padEnd(CELL_WIDTH)}${'AFTER: bridge + announcer'.padEnd(CELL_WIDTH)}`;
  return [
    `  ${''.padEnd(LABEL_WIDTH)}${s.bold}${heading}${s.off}`,
    row('node entry after ADD', judged(b.entryText, b.holdsPodMac), judged(a.entryText, a.holdsPodMac)),
    row("pod's eth0 MAC", cell(before.podMac, 'plain'), cell(after.podMac, 'plain')),
    row("entry holds pod's MAC", judged(b.matchText, b.holdsPodMac), judged(a.matchText, a.holdsPodMac)),
    row(
      'ADD result',
      judged(before.result, !before.result.startsWith('INVALID')),
      judged(after.result, !after.result.startsWith('INVALID')),
    ),
    row(
      `first ping (-W${opts.pingWaitS})`,
      judged(b.pingText, before.pingMs !== undefined),
      judged(a.pingText, after.pingMs !== undefined),
    ),
  ];
}

/** The closing lines: what the table shows, in words. */
export function verdict(before: Observation, after: Observation, opts: { ip: string; style: Style }): string[] {
  const s = opts.style;
  const { bugShown, fixShown } = outcome(before, after);
  const seen = (o: Observation): string => `entry ${o.entry?.state ?? 'none'} ${o.entry?.mac ?? '-'}`;
  const ping = (o: Observation): string => (o.pingMs === undefined ? 'lost' : 'ok');
  return [
    bugShown
      ? `Before: the node kept the old pod's MAC for ${opts.ip}, so its first packet went to a MAC that is gone.`
      : `${s.yellow}Before: the bug did not show this time (${seen(before)}, ping ${ping(before)}).${s.off}`,
    fixShown
      ? "After:  the announcer's gratuitous ARP repaired the entry before ADD returned; the first ping got through."
      : `${s.red}After:  the fix did not show (${seen(after)}, pod ${after.podMac}, ` +
        `ping ${ping(after)}, result: ${after.result}).${s.off}`,
  ];
}
