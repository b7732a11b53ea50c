// Pure types: what a command tells the announcer that hosts it about an attachment's background
// work, and its answer. Defined here, below src/daemon/, so that the commands name them without
// an import up into the announcer (src/daemon/protocol.ts builds its control requests on them).
import type { FrameCounts } from './round';

/** What a command tells the announcer. */
export type HostRequest =
  /**
   * Read this record again and (re)schedule its job; `sent` and `conflicts` are what ADD's round 1 sent and its probe
   * left out.
   */
  | { op: 'sync'; record: string; sent: FrameCounts; conflicts?: number }
  /** Forget this attachment: once answered, nothing more is sent for it. */
  | { op: 'cancel'; record: string }
  /** Count frames an ADD sent, and addresses its probe left out, without needing background work. */
  | { op: 'count'; sent: FrameCounts; conflicts?: number };

/** The announcer's answer. */
export type HostReply = { ok: true } | { ok: false; error: string };
