// Pure: the announcer's own options (idleExitMs, metricsFile), from the
// network config of a command. They reach the announcer with every sync or
// count request of an ADD, and with every job.
import { checkOption } from '../cni/option-schema';

/** The announcer's settings; the latest ADD's win. */
export interface DaemonSettings {
  idleExitMs: number;
  metricsFile?: string | undefined;
}

/** Settings that pass the options' own schemas (idleExitMs required), else undefined. */
export function decodeSettings(value: unknown): DaemonSettings | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { idleExitMs, metricsFile } = value as Record<string, unknown>;
  const idle = checkOption('idleExitMs', idleExitMs);
  const metrics = checkOption('metricsFile', metricsFile);
  if (idle === undefined || (metricsFile !== undefined && metrics === undefined)) return undefined;
  return metrics === undefined ? { idleExitMs: idle } : { idleExitMs: idle, metricsFile: metrics };
}
