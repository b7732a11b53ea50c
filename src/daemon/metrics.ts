// The announcer's metrics: what it counts since it started (Counters, which `announcer status` shows), the
// Prometheus registry loaded on first use (prometheus.ts: prom-client is no part of the announcer's start, and a cold
// ADD waits for the announcer it starts to listen), and the metrics file (bare hosts: node_exporter's textfile
// collector). The file is written from the registry at most once a second, and only once it changed. A failed write
// is throttled as a success is, and more: the text it failed to write (with the failure counted in `errors`) becomes
// the text to compare with, so a failure never brings on the next write by itself; an error line per cause at most
// once a minute. A path that can never be written is reported once, at start, and never tried.
import type { FrameCounts } from '../announce/round';
import type { GatewayResult, GatewayVerdict } from '../announce/gateway-verdict';
import type { Announcer } from './daemon';
import type { AnnouncerMetrics, HistogramName } from './prometheus';

/** Everything counted since the background announcer started. */
export interface Counters {
  frames: FrameCounts;
  rounds: { sent: number; skippedNotReady: number; skippedLate: number };
  /** How deferred waits ended. */
  deferred: { started: number; ready: number; timedOut: number; gone: number };
  rateLimited: { delayed: number; dropped: number };
  /** IPv4 addresses left unannounced because another host answered for them (conflictCheck). */
  conflicts: number;
  errors: number;
  /** The gateway check: asks made in the loop, requests sent, and attachments by final verdict. */
  gateway: { asks: number; requests: number } & Record<GatewayCount, number>;
  /** What the node-local proof found wrong, by kind. */
  nodeMismatches: { duplicateMac: number; staleNeighbour: number; notLearned: number };
  /** The CNI commands this announcer took to run, by CNI_COMMAND (it is their one executor). */
  served: Record<ServedCommand, number>;
}

/** The CNI commands the announcer runs (VERSION is the shim's own). */
export const SERVED_COMMANDS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS'] as const;
/** One of SERVED_COMMANDS. */
export type ServedCommand = (typeof SERVED_COMMANDS)[number];

/** All zero. */
export function newCounters(): Counters {
  return {
    frames: { garpRequest: 0, garpReply: 0, na: 0 },
    rounds: { sent: 0, skippedNotReady: 0, skippedLate: 0 },
    deferred: { started: 0, ready: 0, timedOut: 0, gone: 0 },
    rateLimited: { delayed: 0, dropped: 0 },
    conflicts: 0,
    errors: 0,
    gateway: { asks: 0, requests: 0, answered: 0, noAnswer: 0, noGateway: 0, off: 0 },
    nodeMismatches: { duplicateMac: 0, staleNeighbour: 0, notLearned: 0 },
    served: { ADD: 0, DEL: 0, CHECK: 0, GC: 0, STATUS: 0 },
  };
}

/** Counts a CNI command taken to run; another CNI_COMMAND (dispatch refuses it) is not counted. */
export function countServed(counters: Counters, command: string | undefined): void {
  const known = SERVED_COMMANDS.find((c) => c === command);
  if (known) counters.served[known]++;
}

/** The final verdicts counted, as Counters fields. */
export type GatewayCount = 'answered' | 'noAnswer' | 'noGateway' | 'off';
const VERDICT_FIELDS: Record<Exclude<GatewayResult, 'pending'>, GatewayCount> = {
  answered: 'answered',
  'no-answer': 'noAnswer',
  'no-gateway': 'noGateway',
  off: 'off',
};

/** Counts one attachment's final gateway verdict (a pending one is not counted). */
export function countVerdict(counters: Counters, verdict: GatewayVerdict): void {
  if (verdict.result !== 'pending') counters.gateway[VERDICT_FIELDS[verdict.result]]++;
}

/** Adds `sent` to the frame counters. */
export function addFrames(counters: Counters, sent: FrameCounts): void {
  for (const kind of ['garpRequest', 'garpReply', 'na'] as const) counters.frames[kind] += sent[kind];
}

/** The Prometheus text format 0.0.4, as prom-client names it. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** Observations kept while the registry is not loaded; later ones are dropped (nothing reads them anyway). */
export const MAX_PENDING = 1000;

/** AnnouncerMetrics, loaded when its text is first asked for. */
export class LazyMetrics {
  readonly contentType = PROMETHEUS_CONTENT_TYPE;
  private loading: Promise<AnnouncerMetrics> | undefined;
  private loaded: AnnouncerMetrics | undefined;
  private readonly pending: { histogram: HistogramName; seconds: number }[] = [];

  /** `counters`: the announcer's counters, read at every scrape and write. */
  constructor(private readonly counters: () => Counters) {}

  /** Every metric in the Prometheus text format (loading the registry first). */
  async text(): Promise<string> {
    return (await this.load()).text();
  }

  /** The text of a registry with nothing counted (what a metrics file never needs to hold). */
  async zeroText(): Promise<string> {
    const { AnnouncerMetrics } = await import('./prometheus');
    return new AnnouncerMetrics(newCounters).text();
  }

  /** One event's time (AnnouncerMetrics.observe), kept until the registry loads. */
  observe(histogram: HistogramName, seconds: number): void {
    if (this.loaded) this.loaded.observe(histogram, seconds);
    else if (this.pending.length < MAX_PENDING) this.pending.push({ histogram, seconds });
  }

  private load(): Promise<AnnouncerMetrics> {
    return (this.loading ??= import('./prometheus').then(({ AnnouncerMetrics }) => {
      const metrics = new AnnouncerMetrics(this.counters);
      for (const { histogram, seconds } of this.pending.splice(0)) metrics.observe(histogram, seconds);
      return (this.loaded = metrics);
    }));
  }
}

/** Metrics are written at most this often. */
export const METRICS_EVERY_MS = 1000;
/** At most one error line per cause this often; the failures between are counted in the next line. */
export const ERROR_LINE_EVERY_MS = 60_000;

/** The metrics file of one announcer. */
export class MetricsFile {
  /** The text as last written or failed to be written (at first, the registry's with nothing counted). */
  private attempted: Promise<string> | undefined;
  private attemptedAt = -Infinity;
  /** A flush the throttle held back: the loop wakes for it (an idle announcer must still write its last change). */
  private heldBack = false;
  /** By cause: when its last error line was written, and the failures since. */
  private readonly lines = new Map<string, { at: number; repeats: number }>();
  private file: string | undefined;

  /**
   * The file of the announcer `a` (its node settings' metricsFile; none: nothing is written), written by its
   * writeMetrics (atomically); its metricsFileProblem says why a file can never be written.
   */
  constructor(private readonly a: Announcer) {
    this.file = a.settings.metricsFile;
  }

  /** Checks once that the file can be written at all: one that never can is reported here, once, and never tried. */
  start(): void {
    const problem = this.file === undefined ? undefined : this.a.metricsFileProblem(this.file);
    if (problem === undefined) return;
    this.a.counters.errors++;
    this.a.log.error('metricsFile can never be written: not writing it', { file: this.file, problem });
    this.file = undefined;
  }

  /** Writes the metrics if they changed, unless written less than METRICS_EVERY_MS ago (`force`: whenever). */
  async flush(force: boolean): Promise<void> {
    const now = this.a.timers.now();
    const file = this.file;
    if (!file) return;
    this.heldBack = !force && now - this.attemptedAt < METRICS_EVERY_MS;
    if (this.heldBack) return;
    this.attempted ??= this.a.metrics.zeroText();
    const text = await this.a.metrics.text();
    if (text === (await this.attempted)) return;
    this.attemptedAt = now;
    try {
      this.a.writeMetrics(file, text);
      this.attempted = Promise.resolve(text);
    } catch (err) {
      this.failed(file, err, now);
      // The failure just counted is no change to write for.
      this.attempted = this.a.metrics.text();
    }
  }

  /** When a flush held back by the throttle is due (monotonic ms); Infinity when none is. */
  wakeAt(): number {
    return this.heldBack ? this.attemptedAt + METRICS_EVERY_MS : Infinity;
  }

  private failed(file: string, error: unknown, now: number): void {
    this.a.counters.errors++;
    const cause = String((error as NodeJS.ErrnoException)?.code ?? (error as Error)?.message ?? error);
    const last = this.lines.get(cause);
    if (last && now - last.at < ERROR_LINE_EVERY_MS) {
      last.repeats++;
      return;
    }
    this.lines.set(cause, { at: now, repeats: 0 });
    this.a.log.error('cannot write the metrics file', { file, error, ...(last ? { notLogged: last.repeats } : {}) });
  }
}
