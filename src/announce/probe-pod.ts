// The conflict probe run inside one pod: ARP receivers on the probed
// interfaces, the pod's own MACs, probes sent through the pod's packet socket.
// One mechanism, never blocking (SteppedPodProbe): the background announcer
// steps the window from its poll loop, ADD from its injected waits (add-probe.ts).
import type { Logger } from '../log';
import { readFrames, type FrameReceiver } from '../sys/packet-socket';
import type { Libc } from '../sys/libc';
import {
  ConflictProbe,
  probeTargets,
  sendDueProbes,
  type AddressConflict,
  type ProbeSettings,
  type ProbeTarget,
} from './conflict-probe';
import type { OutgoingFrame } from './round';
import { ETHERTYPE_ARP } from '../wire/ethernet';
import type { PodSession, SocketOpener } from './session';

/** What probing a pod needs from the process. */
export interface PodProbeDeps {
  libc: Libc;
  open: SocketOpener;
  log: Logger;
  /** Closes a receiver once the window is over: an AF_PACKET socket's close waits for an RCU grace period. */
  closeInBackground(fd: number): void;
}

/** A probe window set up in a pod: its receivers open, its window started. */
interface PodWindow {
  targets: ProbeTarget[];
  receivers: FrameReceiver[];
  probe: ConflictProbe;
}

/**
 * Opens the receivers (before the first probe goes out, so that no answer is missed) and starts the window at
 * `startAt`; undefined when round `frames` has no IPv4 address to probe.
 */
function setUp(
  open: SocketOpener,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  settings: ProbeSettings,
  startAt: number,
  stopAtFirst: boolean,
): PodWindow | undefined {
  const targets = probeTargets(frames);
  if (targets.length === 0) return undefined;
  const ownMacs = session.pod.rtnl.links().flatMap((link) => (link.mac?.length === 6 ? [link.mac] : []));
  const receivers = open.receivers(
    netns,
    targets.map((t) => t.index),
    ETHERTYPE_ARP,
  );
  return { targets, receivers, probe: new ConflictProbe(targets, ownMacs, settings, startAt, stopAtFirst) };
}

const addressCount = (targets: readonly ProbeTarget[]): number => targets.reduce((n, t) => n + t.ipv4.length, 0);

/**
 * A probe window driven by the caller's poll loop, never blocking: the caller
 * polls fds() with the rest of its sockets, calls step() when one is readable
 * or wakeAt() has come, and finish() once step() says the window is over.
 */
export class SteppedPodProbe {
  private released = false;

  private constructor(
    private readonly deps: PodProbeDeps,
    private readonly session: PodSession,
    private readonly window: PodWindow,
    private readonly settings: ProbeSettings,
  ) {}

  /**
   * Starts a window at `now` (the caller's clock, which step() and wakeAt() then use); undefined when
   * `frames` has no IPv4 address to probe. With `stopAtFirst` the first conflict ends the window.
   */
  static start(
    deps: PodProbeDeps,
    session: PodSession,
    netns: string,
    frames: readonly OutgoingFrame[],
    settings: ProbeSettings,
    now: number,
    stopAtFirst = false,
  ): SteppedPodProbe | undefined {
    const window = setUp(deps.open, session, netns, frames, settings, now, stopAtFirst);
    return window && new SteppedPodProbe(deps, session, window, settings);
  }

  /** The receivers' fds, for the caller's poll. */
  fds(): number[] {
    return this.released ? [] : this.window.receivers.map((r) => r.fd);
  }

  /**
   * Classifies the ARP queued on the receivers (no wait), sends the probes due by `now`; whether the window is over.
   */
  step(now: number): boolean {
    const { probe, receivers } = this.window;
    for (const { ifindex, frame } of readFrames(this.deps.libc, receivers, 0)) probe.receive(ifindex, frame);
    sendDueProbes(probe, now, (index, frame) => this.session.pod.packet.send(index, frame), this.deps.log);
    return probe.finished(now);
  }

  /** When step() is next due without ARP arriving: the next probe, or the end of the window. */
  wakeAt(now: number): number {
    return now + this.window.probe.waitMs(now);
  }

  /** Releases the receivers and returns the conflicts found. */
  finish(): AddressConflict[] {
    const conflicts = this.window.probe.conflicts();
    this.close();
    this.deps.log.debug('conflict probe done', {
      addresses: addressCount(this.window.targets),
      probes: this.settings.probes,
      conflicts: conflicts.length,
    });
    return conflicts;
  }

  /** Releases the receivers (once), the window left unfinished or finished. */
  close(): void {
    if (this.released) return;
    this.released = true;
    for (const r of this.window.receivers) this.deps.closeInBackground(r.release());
  }
}
