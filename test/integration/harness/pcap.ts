// The classic pcap file format (what `tcpdump -w` writes): a pure reader that
// tolerates a packet cut short at the end of a file still being written, and a
// writer for hand-made captures.

/** One captured packet: its timestamp in seconds and its bytes. */
export interface PcapPacket {
  time: number;
  data: Buffer;
  /** The length on the wire (data may be shorter when snaplen cut it). */
  origLen: number;
}

/** A decoded pcap file. */
export interface Pcap {
  linkType: number;
  packets: PcapPacket[];
}

const MAGIC_MICROS = 0xa1b2c3d4;
const MAGIC_NANOS = 0xa1b23c4d;
const GLOBAL_HEADER = 24;
const RECORD_HEADER = 16;
/** LINKTYPE_ETHERNET. */
export const LINKTYPE_ETHERNET = 1;

/** Parses a pcap file; an empty buffer, or a header alone, has no packets; an incomplete last record is left out. */
export function readPcap(buf: Buffer): Pcap {
  if (buf.length < GLOBAL_HEADER) return { linkType: LINKTYPE_ETHERNET, packets: [] };
  let little: boolean;
  let nanos: boolean;
  const le = buf.readUInt32LE(0);
  const be = buf.readUInt32BE(0);
  if (le === MAGIC_MICROS || le === MAGIC_NANOS) {
    little = true;
    nanos = le === MAGIC_NANOS;
  } else if (be === MAGIC_MICROS || be === MAGIC_NANOS) {
    little = false;
    nanos = be === MAGIC_NANOS;
  } else {
    throw new Error(`not a pcap file (magic 0x${be.toString(16)})`);
  }
  const u32 = (at: number): number => (little ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  const linkType = u32(20);
  const packets: PcapPacket[] = [];
  for (let at = GLOBAL_HEADER; at + RECORD_HEADER <= buf.length; ) {
    const inclLen = u32(at + 8);
    const end = at + RECORD_HEADER + inclLen;
    if (end > buf.length) break;
    packets.push({
      time: u32(at) + u32(at + 4) / (nanos ? 1e9 : 1e6),
      data: buf.subarray(at + RECORD_HEADER, end),
      origLen: u32(at + 12),
    });
    at = end;
  }
  return { linkType, packets };
}

/** Serialises packets (Ethernet unless told) as a little-endian, microsecond pcap file. */
export function writePcap(packets: readonly { time?: number; data: Buffer }[], linkType = LINKTYPE_ETHERNET): Buffer {
  const header = Buffer.alloc(GLOBAL_HEADER);
  header.writeUInt32LE(MAGIC_MICROS, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(262144, 16);
  header.writeUInt32LE(linkType, 20);
  const parts: Buffer[] = [header];
  packets.forEach((p, i) => {
    const time = p.time ?? i;
    const rec = Buffer.alloc(RECORD_HEADER);
    rec.writeUInt32LE(Math.floor(time), 0);
    rec.writeUInt32LE(Math.min(999_999, Math.round((time % 1) * 1e6)), 4);
    rec.writeUInt32LE(p.data.length, 8);
    rec.writeUInt32LE(p.data.length, 12);
    parts.push(rec, p.data);
  });
  return Buffer.concat(parts);
}
