// AF_PACKET sockets of a pod: one that sends whole frames out of any interface,
// and receive-only ones for the frames of one ethertype (ARP, IPv6) of one
// interface (see Libc.openReceiver), with a bounded read of whatever arrives on
// them. A packet socket is bound to the netns it was opened in (see netns.ts),
// so ifindex values are the pod's.
import { sockaddrLl as sockaddr } from './abi/structs';
import type { Libc } from './libc';

/** Bytes read per frame: an Ethernet frame without FCS fits. */
const FRAME_BYTES = 1518;
/** Frames read per receiver and call at most: a flood cannot hold the reader. */
const MAX_FRAMES_PER_READ = 256;

/** A socket held until closed or given up: after either, using it throws. */
interface OwnedSocket {
  /** Closes the socket (once). */
  close(): void;
  /** Gives up the socket without closing it and returns its fd (for the caller's release, see AddDeps). */
  release(): number;
}

/** Sends whole Ethernet frames out of one interface of the socket's netns. */
export interface PacketSocket extends OwnedSocket {
  /** Sends one frame (Ethernet header included) out of `ifindex`. */
  send(ifindex: number, frame: Uint8Array): void;
}

/** Builds the struct sockaddr_ll that addresses a frame to `ifindex`: the frame's ethertype and destination MAC. */
export function sockaddrLl(ifindex: number, frame: Uint8Array): Buffer {
  const ethertype = ((frame[12] ?? 0) << 8) | (frame[13] ?? 0);
  return sockaddr(ifindex, ethertype, frame.subarray(0, 6));
}

/** Wraps an already-open packet socket fd. */
export function packetSocket(libc: Libc, fd: number): PacketSocket {
  const [live, owner] = ownedFd(libc, fd, 'packet socket');
  return { ...owner, send: (ifindex, frame) => void libc.sendto(live(), frame, sockaddrLl(ifindex, frame)) };
}

/** An fd held until closed (once) or released: `live` hands it out until then, and throws after. */
function ownedFd(libc: Libc, fd: number, what: string): [live: () => number, owner: OwnedSocket] {
  let open = true;
  const live = (): number => {
    if (!open) throw new Error(`${what} is closed`);
    return fd;
  };
  const owner: OwnedSocket = {
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
  return [live, owner];
}

/** Receives the frames of one ethertype on one interface, in and out. */
export interface FrameReceiver extends OwnedSocket {
  readonly ifindex: number;
  readonly fd: number;
  /** Reads one queued frame into `buf` without blocking: its length, or undefined when none is queued. */
  receive(buf: Uint8Array): number | undefined;
}

/** A frame read from one interface. */
export interface ReceivedFrame {
  ifindex: number;
  frame: Buffer;
}

/** Wraps an already-open, bound receiver fd (from Libc.openReceiver). */
export function frameReceiver(libc: Libc, fd: number, ifindex: number): FrameReceiver {
  const [live, owner] = ownedFd(libc, fd, 'frame receiver');
  return { ...owner, ifindex, fd, receive: (buf) => libc.recvNow(live(), buf) };
}

/**
 * Waits up to `timeoutMs` for a frame on one of `receivers`, then returns what each holds (oldest first,
 * MAX_FRAMES_PER_READ at most); [] on timeout.
 */
export function readFrames(libc: Libc, receivers: readonly FrameReceiver[], timeoutMs: number): ReceivedFrame[] {
  if (receivers.length === 0) return [];
  const fds = receivers.map((r) => r.fd);
  const ready = libc.pollIn(fds, timeoutMs);
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
