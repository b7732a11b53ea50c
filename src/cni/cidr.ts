import { isIP } from 'node:net';

/** An address with its prefix length, as in "10.88.0.5/24". */
export interface Cidr {
  /** The address without the prefix, as written. */
  address: string;
  family: 4 | 6;
  prefixLength: number;
}

/** Parses "address/prefix" (prefix 0–32 for IPv4, 0–128 for IPv6), or returns undefined. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const prefix = text.slice(slash + 1);
  const family = isIP(address);
  if (family !== 4 && family !== 6) return undefined;
  if (!/^\d{1,3}$/.test(prefix)) return undefined;
  const prefixLength = Number(prefix);
  if (prefixLength > (family === 4 ? 32 : 128)) return undefined;
  return { address, family, prefixLength };
}
