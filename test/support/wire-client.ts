// A shim's side of the announcer's stream socket (src/protocol.ts), over FakeSockets: sends a request line, reads
// reply lines as they come (with the clock's time), and sees the end of stream.
import { decodeReply, encodeLine, WIRE_VERSION, type ControlRequest, type WireReply } from '../../src/protocol';
import type { FakeSockets } from './fake-sockets';
import type { ManualTimers } from './manual-timers';

/** A request line of a CNI command from build `build`, its sender waiting for the end until `deadline` (boot ms). */
export function cniLine(env: Record<string, string>, stdin: string, deadline: number, build = 'b1'): string {
  return encodeLine({ v: WIRE_VERSION, build, deadline, cni: { env, stdin } });
}

/** A request line of a control operation. */
export function controlLine(control: ControlRequest, deadline: number, build = 'b1'): string {
  return encodeLine({ v: WIRE_VERSION, build, deadline, control });
}

/** One connection of a test's client. */
export class WireClient {
  readonly fd: number;
  /** The reply lines read so far, with the time each was read. */
  readonly replies: { at: number; reply: WireReply | undefined }[] = [];
  /** Whether the announcer closed the connection. */
  ended = false;
  private rest = '';
  private left = false;

  constructor(
    private readonly sockets: FakeSockets,
    private readonly timers: ManualTimers,
    path: string,
  ) {
    this.fd = sockets.connect(path);
  }

  /** Writes `text` (what fits: FakeSockets.room). */
  send(text: string | Buffer): this {
    this.sockets.send(this.fd, Buffer.isBuffer(text) ? text : Buffer.from(text));
    return this;
  }

  /** Reads what the announcer wrote, line by line. */
  read(): this {
    if (this.ended || this.left) return this;
    const buf = Buffer.alloc(64 * 1024);
    for (let n = this.sockets.recvNow(this.fd, buf); n !== undefined; n = this.sockets.recvNow(this.fd, buf)) {
      if (n === 0) {
        this.ended = true;
        break;
      }
      this.rest += buf.subarray(0, n).toString('utf8');
    }
    const lines = this.rest.split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) this.replies.push({ at: this.timers.now(), reply: decodeReply(line) });
    return this;
  }

  /** The replies read so far, without their times. */
  lines(): (WireReply | undefined)[] {
    return this.replies.map((r) => r.reply);
  }

  /** Leaves: closes this end. */
  close(): void {
    this.left = true;
    this.sockets.close(this.fd);
  }
}
