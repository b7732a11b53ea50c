// Pure: IPv4/IPv6 address and CIDR text, and the length check of every address (IP or MAC) the wire
// modules take as bytes. No I/O.

const IPV4_TEXT = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;
const PREFIX_LENGTH = /^(0|[1-9]\d{0,2})$/;
const MAX_IPV6_TEXT = 45; // "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".length

function tryIPv4(text: string): Buffer | undefined {
  const m = IPV4_TEXT.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? Buffer.from(octets) : undefined;
}

function tryGroups(side: string): number[] | undefined {
  if (side === '') return [];
  const groups: number[] = [];
  for (const g of side.split(':')) {
    if (!HEX_GROUP.test(g)) return undefined;
    groups.push(parseInt(g, 16));
  }
  return groups;
}

function tryIPv6(text: string): Buffer | undefined {
  if (text.length > MAX_IPV6_TEXT || text.includes('%')) return undefined;
  let body = text;
  if (text.includes('.')) {
    // An embedded IPv4 address may only form the last 32 bits.
    const lastColon = text.lastIndexOf(':');
    const v4 = lastColon < 0 ? undefined : tryIPv4(text.slice(lastColon + 1));
    if (!v4) return undefined;
    body = `${text.slice(0, lastColon + 1)}${v4.readUInt16BE(0).toString(16)}:${v4.readUInt16BE(2).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = tryGroups(halves[0]!);
  const tail = halves.length === 2 ? tryGroups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const given = head.length + tail.length;
  // Without "::" all 8 groups are needed; "::" must stand for at least one zero group.
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - given).fill(0), ...tail];
  const bytes = Buffer.alloc(16);
  groups.forEach((g, i) => bytes.writeUInt16BE(g, 2 * i));
  return bytes;
}

/** True if the 16 bytes are an IPv4-mapped IPv6 address (::ffff:0:0/96). */
export function isIPv4Mapped(bytes: Uint8Array): boolean {
  expectLength(bytes, 16, 'IPv6 address');
  return bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

function formatIPv4(bytes: Uint8Array): string {
  return Array.from(bytes).join('.');
}

/** Parses dotted-quad IPv4 text (no leading zeros) into 4 fresh bytes; throws RangeError otherwise. */
export function parseIPv4(text: string): Buffer {
  const bytes = tryIPv4(text);
  if (!bytes) throw new RangeError(`invalid IPv4 address "${text}"`);
  return bytes;
}

/**
 * Parses IPv6 text ("::" and a dotted IPv4 tail allowed, zone ids not) into 16 fresh bytes; throws RangeError
 * otherwise.
 */
export function parseIPv6(text: string): Buffer {
  if (text.includes('%')) throw new RangeError(`invalid IPv6 address "${text}": zone ids are not supported`);
  const bytes = tryIPv6(text);
  if (!bytes) throw new RangeError(`invalid IPv6 address "${text}"`);
  return bytes;
}

/** Formats 16 bytes as RFC 5952 text; IPv4-mapped addresses print as "::ffff:a.b.c.d" (RFC 5952 §5). */
export function formatIPv6(bytes: Uint8Array): string {
  expectLength(bytes, 16, 'IPv6 address');
  if (isIPv4Mapped(bytes)) return `::ffff:${formatIPv4(bytes.subarray(12))}`;
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  // Longest run of at least two zero groups; the leftmost wins a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; i++) {
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) [bestStart, bestLength] = [i, end - i];
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** Returns 4 for IPv4 text, 6 for IPv6 text; throws RangeError if it is neither. */
export function ipFamily(text: string): 4 | 6 {
  if (tryIPv4(text)) return 4;
  if (text.includes(':')) {
    parseIPv6(text); // throws with the precise reason
    return 6;
  }
  throw new RangeError(`invalid IP address "${text}": neither IPv4 nor IPv6`);
}

/** Returns the canonical text of an IPv4 or IPv6 address; throws RangeError if it is neither. */
export function canonicalIP(text: string): string {
  return ipFamily(text) === 4 ? formatIPv4(parseIPv4(text)) : formatIPv6(parseIPv6(text));
}

/** The bytes of IPv4 (4) or IPv6 (16) address text (no zone id); undefined for anything else. */
export function parseIP(text: string): Buffer | undefined {
  return tryIPv4(text) ?? tryIPv6(text);
}

/** The family and prefix length of "address/prefix" (an interface address: host bits allowed); undefined otherwise. */
export function parseCidr(text: string): { family: 4 | 6; prefixLength: number } | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const lengthText = text.slice(slash + 1);
  const family = tryIPv4(address) ? 4 : tryIPv6(address) ? 6 : undefined;
  const maxLength = family === 4 ? 32 : 128;
  if (family === undefined || !PREFIX_LENGTH.test(lengthText) || Number(lengthText) > maxLength) return undefined;
  return { family, prefixLength: Number(lengthText) };
}

/** True if the 16 bytes lie in fe80::/10. */
export function isIPv6LinkLocal(bytes: Uint8Array): boolean {
  expectLength(bytes, 16, 'IPv6 address');
  return bytes[0] === 0xfe && (bytes[1]! & 0xc0) === 0x80;
}

/** Throws a RangeError unless `bytes` is exactly `length` bytes long; `what` names the value in the message. */
export function expectLength(bytes: Uint8Array, length: number, what: string): void {
  if (bytes.length !== length) {
    const hex = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 32)).toString('hex');
    throw new RangeError(`${what} must be ${length} bytes, got ${bytes.length} (${hex || 'empty'})`);
  }
}
