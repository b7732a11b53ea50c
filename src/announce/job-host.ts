// Pure types: how a command hands an attachment's background work to the announcer that runs it, in memory. Defined
// here, below src/daemon/, so that the commands name it without an import up into the announcer (jobs.ts implements
// it).
import type { PodSession } from './session';
import type { AttachmentRecord } from './state';
import type { FrameCounts } from './round';
import type { GatewayVerdict } from './gateway-verdict';

/** What ADD's round 1 did: the frames it sent and the addresses its probe left out. */
export interface FirstRoundReport {
  sent: FrameCounts;
  conflicts?: number | undefined;
  /** What the gateway check found in ADD (pending: the announcer asks next). */
  gateway?: GatewayVerdict | undefined;
}

/** The announcer's table of work, as the commands it hosts see it. */
export interface JobHost {
  /**
   * ADD of record `name` is done, and wrote `record`: its job (none when nothing is left for the background) replaces
   * any work the record had; `report` is counted. True when the table keeps `session` (ADD's, still open) for the
   * gateway check's first visit, and closes it then; false: ADD closes it.
   */
  added(name: string, record: AttachmentRecord, report: FirstRoundReport, session?: PodSession): boolean;
  /**
   * Ends the background work of record `name` (DEL, GC, a failed ADD over an earlier one): nothing more is sent. True
   * when there was work.
   */
  cancel(name: string): boolean;
}
