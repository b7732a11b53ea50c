// Pure: the background announcer's own options (idleExitMs, metricsFile),
// from the network config of an ADD. They reach the announcer with every
// request an ADD sends, and on the command line of one an ADD starts: an ADD
// without background work gives it no job to read them from.
import { parseFlags } from '../cli-flags';
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

/** Settings as arguments after `announcer daemon <stateDir>`. */
export function settingsArgv(settings: DaemonSettings | undefined): string[] {
  if (!settings) return [];
  return ['--idle-exit-ms', String(settings.idleExitMs), ...(settings.metricsFile ? ['--metrics-file', settings.metricsFile] : [])];
}

/** Settings from the arguments after `announcer daemon <stateDir>`; undefined when absent or invalid. */
export function settingsFromArgv(argv: readonly string[]): DaemonSettings | undefined {
  const parsed = parseFlags(argv, { 'idle-exit-ms': 'int', 'metrics-file': 'string' }, 'announcer daemon STATEDIR [--idle-exit-ms MS] [--metrics-file FILE]');
  if (!parsed.ok) return undefined;
  return decodeSettings({ idleExitMs: parsed.flags['idle-exit-ms'], metricsFile: parsed.flags['metrics-file'] });
}
