// What a CNI command runs on in the announcer, its one executor: the announcer's parts it shares with every other
// command and with the table of work (clocks, waits on the announcer's one poll, the frame budget, the attachment
// locks, the records it wrote, the closer of slow sockets), and its own (the caller's view of the file system, its
// gate). The announcer makes one per command (src/daemon/host.ts); `announcer announce`, alone in its process, makes
// its waits block (blockingWaits).
import type { Logger, LogLevel } from '../log';
import { MAX_GATEWAY_CHECK_MS, MAX_PROBE_MS } from '../cni/option-bounds';
import type { CallerView } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import { NotWantedError } from './errors';
import type { FrameBudget } from './budget';
import type { GatewayVerdict } from './gateway-verdict';
import type { RecordMemory } from './record-memory';
import type { FrameCounts } from './round';
import type { PodSession, SocketOpener } from './session';
import type { AttachmentRecord } from './state';

/** Clock and sleep, injected so that waiting can be tested without real time. */
export interface Timers {
  /** Milliseconds on this process's monotonic clock: for durations within the process. */
  now(): number;
  /**
   * Milliseconds since boot (CLOCK_BOOTTIME), the clock of times written to state and of the shim's deadlines: shared
   * by every process of the node (the next announcer, `announcer status`), never stepped.
   */
  bootMs(): number;
  /** Resolves after `ms` milliseconds; in the announcer, a deadline in its loop's poll(2). */
  sleep(ms: number): Promise<void>;
}

/** Awaitable waits on fds: a command waits for nothing else (sleeping is timers.sleep). */
export interface Waits {
  /** Resolves once one of `fds` is readable or `ms` have passed; rejects only when the wait itself fails (or stops). */
  readable(fds: readonly number[], ms: number): Promise<void>;
}

/** Waits that block the process in poll(2) (`announcer announce`, alone in its process). */
export function blockingWaits(libc: Libc): Waits {
  return { readable: async (fds, ms) => void libc.pollIn(fds, ms) };
}

/** A command's gate: whether it may still act, and that it does. */
export interface CommandGate {
  /** Why the command must not act now (its caller gone, the announcer stopping); undefined while it may. */
  stopReason(): string | undefined;
  /** Notes that the command acts: a stopping announcer no longer passes it on to the next one. */
  acting(): void;
}

/**
 * Throws NotWantedError (logged, with the frames sent before) once the command may no longer act; else notes that it
 * acts now, unless `acts` is false (the step may turn out to change nothing).
 */
export function requireWanted(deps: { gate: CommandGate; log: Logger }, step: string, sent = 0, acts = true): void {
  const why = deps.gate.stopReason();
  if (why !== undefined) {
    deps.log.warn(`${why}: ADD stops and undoes what it did`, { before: step, framesSentBefore: sent });
    throw new NotWantedError(step, sent, why);
  }
  if (acts) deps.gate.acting();
}

/** Throws NotWantedError once the command may no longer act; else notes that it acts now (DEL's removal, GC's). */
export function enterGate(gate: CommandGate, step: string): void {
  const why = gate.stopReason();
  if (why !== undefined) throw new NotWantedError(step, 0, why);
  gate.acting();
}

/** What ADD's round 1 did: the frames it sent and the addresses its probe left out. */
export interface FirstRoundReport {
  sent: FrameCounts;
  conflicts?: number | undefined;
  /** What the gateway check found in ADD (pending: the announcer asks next). */
  gateway?: GatewayVerdict | undefined;
}

/** The announcer's table of work, as the commands see it. */
export interface JobTable {
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

/** An attachment's lock, held until released. */
export interface HeldLock {
  /** Hands the lock to the next waiter; a second call does nothing. Never throws. */
  release(): void;
}

/**
 * The attachment locks: ADD and DEL of one attachment (and GC's removal of it, and a round writing its record) never
 * overlap. Without them, a DEL that arrives while ADD still waits for readiness finds no record and returns, and ADD
 * then hands background work over for an attachment that no longer exists; two ADDs each hand a job over and only one
 * is recorded.
 */
export interface AttachmentLocks {
  /** Takes the lock of attachment `name` (attachmentName) within `timeoutMs`; undefined when it stays held. */
  take(name: string, timeoutMs: number): Promise<HeldLock | undefined>;
}

/**
 * What a command waits for the attachment's lock beyond the longest an ADD holding it may work: `addWaitMs` for
 * readiness, then the conflict probe and gatewayCheck require's wait, each at its largest. ADD's other steps take
 * milliseconds, and round 1's wait for the node-wide rate limit ends half this grace after `addWaitMs`. Only a stuck
 * ADD holds the lock longer.
 */
export const LOCK_GRACE_MS = 10_000;

/** How long ADD and DEL wait for the lock of an attachment: addWaitMs + 2 s + 10 s + LOCK_GRACE_MS. */
export function lockWaitMs(addWaitMs: number): number {
  return addWaitMs + MAX_PROBE_MS + MAX_GATEWAY_CHECK_MS + LOCK_GRACE_MS;
}

/** What a CNI command runs on (see the top of this file). */
export interface CommandContext {
  libc: Libc;
  /** The netns switch, each netns path as the command's caller sees it. */
  open: SocketOpener;
  /** The caller's view of the file system: every path the command carries resolves there. */
  view: CallerView;
  timers: Timers;
  waits: Waits;
  gate: CommandGate;
  /** A logger for one attachment of `config` (or for the network, when ids are absent), to its logFile. */
  logger(
    config: { logFile?: string | undefined; logLevel: LogLevel },
    ids: { containerId?: string | undefined; ifname?: string | undefined; args?: { raw: Record<string, string> } },
  ): Logger;
  table: JobTable;
  /** The node-wide frame budget round 1 draws from. */
  frameBudget: FrameBudget;
  attachmentLocks: AttachmentLocks;
  /** What the announcer wrote to each record: a record read back with those bytes is not checked again. */
  written: RecordMemory;
  /** Closes a socket whose last close waits for an RCU grace period (AF_PACKET) on another thread. Never throws. */
  closeInBackground(fd: number): void;
}
