// A send-only AF_PACKET socket. It is bound to the netns it was opened in
// (see netns.ts), so ifindex values are the pod's.
import { AF_PACKET, type Libc } from './libc';

const ARPHRD_ETHER = 1;
const SOCKADDR_LL_SIZE = 20;

/** Sends whole Ethernet frames out of one interface of the socket's netns. */
export interface PacketSocket {
  /** Sends one frame (Ethernet header included) out of `ifindex`. */
  send(ifindex: number, frame: Uint8Array): void;
  /** Closes the socket; further sends throw. */
  close(): void;
  /** Gives up the socket without closing it and returns its fd (for closeAfterExit); further sends throw. */
  release(): number;
}

/** Builds the struct sockaddr_ll that addresses a frame to `ifindex`. */
export function sockaddrLl(ifindex: number, frame: Uint8Array): Buffer {
  const sll = Buffer.alloc(SOCKADDR_LL_SIZE);
  sll.writeUInt16LE(AF_PACKET, 0); // sll_family, host order
  sll[2] = frame[12] ?? 0; // sll_protocol: the ethertype, network order
  sll[3] = frame[13] ?? 0;
  sll.writeInt32LE(ifindex, 4); // sll_ifindex
  sll.writeUInt16LE(ARPHRD_ETHER, 8); // sll_hatype
  sll[10] = 0; // sll_pkttype
  sll[11] = 6; // sll_halen
  Buffer.from(frame.subarray(0, 6)).copy(sll, 12); // sll_addr: destination MAC
  return sll;
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
