// Picking the announcer's frames out of a decoded capture.
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { canonicalIp } from './neigh';
import type { Frame } from './tshark';

/** A frame's capture time in ms since the epoch: comparable with Date.now() taken in the test. */
export function ms(f: Frame): number {
  return f.time * 1000;
}

/** The most frames found in any one-second window [t, t + 1 s) that starts at a frame. */
export function busiestSecond(frames: readonly Frame[]): number {
  const times = frames.map(ms).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j]! < times[i]! + 1000) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

/** Gratuitous ARPs for `ip` sent by `mac`: sender IP = target IP = ip, sender MAC and Ethernet source = mac. */
export function garpsFor(frames: readonly Frame[], mac: string, ip: string): Frame[] {
  return frames.filter(
    (f) =>
      f.eth.src === mac &&
      f.arp?.isGratuitous === true &&
      f.arp.senderMac === mac &&
      f.arp.senderIp === ip &&
      f.arp.targetIp === ip,
  );
}

/** Unsolicited NAs (ICMPv6 136) for `ip`, in any spelling, sent by `mac`. */
export function nasFor(frames: readonly Frame[], mac: string, ip: string): Frame[] {
  const want = canonicalIp(ip);
  return frames.filter(
    (f) => f.eth.src === mac && f.icmpv6?.type === 136 && canonicalIp(f.icmpv6.target ?? '') === want,
  );
}

/** Announcements of any kind (ARP, ICMPv6 NA) sent by one of `macs`. */
export function announcementsFrom(frames: readonly Frame[], macs: readonly string[]): Frame[] {
  return frames.filter((f) => macs.includes(f.eth.src) && (f.arp !== undefined || f.icmpv6?.type === 136));
}

/** One line for a failure message: source, destination and what each frame announces. */
export function describeFrames(frames: readonly Frame[]): string {
  return frames
    .map((f) => {
      const what = f.arp
        ? `arp op ${f.arp.opcode} ${f.arp.senderIp}`
        : `icmpv6 ${f.icmpv6?.type} ${f.icmpv6?.target ?? ''}`;
      return `${f.eth.src} > ${f.eth.dst} ${what}`;
    })
    .join('; ');
}

/**
 * The IP-derived MAC as ovn-kubernetes builds it (README, mac: ip-derived): prefix + the IPv4 address's bytes, or
 * prefix + sha256(canonical IPv6 text)[0..4].
 */
export function derivedMac(address: string, prefix = '0a:58'): string {
  const tail = isIPv4(address)
    ? Uint8Array.from(address.split('.').map(Number))
    : createHash('sha256').update(canonicalIp(address), 'ascii').digest().subarray(0, 4);
  return [prefix, ...Array.from(tail, (b) => b.toString(16).padStart(2, '0'))].join(':');
}
