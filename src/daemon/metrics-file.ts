// metricsFile (bare hosts: node_exporter's textfile collector), written from
// the announcer's registry at most once a second, and only once it changed.
// A failed write is throttled as a success is, and more: the text it failed to
// write (with the failure counted in `errors`) becomes the text to compare with,
// so a failure never brings on the next write by itself; an error line per cause
// at most once a minute. A path that can never be written is reported once, at
// start, and never tried.
import type { Logger } from '../log';
import type { LazyMetrics } from './lazy-metrics';

/** Metrics are written at most this often. */
export const METRICS_EVERY_MS = 1000;
/** At most one error line per cause this often; the failures between are counted in the next line. */
export const ERROR_LINE_EVERY_MS = 60_000;

/** What writing the file needs. */
export interface MetricsFileDeps {
  /** Monotonic ms. */
  now(): number;
  /** Writes the file atomically. */
  write(file: string, text: string): void;
  /** Why `file` can never be written (its directory missing, not a directory…); undefined when it may be. */
  problem(file: string): string | undefined;
  /** Counts a failure in the announcer's `errors`. */
  count(): void;
  log: Pick<Logger, 'error'>;
}

/** The metrics file of one announcer. */
export class MetricsFile {
  /** The text as last written or failed to be written (at first, the registry's with nothing counted). */
  private attempted: Promise<string> | undefined;
  private attemptedAt = -Infinity;
  /** By cause: when its last error line was written, and the failures since. */
  private readonly lines = new Map<string, { at: number; repeats: number }>();
  private file: string | undefined;

  /** `file`: the node's metricsFile (none: nothing is written). */
  constructor(
    private readonly deps: MetricsFileDeps,
    private readonly metrics: Pick<LazyMetrics, 'text' | 'zeroText'>,
    file: string | undefined,
  ) {
    this.file = file;
  }

  /** Checks once that the file can be written at all: one that never can is reported here, once, and never tried. */
  start(): void {
    const problem = this.file === undefined ? undefined : this.deps.problem(this.file);
    if (problem === undefined) return;
    this.deps.count();
    this.deps.log.error('metricsFile can never be written: not writing it', { file: this.file, problem });
    this.file = undefined;
  }

  /** Writes the metrics if they changed, unless written less than METRICS_EVERY_MS ago (`force`: whenever). */
  async flush(force: boolean): Promise<void> {
    const now = this.deps.now();
    const file = this.file;
    if (!file || (!force && now - this.attemptedAt < METRICS_EVERY_MS)) return;
    this.attempted ??= this.metrics.zeroText();
    const text = await this.metrics.text();
    if (text === (await this.attempted)) return;
    this.attemptedAt = now;
    try {
      this.deps.write(file, text);
      this.attempted = Promise.resolve(text);
    } catch (err) {
      this.failed(file, err, now);
      // The failure just counted is no change to write for.
      this.attempted = this.metrics.text();
    }
  }

  private failed(file: string, error: unknown, now: number): void {
    this.deps.count();
    const cause = String((error as NodeJS.ErrnoException)?.code ?? (error as Error)?.message ?? error);
    const last = this.lines.get(cause);
    if (last && now - last.at < ERROR_LINE_EVERY_MS) {
      last.repeats++;
      return;
    }
    this.lines.set(cause, { at: now, repeats: 0 });
    this.deps.log.error('cannot write the metrics file', { file, error, ...(last ? { notLogged: last.repeats } : {}) });
  }
}
