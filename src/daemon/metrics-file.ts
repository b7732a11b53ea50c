// metricsFile (bare hosts: node_exporter's textfile collector), written from
// the announcer's registry at most once a second, and only once it changed.
import type { LazyMetrics } from './lazy-metrics';

/** Metrics are written at most this often. */
export const METRICS_EVERY_MS = 1000;

/** What writing the file needs. */
export interface MetricsFileDeps {
  /** Monotonic ms. */
  now(): number;
  /** Writes the file atomically. */
  write(file: string, text: string): void;
  /** Counts and logs a write that failed. */
  failed(file: string, error: unknown): void;
}

/** The metrics file of one announcer. */
export class MetricsFile {
  /** The text as last written (at first, the registry's text with nothing counted, which is never written). */
  private written: Promise<string> | undefined;
  private writtenAt = -Infinity;

  constructor(
    private readonly deps: MetricsFileDeps,
    private readonly metrics: Pick<LazyMetrics, 'text' | 'zeroText'>,
  ) {}

  /**
   * Writes the metrics to `file` (none: nothing) if they changed, and unless written less than METRICS_EVERY_MS ago
   * (`force`: whenever).
   */
  async flush(file: string | undefined, force: boolean): Promise<void> {
    const now = this.deps.now();
    if (!file || (!force && now - this.writtenAt < METRICS_EVERY_MS)) return;
    this.written ??= this.metrics.zeroText();
    const text = await this.metrics.text();
    if (text === (await this.written)) return;
    try {
      this.deps.write(file, text);
      this.written = Promise.resolve(text);
      this.writtenAt = now;
    } catch (err) {
      this.deps.failed(file, err);
    }
  }
}
