// Names and subnets that are unique per test run, so a leftover from a crashed
// run never collides with a new one.
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** Linux's longest interface name (IFNAMSIZ - 1). */
export const IFNAME_MAX = 15;

/** Random hex that tags everything this process creates (netns names, links, plugin env). */
export const RUN_TAG = randomBytes(2).toString('hex');

/**
 * A directory that does not exist, appended to the PATH of every child (exec.ts childEnv): the tag
 * that reaches processes the plugin starts detached, which get PATH alone as their environment.
 */
export const RUN_TAG_PATH_ENTRY = `/nonexistent/announcer-test-run-${RUN_TAG}`;

/** The RUN_TAG a PATH carries (see RUN_TAG_PATH_ENTRY), if any. */
export function runTagOfPath(path: string): string | undefined {
  for (const entry of path.split(':')) {
    const m = /^\/nonexistent\/announcer-test-run-([0-9a-f]+)$/.exec(entry);
    if (m) return m[1];
  }
  return undefined;
}

/** `prefix` + 6 random hex digits; throws if that would not fit in an interface name. */
export function uniqueName(prefix: string): string {
  const name = `${prefix}${randomBytes(3).toString('hex')}`;
  if (!/^[a-z][a-z0-9-]*$/i.test(prefix) || name.length > IFNAME_MAX) {
    throw new Error(`name prefix "${prefix}" must be letters, digits or '-' and at most ${IFNAME_MAX - 6} long`);
  }
  return name;
}

/** A /24 (10.88.N.0/24) and a /64 (fd00:88:N::/64) that no other test of this process uses. */
export interface Subnet {
  /** N, the third IPv4 octet (100–250). */
  readonly index: number;
  /** `10.88.N.host`. */
  v4(host: number): string;
  /** `10.88.N.host/24`. */
  v4Cidr(host: number): string;
  /** `fd00:88:N::host`, N and host written with the same digits as in IPv4 (read as hex). */
  v6(host: number): string;
  /** `fd00:88:N::host/64`. */
  v6Cidr(host: number): string;
}

const SUBNET_FIRST = 100;
const SUBNET_COUNT = 151; // 100..250
let nextSubnet = randomInt(SUBNET_COUNT);
let subnetsGiven = 0;

/** Hands out a fresh subnet: random start per process, then distinct ones in turn. */
export function allocSubnet(): Subnet {
  if (subnetsGiven >= SUBNET_COUNT) throw new Error('allocSubnet(): all 151 test subnets are in use');
  subnetsGiven += 1;
  const index = SUBNET_FIRST + nextSubnet;
  nextSubnet = (nextSubnet + 1) % SUBNET_COUNT;
  return {
    index,
    v4: (host) => `10.88.${index}.${host}`,
    v4Cidr: (host) => `10.88.${index}.${host}/24`,
    v6: (host) => `fd00:88:${index}::${host}`,
    v6Cidr: (host) => `fd00:88:${index}::${host}/64`,
  };
}

/** A random locally administered unicast MAC (first octet 0x02). */
export function randomMac(): string {
  return ['02', ...Array.from(randomBytes(5), (b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** A container ID `<prefix>-<tag>-<6 random hex>`: one per attachment, told apart from every other run's. */
export function taggedId(prefix: string, tag: string): string {
  return `${prefix}-${tag}-${randomBytes(3).toString('hex')}`;
}

/** Milliseconds on CLOCK_BOOTTIME, the clock of deadlines and job times (/proc/uptime, 10 ms steps). */
export function bootMs(): number {
  return Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 1000;
}
