// Uses src/wire's parser rather than node:net's isIP: loading node:net costs the plugin's startup ~5 ms.
import { parseCidr as parseInterfaceCidr } from '../wire/ip';

/** An address with its prefix length, as in "10.88.0.5/24". */
export interface Cidr {
  /** The address without the prefix, as written. */
  address: string;
  family: 4 | 6;
  prefixLength: number;
}

/** Parses "address/prefix" (prefix 0–32 for IPv4, 0–128 for IPv6), or returns undefined. */
export function parseCidr(text: string): Cidr | undefined {
  try {
    const { family, prefixLength } = parseInterfaceCidr(text);
    return { address: text.slice(0, text.indexOf('/')), family, prefixLength };
  } catch {
    return undefined;
  }
}
