// Receive-only AF_PACKET sockets for the frames of one ethertype (ARP, IPv6) of
// pod interfaces (see Libc.openReceiver), and a bounded read of whatever
// arrives on them. Like every packet socket, one is bound to the netns it was
// opened in (netns.ts).
import type { Libc } from './libc';

/** Bytes read per frame: an Ethernet frame without FCS fits. */
const FRAME_BYTES = 1518;
/** Frames read per receiver and call at most: a flood cannot hold the reader. */
const MAX_FRAMES_PER_READ = 256;

/** Receives the frames of one ethertype on one interface, in and out. */
export interface FrameReceiver {
  readonly ifindex: number;
  readonly fd: number;
  /** Reads one queued frame into `buf` without blocking: its length, or undefined when none is queued. */
  receive(buf: Uint8Array): number | undefined;
  /** Closes the socket; further reads throw. */
  close(): void;
  /**
   * Gives up the socket without closing it and returns its fd (for the caller's release, see AddDeps); further reads
   * throw.
   */
  release(): number;
}

/** A frame read from one interface. */
export interface ReceivedFrame {
  ifindex: number;
  frame: Buffer;
}

/** Wraps an already-open, bound receiver fd (from Libc.openReceiver). */
export function frameReceiver(libc: Libc, fd: number, ifindex: number): FrameReceiver {
  let open = true;
  const live = (): void => {
    if (!open) throw new Error('frame receiver is closed');
  };
  return {
    ifindex,
    fd,
    receive(buf) {
      live();
      return libc.recvNow(fd, buf);
    },
    close() {
      if (!open) return;
      open = false;
      libc.close(fd);
    },
    release() {
      live();
      open = false;
      return fd;
    },
  };
}

/**
 * Waits up to `timeoutMs` for a frame on one of `receivers`, then returns what each holds (oldest first,
 * MAX_FRAMES_PER_READ at most); [] on timeout.
 */
export function readFrames(libc: Libc, receivers: readonly FrameReceiver[], timeoutMs: number): ReceivedFrame[] {
  if (receivers.length === 0) return [];
  const ready = libc.pollIn(
    receivers.map((r) => r.fd),
    timeoutMs,
  );
  const frames: ReceivedFrame[] = [];
  const buf = Buffer.alloc(FRAME_BYTES);
  receivers.forEach((r, i) => {
    if (!ready[i]) return;
    for (let k = 0; k < MAX_FRAMES_PER_READ; k++) {
      const n = r.receive(buf);
      if (n === undefined) return;
      frames.push({ ifindex: r.ifindex, frame: Buffer.from(buf.subarray(0, n)) });
    }
  });
  return frames;
}
