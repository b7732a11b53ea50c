// rtnetlink change notifications: a netlink socket subscribed to groups, for
// poll(2), read without waiting. A socket belongs to the netns it was opened in
// (see netns.ts); this file never switches.
import { decodeMessages, type NetlinkMessage } from '../wire/netlink';
import type { Libc } from './libc';
import { hasErrno } from './sys-error';

/** Large enough for one datagram of notifications (the kernel fills at most 32 KiB per recv). */
const RECEIVE_BYTES = 64 * 1024;

/**
 * A socket subscribed to rtnetlink notifications: readable means "something changed". Callers either drain it and read
 * the state again, or read the notifications themselves.
 */
export class RtnlEvents {
  private readonly buffer = Buffer.alloc(RECEIVE_BYTES);

  constructor(
    private readonly libc: Libc,
    /** The socket, for poll(2). */
    readonly fd: number,
  ) {}

  /** Discards every queued notification. */
  drain(): void {
    this.take();
  }

  /**
   * Every queued notification, without waiting; `overflowed` when the kernel dropped some (ENOBUFS, a busy node):
   * the messages are then incomplete and the caller reads the state again.
   */
  take(): { messages: NetlinkMessage[]; overflowed: boolean } {
    const messages: NetlinkMessage[] = [];
    let overflowed = false;
    for (;;) {
      let n;
      try {
        n = this.libc.recvNow(this.fd, this.buffer);
      } catch (err) {
        // ENOBUFS: notifications overflowed. Still a change: the caller re-reads.
        if (!hasErrno(err, 'ENOBUFS')) throw err;
        overflowed = true;
        continue;
      }
      if (n === undefined) return { messages, overflowed };
      for (const m of decodeMessages(this.buffer.subarray(0, n))) {
        messages.push({ ...m, payload: Buffer.from(m.payload) }); // the receive buffer is reused
      }
    }
  }

  /** Closes the socket. */
  close(): void {
    this.libc.close(this.fd);
  }
}

/** Opens a socket in the current netns subscribed to `groups` (RtnlGroup values). */
export function openRtnlEvents(libc: Libc, groups: readonly number[]): RtnlEvents {
  const fd = libc.openNetlinkSocket();
  try {
    for (const group of groups) libc.joinGroup(fd, group);
  } catch (err) {
    libc.close(fd);
    throw err;
  }
  return new RtnlEvents(libc, fd);
}

/**
 * Blocks until one of `sources` has a notification or `timeoutMs` passes, then drains them all; whether anything
 * arrived.
 */
export function awaitChange(libc: Libc, sources: readonly RtnlEvents[], timeoutMs: number): boolean {
  const ready = libc.pollIn(
    sources.map((s) => s.fd),
    timeoutMs,
  );
  for (const s of sources) s.drain();
  return ready.some(Boolean);
}
