// One announcement round over already-open sockets.
import type { Logger } from '../log';
import { roundFrames } from '../plan';
import type { PacketSocket } from '../sys/packet-socket';
import type { ArpOp } from '../wire/arp';
import { ETHERTYPE_ARP } from '../wire/ethernet';
import type { RoundInput } from './session';

/** Frames sent, by kind. */
export interface FrameCounts {
  garpRequest: number;
  garpReply: number;
  na: number;
}

/** A frame to send out of one pod interface. */
export interface OutgoingFrame {
  index: number;
  name: string;
  frame: Buffer;
}

/** No frames. */
export const NO_FRAMES: Readonly<FrameCounts> = { garpRequest: 0, garpReply: 0, na: 0 };

/** The sum of `counts`. */
export function totalFrames(counts: FrameCounts): number {
  return counts.garpRequest + counts.garpReply + counts.na;
}

/** Builds one round's frames for each interface; addresses left out and build errors are logged. */
export function buildRound(
  inputs: readonly RoundInput[],
  arpOps: readonly ArpOp[],
  router: boolean,
  log: Logger,
): OutgoingFrame[] {
  const out: OutgoingFrame[] = [];
  for (const input of inputs) {
    for (const s of input.skipped) log.warn('not announcing address', { interface: input.name, address: s });
    try {
      for (const frame of roundFrames(input, arpOps, router)) out.push({ index: input.index, name: input.name, frame });
    } catch (err) {
      log.error('cannot build announcements', { interface: input.name, error: err });
    }
  }
  return out;
}

/** Sends `frames`; returns what was sent, by kind. Send errors are logged, not thrown. */
export function sendFrames(packet: PacketSocket, frames: readonly OutgoingFrame[], log: Logger): FrameCounts {
  const sent = { ...NO_FRAMES };
  for (const { frame } of sendEach(packet, frames, log, 'sending announcement failed')) {
    // An ARP frame's opcode sits at bytes 20-21; anything else we send is an NA.
    if (frame.readUInt16BE(12) !== ETHERTYPE_ARP) sent.na++;
    else if (frame.readUInt16BE(20) === 1) sent.garpRequest++;
    else sent.garpReply++;
  }
  return sent;
}

/**
 * Sends each of `frames` out of its interface; returns those that went out. A failed send is logged as `failed`
 * (naming the interface), not thrown: the others still go.
 */
export function sendEach(
  packet: PacketSocket,
  frames: readonly OutgoingFrame[],
  log: Logger,
  failed: string,
): OutgoingFrame[] {
  return frames.filter(({ index, name, frame }) => {
    try {
      packet.send(index, frame);
      return true;
    } catch (err) {
      log.error(failed, { interface: name, error: err });
      return false;
    }
  });
}
