// What an announcer that hands over (handing-over.ts: an upgrade, a resident
// announcer taking over or stopping) leaves to the next one: how far each
// burst got, in `announcer-handover` in stateDir.
// The next announcer takes it once, at start: a round that fell due while the
// two changed places goes out late (up to LATE_GRACE_MS) rather than never,
// and no round already sent goes out again.
import { readFileSync } from 'node:fs';
import { join } from '../path';
import type { BackgroundJob } from '../announce/background-job';
import type { GatewayVerdict } from '../announce/gateway-verdict';
import { checkGatewayVerdict, checkJob } from '../announce/record-schema';
import { replaceFile, unlinkIfPresent } from '../sys/safe-file';
import { HANDOVER_FILE } from '../state-files';

/**
 * A burst handed over: its job as the record holds it, the index of its next round, and its gateway check's verdict so
 * far (the record gets it only once the check is over).
 */
export interface HandedOver {
  job: BackgroundJob;
  next: number;
  gateway?: GatewayVerdict | undefined;
}

/** Writes the bursts in progress for the next announcer. */
export function writeHandover(stateDir: string, works: ReadonlyMap<string, HandedOver>): void {
  replaceFile(stateDir, HANDOVER_FILE, JSON.stringify(Object.fromEntries(works)), 0o600);
}

/** Reads and removes what the previous announcer handed over (empty when nothing, or nothing valid). */
export function takeHandover(stateDir: string): Map<string, HandedOver> {
  const file = join(stateDir, HANDOVER_FILE);
  const taken = new Map<string, HandedOver>();
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return taken; // none (ENOENT), or not JSON: the records alone say what to do
  } finally {
    unlinkIfPresent(file);
  }
  if (value === null || typeof value !== 'object') return taken;
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    if (entry === null || typeof entry !== 'object') continue;
    const { job, next, gateway } = entry as Record<string, unknown>;
    const checked = checkJob(job);
    if (!checked || !Number.isInteger(next) || (next as number) < 1) continue;
    const verdict = gateway === undefined ? undefined : checkGatewayVerdict(gateway);
    taken.set(name, { job: checked, next: next as number, ...(verdict ? { gateway: verdict } : {}) });
  }
  return taken;
}
