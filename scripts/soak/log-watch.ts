// The node's announcer log (announcer.conf's logFile), read incrementally: which announcers started (pid, build),
// which stopped and whether they handed over. An announcer that stopped without handing over and that the soak did
// not signal exited for being idle.
import { open } from 'node:fs/promises';

/** One announcer's start or stop, as its log says. */
export interface AnnouncerEvent {
  /** Wall clock ms of the line. */
  at: number;
  pid: number;
  what: 'started' | 'stopped';
  build?: string;
  handedOver?: boolean;
}

const STARTED = /^(\S+) INFO announcer started .*?\bpid=(\d+) build=(\S+)/;
const STOPPED = /^(\S+) INFO announcer stopped .*?\bpid=(\d+) handedOver=(true|false)/;

/** The log file read from where the last read ended. */
export class LogWatch {
  private offset = 0;
  private rest = '';
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
    const stopped = STOPPED.exec(line);
    if (stopped) {
      const [, time, pid, handedOver] = stopped;
      this.events.push({ at: Date.parse(time!), pid: Number(pid), what: 'stopped', handedOver: handedOver === 'true' });
    }
  }

  /** The announcers that stopped without handing over and that were not sent `signalled` (idle exits), so far. */
  idleExits(signalled: ReadonlySet<number>): AnnouncerEvent[] {
    return this.events.filter((e) => e.what === 'stopped' && e.handedOver === false && !signalled.has(e.pid));
  }
}
