// TCP listening sockets: the announcer's HTTP address (--listen=HOST:PORT).
// Pure: the address text, the sockaddr_in/sockaddr_in6 structs built and read
// back; src/sys/libc.ts makes the calls. Like the unix socket, every fd is
// non-blocking: the announcer's one poll(2) serves it.
import { parseIPv4, parseIPv6 } from '../wire/ip';
import { ABI } from './abi/kernel-abi';

/** Where to listen: an IPv4 or IPv6 address (bytes) and a port (0: the kernel picks one). */
export interface TcpAddress {
  family: 4 | 6;
  bytes: Buffer;
  port: number;
}

/** The TCP calls of the announcer's HTTP endpoint; each throws SysError on failure. */
export interface TcpSockets {
  /**
   * A non-blocking listening socket bound to `address` (SO_REUSEADDR; `[::]` takes IPv4 too unless the node's
   * bindv6only says otherwise), and the port it got.
   */
  listenTcp(address: TcpAddress, backlog: number): { fd: number; port: number };
  /** One pending connection (non-blocking, close-on-exec), or undefined when none is pending. */
  acceptTcp(fd: number): number | undefined;
}

/**
 * HOST:PORT as `--listen` takes it: an IPv4 address, `[IPv6]`, `localhost`, or empty (every IPv4 address); throws
 * RangeError otherwise.
 */
export function parseListenAddress(text: string): TcpAddress {
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, Math.max(0, colon));
  const portText = text.slice(colon + 1);
  const port = Number(portText);
  if (colon < 0 || !/^\d{1,5}$/.test(portText) || port > 65535) throw new RangeError(`invalid port in "${text}"`);
  if (host.startsWith('[') && host.endsWith(']')) return { family: 6, bytes: parseIPv6(host.slice(1, -1)), port };
  const ipv4 = host === '' ? '0.0.0.0' : host === 'localhost' ? '127.0.0.1' : host;
  return { family: 4, bytes: parseIPv4(ipv4), port };
}

/**
 * `address` as a struct sockaddr_in or sockaddr_in6 (port in network order). Both start with the family and keep the
 * port at the same offset; only the address's offset and the size differ.
 */
export function sockaddrIn({ family, bytes, port }: TcpAddress): Buffer {
  const v4 = family === 4;
  const out = Buffer.alloc(v4 ? ABI.sockaddr_in.size : ABI.sockaddr_in6.size);
  out.writeUInt16LE(v4 ? ABI.AF_INET : ABI.AF_INET6, ABI.sockaddr_in.sin_family);
  out.writeUInt16BE(port, ABI.sockaddr_in.sin_port);
  bytes.copy(out, v4 ? ABI.sockaddr_in.sin_addr : ABI.sockaddr_in6.sin6_addr);
  return out;
}

/** The port of a sockaddr_in or sockaddr_in6 (both keep it at the same offset, in network order). */
export function sockaddrPort(address: Buffer): number {
  return address.readUInt16BE(ABI.sockaddr_in.sin_port);
}
