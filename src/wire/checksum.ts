// Pure: RFC 1071 Internet checksum. No I/O.

/** One's-complement checksum (RFC 1071) over the parts read as one byte stream, odd tail padded with a zero byte. */
export function internetChecksum(...parts: Uint8Array[]): number {
  let sum = 0;
  let high = true; // whether the next byte is the high half of a 16-bit word
  for (const part of parts) {
    for (const byte of part) {
      sum += high ? byte << 8 : byte;
      high = !high;
    }
    // Fold per part so the sum stays far below 2^53 for any input size.
    sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
