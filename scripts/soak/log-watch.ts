// The node's announcer log (announcer.conf's logFile), read incrementally: which announcers started (pid, build), why
// each one stopped (the line its stop begins with: idle, a signal, an upgrade, a resident announcer), how long its
// stop took (its last line). An announcer whose log says `idle: stopping` exited for being idle; with a log of the
// releases before the bounded stop (no reason line), one that stopped without handing over and that the soak did not
// signal did.
import { open } from 'node:fs/promises';

/** Why an announcer stopped, as its log says. */
export type StopReason = 'idle' | 'signal' | 'upgrade' | 'resident' | 'unknown';

/** One announcer's start or stop, as its log says. */
export interface AnnouncerEvent {
  /** Wall clock ms of the line. */
  at: number;
  pid: number;
  what: 'started' | 'stopped';
  build?: string;
  /** For a stop: why, how long it took (the bounded stop's own measure), and whether it handed bursts over. */
  reason?: StopReason;
  stopMs?: number;
  handedOver?: boolean;
}

const STARTED = /^(\S+) INFO announcer started .*?\bpid=(\d+) build=(\S+)/;
const STOPPED = /^(\S+) INFO announcer stopped .*?\bpid=(\d+)(.*)$/;
/** The first line of a stop, by its reason (src/daemon/daemon.ts, control-requests.ts). */
const REASONS: [RegExp, StopReason][] = [
  [/ INFO idle: stopping /, 'idle'],
  [/ INFO SIG[A-Z]+: handing over to the next announcer/, 'signal'],
  [/ INFO executable replaced: handing over to the new build/, 'upgrade'],
  [/ INFO a resident announcer starts: handing over to it/, 'resident'],
];

/** The log file read from where the last read ended. */
export class LogWatch {
  private offset = 0;
  private rest = '';
  /** Why each announcer began to stop, by pid, until its stop line. */
  private readonly reasons = new Map<number, StopReason>();
  readonly events: AnnouncerEvent[] = [];

  constructor(private readonly file: string) {}

  /** Reads what was appended since the last read and parses its start and stop lines. */
  async update(): Promise<void> {
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch {
      return; // not written yet
    }
    try {
      const chunks: Buffer[] = [];
      for (;;) {
        const buf = Buffer.alloc(1 << 20);
        const { bytesRead } = await handle.read(buf, 0, buf.length, this.offset);
        if (bytesRead === 0) break;
        this.offset += bytesRead;
        chunks.push(buf.subarray(0, bytesRead));
      }
      const lines = (this.rest + Buffer.concat(chunks).toString('utf8')).split('\n');
      this.rest = lines.pop() ?? '';
      for (const line of lines) this.parse(line);
    } finally {
      await handle.close();
    }
  }

  private parse(line: string): void {
    const started = STARTED.exec(line);
    if (started) {
      const [, time, pid, build] = started;
      this.events.push({ at: Date.parse(time!), pid: Number(pid), what: 'started', build: build! });
      return;
    }
    const reason = REASONS.find(([re]) => re.test(line))?.[1];
    const daemon = /\bdaemon=(\d+)/.exec(line)?.[1];
    if (reason && daemon) this.reasons.set(Number(daemon), reason);
    const stopped = STOPPED.exec(line);
    if (!stopped) return;
    const [, time, pid, rest] = stopped;
    const e: AnnouncerEvent = { at: Date.parse(time!), pid: Number(pid), what: 'stopped' };
    e.reason = this.reasons.get(e.pid) ?? 'unknown';
    const ms = /\bstopMs=(\d+)/.exec(rest!)?.[1];
    if (ms !== undefined) e.stopMs = Number(ms);
    // Earlier releases said handedOver=true|false; the bounded stop counts the bursts it handed over.
    const handed = /\bhandedOver=(\w+)/.exec(rest!)?.[1];
    if (handed !== undefined) e.handedOver = handed === 'true' || (/^\d+$/.test(handed) && Number(handed) > 0);
    this.events.push(e);
  }

  /** The announcers that exited for being idle, so far (`signalled`: pids the soak sent SIGTERM or SIGKILL). */
  idleExits(signalled: ReadonlySet<number>): AnnouncerEvent[] {
    return this.events.filter(
      (e) =>
        e.what === 'stopped' &&
        (e.reason === 'idle' || (e.reason === 'unknown' && e.handedOver === false && !signalled.has(e.pid))),
    );
  }
}
