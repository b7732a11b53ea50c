// Pure: MAC address text and bit tests. No I/O.
import { expectLength } from './length';

const MAC_TEXT = /^[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i;

/** ff:ff:ff:ff:ff:ff. Shared constant: never mutate it; frame builders copy it. */
export const BROADCAST_MAC: Buffer = Buffer.from('ffffffffffff', 'hex');

/** 33:33:00:00:00:01, the Ethernet group of ff02::1. Shared constant: never mutate it; frame builders copy it. */
export const IPV6_ALL_NODES_MAC: Buffer = Buffer.from('333300000001', 'hex');

/** Parses "aa:bb:cc:dd:ee:ff" (or '-' separators, any case) into 6 fresh bytes; throws RangeError otherwise. */
export function parseMac(text: string): Buffer {
  if (!MAC_TEXT.test(text)) {
    throw new RangeError(`invalid MAC address "${text}": want six hex pairs separated by ':' or '-'`);
  }
  return Buffer.from(text.replace(/[:-]/g, ''), 'hex');
}

/** Formats 6 bytes as lowercase, colon-separated text. */
export function formatMac(mac: Uint8Array): string {
  expectLength(mac, 6, 'MAC address');
  return Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join(':');
}

/** True if the group (multicast) bit, 0x01 of the first byte, is set. */
export function isMulticastMac(mac: Uint8Array): boolean {
  expectLength(mac, 6, 'MAC address');
  return (mac[0]! & 0x01) !== 0;
}

/** True if the locally-administered bit, 0x02 of the first byte, is set. */
export function isLocallyAdministeredMac(mac: Uint8Array): boolean {
  expectLength(mac, 6, 'MAC address');
  return (mac[0]! & 0x02) !== 0;
}
