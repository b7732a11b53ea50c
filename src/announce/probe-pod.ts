// The conflict probe run inside one pod: ARP receivers on the probed
// interfaces, the pod's own MACs, probes sent through the pod's packet socket.
// ADD probes blocking (probePod); the background announcer steps the same
// window from its poll loop (SteppedPodProbe), so that no other pod waits.
import type { Logger } from '../log';
import { readArpFrames, type ArpReceiver } from '../sys/arp-receiver';
import type { Libc } from '../sys/libc';
import { ConflictProbe, probeTargets, runProbe, sendDueProbes, type AddressConflict, type ProbeSettings, type ProbeTarget } from './conflict-probe';
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

/** A probe window set up in a pod: its receivers open, its window started at `startAt()`. */
interface PodWindow {
  targets: ProbeTarget[];
  receivers: ArpReceiver[];
  probe: ConflictProbe;
}

/** Opens the receivers (before the first probe goes out, so that no answer is missed) and starts the window; undefined when round `frames` has no IPv4 address to probe. */
function setUp(deps: Pick<PodProbeDeps, 'open'>, session: PodSession, netns: string, frames: readonly OutgoingFrame[], settings: ProbeSettings, startAt: () => number, stopAtFirst: boolean): PodWindow | undefined {
  const targets = probeTargets(frames);
  if (targets.length === 0) return undefined;
  const ownMacs = session.pod.rtnl.links().flatMap((link) => (link.mac?.length === 6 ? [link.mac] : []));
  const receivers = deps.open.arpReceivers(
    netns,
    targets.map((t) => t.index),
  );
  return { targets, receivers, probe: new ConflictProbe(targets, ownMacs, settings, startAt(), stopAtFirst) };
}

const addressCount = (targets: readonly ProbeTarget[]): number => targets.reduce((n, t) => n + t.ipv4.length, 0);

/** Probes in one window the IPv4 addresses round `frames` announces from the pod, blocking; returns the conflicts (ARP from the pod's own MACs never is one). */
export function probePod(
  deps: PodProbeDeps,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  settings: ProbeSettings,
  stopAtFirst: boolean,
): AddressConflict[] {
  const setUpAt = deps.timers.now();
  let startAt = setUpAt;
  const window = setUp(deps, session, netns, frames, settings, () => (startAt = deps.timers.now()), stopAtFirst);
  if (!window) return [];
  const { targets, receivers, probe } = window;
  try {
    const io = {
      send: (index: number, frame: Buffer) => session.pod.packet.send(index, frame),
      read: (timeoutMs: number) => readArpFrames(deps.libc, receivers, timeoutMs),
      now: () => deps.timers.now(),
    };
    const conflicts = runProbe(io, probe, deps.log);
    const ms = (from: number, to: number): number => Math.round((to - from) * 100) / 100;
    deps.log.debug('conflict probe done', {
      addresses: addressCount(targets),
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

/**
 * A probe window driven by the caller's poll loop, never blocking: the caller
 * polls fds() with the rest of its sockets, calls step() when one is readable
 * or wakeAt() has come, and finish() once step() says the window is over.
 */
export class SteppedPodProbe {
  private handedOff = false;

  private constructor(
    private readonly deps: Pick<PodProbeDeps, 'libc' | 'log' | 'handOff'>,
    private readonly session: PodSession,
    private readonly window: PodWindow,
    private readonly settings: ProbeSettings,
  ) {}

  /** Starts a window at `now` (the caller's clock, which step() and wakeAt() then use); undefined when `frames` has no IPv4 address to probe. */
  static start(deps: Pick<PodProbeDeps, 'libc' | 'log' | 'handOff' | 'open'>, session: PodSession, netns: string, frames: readonly OutgoingFrame[], settings: ProbeSettings, now: number): SteppedPodProbe | undefined {
    const window = setUp(deps, session, netns, frames, settings, () => now, false);
    return window && new SteppedPodProbe(deps, session, window, settings);
  }

  /** The receivers' fds, for the caller's poll. */
  fds(): number[] {
    return this.handedOff ? [] : this.window.receivers.map((r) => r.fd);
  }

  /** Classifies the ARP queued on the receivers (no wait), sends the probes due by `now`; whether the window is over. */
  step(now: number): boolean {
    const { probe, receivers } = this.window;
    for (const { ifindex, frame } of readArpFrames(this.deps.libc, receivers, 0)) probe.receive(ifindex, frame);
    sendDueProbes(probe, now, (index, frame) => this.session.pod.packet.send(index, frame), this.deps.log);
    return probe.finished(now);
  }

  /** When step() is next due without ARP arriving: the next probe, or the end of the window. */
  wakeAt(now: number): number {
    return now + this.window.probe.waitMs(now);
  }

  /** Hands the receivers off and returns the conflicts found. */
  finish(): AddressConflict[] {
    const conflicts = this.window.probe.conflicts();
    this.close();
    this.deps.log.debug('conflict probe done', { addresses: addressCount(this.window.targets), probes: this.settings.probes, conflicts: conflicts.length, stepped: true });
    return conflicts;
  }

  /** Hands the receivers off (once), the window left unfinished or finished. */
  close(): void {
    if (this.handedOff) return;
    this.handedOff = true;
    this.deps.handOff(this.window.receivers.map((r) => r.release()));
  }
}
