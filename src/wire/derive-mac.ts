// Pure: IP-derived MAC addresses as OpenShift SDN / ovn-kubernetes build them. No I/O.
import { formatIPv6, ipFamily, isIPv4Mapped, parseIPv4, parseIPv6 } from './ip';
import { expectLength } from './length';

const PREFIX_TEXT = /^[0-9a-f]{2}[:-][0-9a-f]{2}$/i;

function expectUnicastPrefix(prefix: Uint8Array, shown: string): void {
  if ((prefix[0]! & 0x01) !== 0) {
    throw new RangeError(`invalid MAC prefix "${shown}": the multicast bit (0x01 of the first byte) is set`);
  }
}

/** Parses a two-byte MAC prefix such as "0a:58" (or '-'); throws RangeError on bad syntax or a multicast first byte. */
export function parseMacPrefix(text: string): Buffer {
  if (!PREFIX_TEXT.test(text)) {
    throw new RangeError(`invalid MAC prefix "${text}": want two hex pairs such as "0a:58"`);
  }
  const prefix = Buffer.from(text.replace(/[:-]/, ''), 'hex');
  expectUnicastPrefix(prefix, text);
  return prefix;
}

/**
 * A MAC from an address: prefix + the IPv4 bytes (IPv4-mapped IPv6 too, as ovn-kubernetes does), or + 4 bytes of sha256
 * of the canonical IPv6 text.
 */
export function deriveMac(prefix: Uint8Array, address: string): Buffer {
  expectLength(prefix, 2, 'MAC prefix');
  expectUnicastPrefix(prefix, Array.from(prefix, (b) => b.toString(16).padStart(2, '0')).join(':'));
  const mac = Buffer.alloc(6);
  mac.set(prefix, 0);
  if (ipFamily(address) === 4) {
    mac.set(parseIPv4(address), 2);
    return mac;
  }
  const bytes = parseIPv6(address);
  if (isIPv4Mapped(bytes)) {
    mac.set(bytes.subarray(12), 2);
    return mac;
  }
  // node:crypto is loaded here, not at import: it costs the plugin's startup ~10 ms.
  const { createHash } = process.getBuiltinModule('node:crypto');
  const digest = createHash('sha256').update(formatIPv6(bytes), 'ascii').digest();
  mac.set(digest.subarray(0, 4), 2);
  return mac;
}
