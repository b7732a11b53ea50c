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
  if (host === '' || host === 'localhost')
    return { family: 4, bytes: parseIPv4(host === '' ? '0.0.0.0' : '127.0.0.1'), port };
  return { family: 4, bytes: parseIPv4(host), port };
}

/** `address` as a struct sockaddr_in or sockaddr_in6 (port in network order). */
export function sockaddrIn(address: TcpAddress): Buffer {
  if (address.family === 4) {
    const l = ABI.sockaddr_in;
    const out = Buffer.alloc(l.size);
    out.writeUInt16LE(ABI.AF_INET, l.sin_family);
    out.writeUInt16BE(address.port, l.sin_port);
    address.bytes.copy(out, l.sin_addr);
    return out;
  }
  const l = ABI.sockaddr_in6;
  const out = Buffer.alloc(l.size);
  out.writeUInt16LE(ABI.AF_INET6, l.sin6_family);
  out.writeUInt16BE(address.port, l.sin6_port);
  address.bytes.copy(out, l.sin6_addr);
  return out;
}

/** The port of a sockaddr_in or sockaddr_in6 (both keep it at the same offset, in network order). */
export function sockaddrPort(address: Buffer): number {
  return address.readUInt16BE(ABI.sockaddr_in.sin_port);
}
