// Pure: netlink message framing (struct nlmsghdr, struct nlattr; netlink(7)). No I/O.
// Netlink uses the host's byte order; every target we build for (x86_64, aarch64) is little-endian.

/** Message types every netlink family shares. */
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

/** nlmsg_flags. */
export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
/** NLM_F_ROOT | NLM_F_MATCH: the whole table. */
export const NLM_F_DUMP = 0x300;

const HEADER = 16;

/** One decoded netlink message. */
export interface NetlinkMessage {
  type: number;
  flags: number;
  seq: number;
  /** The message after its 16-byte header. */
  payload: Buffer;
}

/** Rounds up to the 4-byte alignment of netlink messages and attributes. */
function align4(n: number): number {
  return (n + 3) & ~3;
}

/** Builds one message: nlmsghdr (len, type, flags, seq, pid 0) then `payload`. */
export function encodeMessage(type: number, flags: number, seq: number, payload: Uint8Array): Buffer {
  const out = Buffer.alloc(HEADER + align4(payload.length));
  out.writeUInt32LE(HEADER + payload.length, 0);
  out.writeUInt16LE(type, 4);
  out.writeUInt16LE(flags, 6);
  out.writeUInt32LE(seq >>> 0, 8);
  out.writeUInt32LE(0, 12); // nlmsg_pid: the kernel
  out.set(payload, HEADER);
  return out;
}

/** Splits a received datagram into its messages; a truncated tail is dropped. */
export function decodeMessages(datagram: Buffer): NetlinkMessage[] {
  const out: NetlinkMessage[] = [];
  let off = 0;
  while (off + HEADER <= datagram.length) {
    const len = datagram.readUInt32LE(off);
    if (len < HEADER || off + len > datagram.length) break;
    out.push({
      type: datagram.readUInt16LE(off + 4),
      flags: datagram.readUInt16LE(off + 6),
      seq: datagram.readUInt32LE(off + 8),
      payload: datagram.subarray(off + HEADER, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** The errno an NLMSG_ERROR carries (0 for an ACK), as a positive number. */
export function errorOf(message: NetlinkMessage): number {
  const error = message.payload.length >= 4 ? message.payload.readInt32LE(0) : 0;
  return error === 0 ? 0 : -error;
}

/** Builds one struct nlattr: len, type, `value`, padding to 4 bytes. */
export function encodeAttr(type: number, value: Uint8Array): Buffer {
  const out = Buffer.alloc(align4(4 + value.length));
  out.writeUInt16LE(4 + value.length, 0);
  out.writeUInt16LE(type, 2);
  out.set(value, 4);
  return out;
}

/** Walks a stream of struct nlattr and returns type → payload (the last one wins). */
export function parseAttrs(buf: Uint8Array): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  while (off + 4 <= b.length) {
    const len = b.readUInt16LE(off);
    const type = b.readUInt16LE(off + 2) & 0x3fff; // drop NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4 || off + len > b.length) break;
    out.set(type, b.subarray(off + 4, off + len));
    off += align4(len);
  }
  return out;
}
