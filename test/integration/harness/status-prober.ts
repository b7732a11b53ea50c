// A `status` request to the announcer's socket every `everyMs`, from the test
// process (node:net), each on a connection of its own, timed from before the
// connect to its answer line: how long the announcer's loop leaves a caller
// waiting while it works.
import { join } from 'node:path';
import { askRaw } from './stream-garbage';

/** One status request: when it was sent (ms, performance clock), how long its answer took, and the answer. */
export interface StatusProbe {
  sentAt: number;
  ms: number;
  /** The parsed `control` answer, undefined when the connection failed or no line came. */
  answer?: ProbedStatus | undefined;
  error?: string | undefined;
}

/** What a status answer holds (src/daemon/daemon.ts). */
export interface ProbedStatus {
  ok: boolean;
  status?: { pid: number; attachments: unknown[]; counters: Record<string, any> };
}

/**
 * Keeps asking; `stop` ends it and resolves, once every request in flight has its answer and a last one was asked,
 * with every probe.
 */
export function startStatusProber(stateDir: string, everyMs: number): { stop(): Promise<StatusProbe[]> } {
  const path = join(stateDir, 'announcer.sock');
  const line = '{"v": 1, "build": "status-prober", "deadline": 1e15, "control": {"op": "status"}}\n';
  const probes: Promise<StatusProbe>[] = [];
  const ask = async (): Promise<StatusProbe> => {
    const sentAt = performance.now();
    try {
      const reply = await askRaw(path, line);
      const ms = performance.now() - sentAt;
      if (reply === null) return { sentAt, ms, error: 'closed without a line' };
      return { sentAt, ms, answer: (JSON.parse(reply) as { control?: ProbedStatus }).control };
    } catch (err) {
      return { sentAt, ms: performance.now() - sentAt, error: String(err) };
    }
  };
  const timer = setInterval(() => void probes.push(ask()), everyMs);
  probes.push(ask());
  return {
    async stop() {
      clearInterval(timer);
      const inFlight = await Promise.all(probes);
      // One more, sent after everything before it was answered: its counters are the latest.
      return [...inFlight, await ask()];
    },
  };
}

/** The p-th percentile (0..100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
