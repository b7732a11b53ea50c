// Decodes captures with tshark, an independent dissector: what it calls
// malformed, we call malformed.
import { stat } from 'node:fs/promises';
import { runOk } from './exec';

/** One decoded frame; protocol parts are present only when the frame carries them. */
export interface Frame {
  /** 1-based position in the capture. */
  number: number;
  /** Capture time, seconds since the epoch. */
  time: number;
  /** Bytes on the wire. */
  length: number;
  eth: { src: string; dst: string; type: number };
  arp?: {
    opcode: number;
    senderMac: string;
    senderIp: string;
    targetMac: string;
    targetIp: string;
    /** tshark's verdict: sender IP == target IP (and, for a reply, target MAC == sender MAC). */
    isGratuitous: boolean;
  };
  ipv6?: { src: string; dst: string; hopLimit: number };
  icmpv6?: {
    type: number;
    code: number;
    checksumStatus: ChecksumStatus;
    /** NA flags (type 136 only). */
    flags?: { router: boolean; solicited: boolean; override: boolean };
    /** The NA or NS target address. */
    target?: string;
    /** The first option's type (2 = target link-layer address), and all of them. */
    optionType?: number;
    optionTypes: number[];
    /** The first link-layer address option's MAC. */
    linkAddr?: string;
  };
  /** tshark's expert items (bad checksum, malformed…). */
  expert: { severity: ExpertSeverity; message: string }[];
  /** Malformed by tshark, an expert error, or a bad checksum. */
  malformed: boolean;
}

/** ICMPv6 checksum status as tshark reports it. */
export type ChecksumStatus = 'good' | 'bad' | 'unverified';
/** tshark expert severities (PI_CHAT … PI_ERROR). */
export type ExpertSeverity = 'comment' | 'chat' | 'note' | 'warn' | 'error' | 'unknown';

/** The tshark fields decodePcap reads (Wireshark 4.0 names). */
export const TSHARK_FIELDS = [
  'frame.number',
  'frame.time_epoch',
  'frame.len',
  'eth.src',
  'eth.dst',
  'eth.type',
  'arp.opcode',
  'arp.src.hw_mac',
  'arp.src.proto_ipv4',
  'arp.dst.hw_mac',
  'arp.dst.proto_ipv4',
  'arp.isgratuitous',
  'ipv6.src',
  'ipv6.dst',
  'ipv6.hlim',
  'icmpv6.type',
  'icmpv6.code',
  'icmpv6.checksum.status',
  'icmpv6.nd.na.flag.r',
  'icmpv6.nd.na.flag.s',
  'icmpv6.nd.na.flag.o',
  'icmpv6.nd.na.target_address',
  'icmpv6.nd.ns.target_address',
  'icmpv6.opt.type',
  'icmpv6.opt.linkaddr',
  '_ws.malformed',
  '_ws.expert.severity',
  '_ws.expert.group',
  '_ws.expert.message',
] as const;

type Layers = Partial<Record<(typeof TSHARK_FIELDS)[number], string[]>>;

const SEVERITIES: Record<number, ExpertSeverity> = {
  1048576: 'comment',
  2097152: 'chat',
  4194304: 'note',
  6291456: 'warn',
  8388608: 'error',
};
const PI_CHECKSUM = 0x0100_0000;
const CHECKSUM_STATUS: Record<string, ChecksumStatus> = { '0': 'bad', '1': 'good', '2': 'unverified' };

const first = (l: Layers, f: keyof Layers): string | undefined => l[f]?.[0];
const str = (l: Layers, f: keyof Layers): string => first(l, f) ?? '';
const num = (l: Layers, f: keyof Layers): number => Number(first(l, f) ?? NaN);
const bool = (l: Layers, f: keyof Layers): boolean => ['1', 'true', 'True'].includes(first(l, f) ?? '');

/** Turns one packet of `tshark -T json -e …` into a Frame. */
export function toFrame(l: Layers): Frame {
  const severities = (l['_ws.expert.severity'] ?? []).map(Number);
  const groups = (l['_ws.expert.group'] ?? []).map(Number);
  const messages = l['_ws.expert.message'] ?? [];
  const expert = severities.map((s, i) => ({ severity: SEVERITIES[s] ?? 'unknown', message: messages[i] ?? '' }));
  const frame: Frame = {
    number: num(l, 'frame.number'),
    time: num(l, 'frame.time_epoch'),
    length: num(l, 'frame.len'),
    eth: { src: str(l, 'eth.src'), dst: str(l, 'eth.dst'), type: Number(first(l, 'eth.type') ?? NaN) },
    expert,
    malformed: false,
  };
  if (l['arp.opcode']) {
    frame.arp = {
      opcode: num(l, 'arp.opcode'),
      senderMac: str(l, 'arp.src.hw_mac'),
      senderIp: str(l, 'arp.src.proto_ipv4'),
      targetMac: str(l, 'arp.dst.hw_mac'),
      targetIp: str(l, 'arp.dst.proto_ipv4'),
      isGratuitous: bool(l, 'arp.isgratuitous'),
    };
  }
  if (l['ipv6.src']) {
    frame.ipv6 = { src: str(l, 'ipv6.src'), dst: str(l, 'ipv6.dst'), hopLimit: num(l, 'ipv6.hlim') };
  }
  if (l['icmpv6.type']) {
    const icmpv6: NonNullable<Frame['icmpv6']> = {
      type: num(l, 'icmpv6.type'),
      code: num(l, 'icmpv6.code'),
      checksumStatus: CHECKSUM_STATUS[str(l, 'icmpv6.checksum.status')] ?? 'unverified',
      optionTypes: (l['icmpv6.opt.type'] ?? []).map(Number),
    };
    if (l['icmpv6.nd.na.flag.o']) {
      icmpv6.flags = {
        router: bool(l, 'icmpv6.nd.na.flag.r'),
        solicited: bool(l, 'icmpv6.nd.na.flag.s'),
        override: bool(l, 'icmpv6.nd.na.flag.o'),
      };
    }
    const target = first(l, 'icmpv6.nd.na.target_address') ?? first(l, 'icmpv6.nd.ns.target_address');
    if (target !== undefined) icmpv6.target = target;
    if (icmpv6.optionTypes[0] !== undefined) icmpv6.optionType = icmpv6.optionTypes[0];
    const linkAddr = first(l, 'icmpv6.opt.linkaddr');
    if (linkAddr !== undefined) icmpv6.linkAddr = linkAddr;
    frame.icmpv6 = icmpv6;
  }
  frame.malformed =
    l['_ws.malformed'] !== undefined ||
    severities.some((s) => s >= 0x0080_0000) ||
    severities.some((s, i) => s >= 0x0060_0000 && groups[i] === PI_CHECKSUM) ||
    frame.icmpv6?.checksumStatus === 'bad';
  return frame;
}

/** Decodes a pcap file with tshark into Frames; an empty file has none. */
export async function decodePcap(file: string): Promise<Frame[]> {
  if ((await stat(file)).size === 0) return [];
  const args = ['-n', '-r', file, '-T', 'json', ...TSHARK_FIELDS.flatMap((f) => ['-e', f])];
  const { stdout } = await runOk('tshark', args, { timeoutMs: 60_000 });
  if (stdout.trim() === '') return [];
  const packets = JSON.parse(stdout) as { _source: { layers: Layers } }[];
  return packets.map((p) => toFrame(p._source.layers));
}
