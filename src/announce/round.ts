// One announcement round over already-open sockets.
import type { Logger } from '../log';
import { roundFrames } from '../plan';
import type { PacketSocket } from '../sys/packet-socket';
import type { ArpOp } from '../wire/arp';
import type { RoundInput } from './readiness';

/** Sends one round on each interface; returns the number of frames sent. Send errors are logged, not thrown. */
export function sendRound(
  packet: PacketSocket,
  inputs: readonly RoundInput[],
  arpOps: readonly ArpOp[],
  router: boolean,
  log: Logger,
): number {
  let sent = 0;
  for (const input of inputs) {
    for (const s of input.skipped) log.warn('not announcing address', { interface: input.name, address: s });
    let frames: Buffer[];
    try {
      frames = roundFrames(input, arpOps, router);
    } catch (err) {
      log.error('cannot build announcements', { interface: input.name, error: err });
      continue;
    }
    for (const frame of frames) {
      try {
        packet.send(input.index, frame);
        sent++;
      } catch (err) {
        log.error('sending announcement failed', { interface: input.name, error: err });
      }
    }
    log.debug('round sent', { interface: input.name, frames: frames.length, ipv4: input.ipv4.length, ipv6: input.ipv6.length });
  }
  return sent;
}
