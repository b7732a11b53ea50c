// The conflict probe run inside one pod: ARP receivers on the probed
// interfaces, the pod's own MACs, probes sent through the pod's packet socket.
import type { Logger } from '../log';
import { readArpFrames } from '../sys/arp-receiver';
import type { Libc } from '../sys/libc';
import { ConflictProbe, probeTargets, runProbe, type AddressConflict, type ProbeSettings } from './conflict-probe';
import type { OutgoingFrame } from './round';
import type { PodSession, SocketOpener } from './session';
import type { Timers } from './timers';

/** What probing a pod needs from the process. */
export interface PodProbeDeps {
  libc: Libc;
  open: SocketOpener;
  timers: Pick<Timers, 'now'>;
  log: Logger;
  /**
   * Takes the receivers' fds once the window is over. Closing an AF_PACKET
   * socket waits for an RCU grace period (8-16 ms): ADD passes closeAfterExit,
   * the background announcer a close on another thread.
   */
  handOff(fds: readonly number[]): void;
}

/** Probes in one window the IPv4 addresses round `frames` announces from the pod; returns the conflicts (ARP from the pod's own MACs never is one). */
export function probePod(
  deps: PodProbeDeps,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  settings: ProbeSettings,
  stopAtFirst: boolean,
): AddressConflict[] {
  const targets = probeTargets(frames);
  if (targets.length === 0) return [];
  const setUpAt = deps.timers.now();
  const ownMacs = session.pod.rtnl.links().flatMap((link) => (link.mac?.length === 6 ? [link.mac] : []));
  // Open before the first probe goes out, so that no answer is missed.
  const receivers = deps.open.arpReceivers(
    netns,
    targets.map((t) => t.index),
  );
  try {
    const startAt = deps.timers.now();
    const probe = new ConflictProbe(targets, ownMacs, settings, startAt, stopAtFirst);
    const io = {
      send: (index: number, frame: Buffer) => session.pod.packet.send(index, frame),
      read: (timeoutMs: number) => readArpFrames(deps.libc, receivers, timeoutMs),
      now: () => deps.timers.now(),
    };
    const conflicts = runProbe(io, probe, deps.log);
    const ms = (from: number, to: number): number => Math.round((to - from) * 100) / 100;
    deps.log.debug('conflict probe done', {
      addresses: targets.reduce((n, t) => n + t.ipv4.length, 0),
      probes: settings.probes,
      conflicts: conflicts.length,
      setUpMs: ms(setUpAt, startAt),
      windowMs: ms(startAt, deps.timers.now()),
    });
    return conflicts;
  } finally {
    deps.handOff(receivers.map((r) => r.release()));
  }
}
