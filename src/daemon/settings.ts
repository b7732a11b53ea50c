// Pure: the announcer's own options (idleExitMs, metricsFile), from the
// network config of a command. They reach the announcer with every sync or
// count request of an ADD, and with every job.
import { optional } from 'zod/mini';
import { OPTIONS } from '../cni/option-schema';
import { check, strictShape } from '../cni/zod-checks';

/** The announcer's settings; the latest ADD's win. */
export interface DaemonSettings {
  idleExitMs: number;
  metricsFile?: string | undefined;
}

/** The settings as they travel: checked by the options' own schemas, unknown keys dropped. */
export const settingsSchema = strictShape({
  idleExitMs: OPTIONS.idleExitMs.schema,
  metricsFile: optional(OPTIONS.metricsFile.schema),
});

/** Settings that pass the options' own schemas (idleExitMs required), else undefined. */
export function decodeSettings(value: unknown): DaemonSettings | undefined {
  const checked = check(settingsSchema, value);
  return checked.ok ? checked.value : undefined;
}
