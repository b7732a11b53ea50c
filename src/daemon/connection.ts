// One client of the announcer's stream socket: the request line read in
// pieces, the reply lines written in pieces. Non-blocking both ways: what the
// socket cannot take now waits for poll(2) to say it has room.
import type { UnixSockets } from '../sys/unix-socket';

/**
 * What reading found: a complete request line, nothing complete yet, the end of the stream, or a line past the limit.
 */
export type ReadOutcome = { line: string } | 'pending' | 'closed' | 'too long';

/** A connected client: its socket, who it is, and the bytes in flight. */
export class Connection {
  private inbound: Buffer[] = [];
  private inboundBytes = 0;
  private outbound: Buffer[] = [];
  /** Whether the connection closes once everything written is sent. */
  closing = false;

  /** `until`: boot ms by which the request line must be in. */
  constructor(
    readonly fd: number,
    readonly peer: { pid: number; uid: number },
    public until: number,
  ) {}

  /** Whether reply bytes wait for room in the socket. */
  get wantsWrite(): boolean {
    return this.outbound.length > 0;
  }

  /**
   * Reads what is queued (into `scratch`) up to the first newline; bytes past it are ignored (one request per
   * connection).
   */
  read(sockets: UnixSockets, scratch: Buffer, maxLine: number): ReadOutcome {
    for (;;) {
      const n = sockets.receive(this.fd, scratch);
      if (n === undefined) return 'pending';
      if (n === 0) return 'closed';
      const chunk = scratch.subarray(0, n);
      const newline = chunk.indexOf(0x0a);
      const take = newline < 0 ? chunk : chunk.subarray(0, newline);
      if (this.inboundBytes + take.length > maxLine) return 'too long';
      this.inbound.push(Buffer.from(take));
      this.inboundBytes += take.length;
      if (newline >= 0) {
        const line = Buffer.concat(this.inbound, this.inboundBytes).toString('utf8');
        this.inbound = [];
        this.inboundBytes = 0;
        return { line };
      }
    }
  }

  /**
   * Whether the client has closed its end or reset it (its request taken, it waits for the end and writes nothing
   * more): reads what is queued past the request line, which is ignored anyway.
   */
  peerGone(sockets: UnixSockets, scratch: Buffer): boolean {
    try {
      for (;;) {
        const n = sockets.receive(this.fd, scratch);
        if (n === undefined) return false;
        if (n === 0) return true;
      }
    } catch {
      return true; // ECONNRESET
    }
  }

  /** Queues `text` and sends what the socket takes now; throws (EPIPE, ECONNRESET) when the client is gone. */
  write(sockets: UnixSockets, text: string): void {
    this.outbound.push(Buffer.from(text));
    this.flush(sockets);
  }

  /** Sends queued bytes until the socket is full; whether everything is out. */
  flush(sockets: UnixSockets): boolean {
    while (this.outbound.length > 0) {
      const head = this.outbound[0]!;
      const n = sockets.send(this.fd, head);
      if (n === 0) return false;
      if (n < head.length) this.outbound[0] = head.subarray(n);
      else this.outbound.shift();
    }
    return true;
  }
}
