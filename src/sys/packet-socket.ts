// A send-only AF_PACKET socket. It is bound to the netns it was opened in
// (see netns.ts), so ifindex values are the pod's.
import { sockaddrLl as sockaddr } from './abi/structs';
import type { Libc } from './libc';

/** Sends whole Ethernet frames out of one interface of the socket's netns. */
export interface PacketSocket {
  /** Sends one frame (Ethernet header included) out of `ifindex`. */
  send(ifindex: number, frame: Uint8Array): void;
  /** Closes the socket; further sends throw. */
  close(): void;
  /**
   * Gives up the socket without closing it and returns its fd (for the caller's release, see AddDeps); further sends
   * throw.
   */
  release(): number;
}

/** Builds the struct sockaddr_ll that addresses a frame to `ifindex`: the frame's ethertype and destination MAC. */
export function sockaddrLl(ifindex: number, frame: Uint8Array): Buffer {
  const ethertype = ((frame[12] ?? 0) << 8) | (frame[13] ?? 0);
  return sockaddr(ifindex, ethertype, frame.subarray(0, 6));
}

/** Wraps an already-open packet socket fd. */
export function packetSocket(libc: Libc, fd: number): PacketSocket {
  let open = true;
  return {
    send(ifindex, frame) {
      if (!open) throw new Error('packet socket is closed');
      libc.sendto(fd, frame, sockaddrLl(ifindex, frame));
    },
    close() {
      if (!open) return;
      open = false;
      libc.close(fd);
    },
    release() {
      if (!open) throw new Error('packet socket is closed');
      open = false;
      return fd;
    },
  };
}
