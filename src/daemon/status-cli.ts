// `announcer status [--json] [--state-dir DIR]`: what the background
// announcer is doing, for operators on the node. It asks the announcer; when
// none runs, it reads the records in stateDir (no counters then).
import { DEFAULT_STATE_DIR } from '../cni/option-bounds';
import { parseFlags } from '../cli-flags';
import { listRecords, type RecordRead } from '../announce/state';
import type { VerbIo } from '../cli';
import { askAnnouncer } from '../shim/shim';
import type { Counters } from './metrics';
import { nextRound } from './rounds';
import { settledStatus } from './table';
import { describeNodeProof, describeVerdict } from '../announce/gateway-verdict';
import type { AttachmentStatus } from '../protocol';

/** The verb. */
export const STATUS_VERB = 'status';
/** Its usage line (records are read from the config's default stateDir unless --state-dir says otherwise). */
export const STATUS_USAGE = `usage: announcer ${STATUS_VERB} [--json] [--state-dir DIR]`;

/** What `status` reports, also its --json form. */
export interface StatusReport {
  source: 'daemon' | 'records';
  stateDir: string;
  pid?: number;
  attachments: AttachmentStatus[];
  counters?: Counters;
}

/**
 * Runs `announcer status`: asks the running announcer, else reads the records as of `bootMs` (CLOCK_BOOTTIME); resolves
 * with the exit status.
 */
export async function statusCommand(io: VerbIo, bootMs: () => number, argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, { json: 'bool', 'state-dir': 'string' }, STATUS_USAGE);
  if (!parsed.ok) {
    io.err(`announcer ${STATUS_VERB}: ${parsed.problem}`);
    return 2;
  }
  const stateDir = parsed.flags['state-dir'] ?? DEFAULT_STATE_DIR;
  const reply = await askAnnouncer(stateDir, { op: 'status' });
  const report: StatusReport =
    reply?.ok && reply.status
      ? {
          source: 'daemon',
          stateDir,
          pid: reply.status.pid,
          attachments: reply.status.attachments,
          counters: reply.status.counters as Counters,
        }
      : { source: 'records', stateDir, attachments: fromRecords(listRecords(stateDir), bootMs()) };
  if (parsed.flags.json) io.out(JSON.stringify(report));
  else for (const line of render(report)) io.out(line);
  return 0;
}

/**
 * The attachments with background work or a gateway verdict, as far as the records tell (no announcer running).
 */
export function fromRecords(records: readonly { read: RecordRead }[], now: number): AttachmentStatus[] {
  return records.flatMap(({ read }): AttachmentStatus[] => {
    if (read.kind !== 'ok') return [];
    const { job, gateway } = read.record;
    const settled = gateway ? [settledStatus(read.record, gateway)] : [];
    if (!job) return settled;
    const base = {
      network: job.network,
      containerId: job.containerId,
      ifname: job.ifname,
      netns: job.netns,
      roundsPlanned: job.schedule.length,
      ...(gateway ? { gateway } : {}),
    };
    if (job.firstRoundAt === undefined) {
      return now < job.readyDeadline ? [{ ...base, roundsSent: 0, deferred: true }] : settled;
    }
    const next = nextRound(job.schedule, job.firstRoundAt, 1, now);
    if (next.dueAt === undefined) return settled;
    return [
      { ...base, roundsSent: next.index, nextRoundInMs: Math.max(0, Math.round(next.dueAt - now)), deferred: false },
    ];
  });
}

/** The human form: a headline, one line per attachment, the counters. */
export function render(report: StatusReport): string[] {
  const lines = [
    report.source === 'daemon'
      ? `background announcer: running, pid ${report.pid}, stateDir ${report.stateDir}`
      : `background announcer: not running; from the records in ${report.stateDir} (no counters)`,
  ];
  if (report.attachments.length === 0) lines.push('no active attachments');
  for (const a of report.attachments) {
    const next = a.deferred
      ? 'waiting for the pod to be ready'
      : a.nextRoundInMs !== undefined
        ? `next round in ${a.nextRoundInMs} ms`
        : 'no round planned';
    const rounds = `rounds=${a.roundsSent}/${a.roundsPlanned}`;
    lines.push(`${a.network} ${a.containerId} ${a.ifname} netns=${a.netns} ${rounds} ${next}`);
    if (a.gateway) lines.push(`  gateway check: ${describeVerdict(a.gateway)}`);
    for (const p of a.gateway?.node ?? []) lines.push(`  node view: ${describeNodeProof(p)}`);
  }
  const c = report.counters;
  if (!c) return lines;
  return [
    ...lines,
    `frames sent: garp-request=${c.frames.garpRequest} garp-reply=${c.frames.garpReply} na=${c.frames.na}`,
    `rounds: sent=${c.rounds.sent} skipped-not-ready=${c.rounds.skippedNotReady} skipped-late=${c.rounds.skippedLate}`,
    `deferred waits: started=${c.deferred.started} ready=${c.deferred.ready} ` +
      `timed-out=${c.deferred.timedOut} gone=${c.deferred.gone}`,
    `rate-limited rounds: delayed=${c.rateLimited.delayed} dropped=${c.rateLimited.dropped}`,
    `address conflicts: ${c.conflicts}`,
    `gateway checks: answered=${c.gateway.answered} no-answer=${c.gateway.noAnswer} ` +
      `no-gateway=${c.gateway.noGateway} off=${c.gateway.off} requests=${c.gateway.requests}`,
    `errors: ${c.errors}`,
  ];
}
