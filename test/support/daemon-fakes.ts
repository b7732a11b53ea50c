// Fakes for the background announcer's unit tests: a pod behind an injected
// socket opener, a scripted frame budget, a logger that keeps its lines, and
// real records in a temporary stateDir (a plain file stands in for the netns).
import { mkdtempSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackgroundJob } from '../../src/announce/background-job';
import type { FrameBudget } from '../../src/announce/budget';
import type { SocketOpener } from '../../src/announce/session';
import { writeRecord, type AttachmentRecord } from '../../src/announce/state';
import { recordName } from '../../src/state-files';
import type { RateLimit } from '../../src/announce/budget';
import { createLogger, type Logger } from '../../src/log';
import type { HostSockets, PodSockets } from '../../src/sys/netns';
import type { Rtnl, RtnlEvents } from '../../src/sys/rtnl';
import { parseIPv4 } from '../../src/wire/ip';
import type { LinkInfo } from '../../src/wire/rtnetlink';
import { fakeAddress, fakeLink } from './fake-rtnl';
import { RecordMemory } from '../../src/announce/record-memory';

export const POD_MAC = Buffer.from('0a580a580005', 'hex');
/** The pod's gateway, 10.88.0.1, and its MAC. */
export const GW_MAC = Buffer.from('525400123456', 'hex');

/** The gateway's ARP reply to the pod (10.88.0.5), as the pod's receiver reads it. */
export const gatewayReply = (): Buffer =>
  Buffer.concat([
    POD_MAC,
    GW_MAC,
    Buffer.from('08060001080006040002', 'hex'),
    GW_MAC,
    parseIPv4('10.88.0.1'),
    POD_MAC,
    parseIPv4('10.88.0.5'),
  ]);

/** The fds of the pod's and the host's event sockets. */
export const POD_EVENTS_FD = 50;
export const HOST_EVENTS_FD = 51;

/** A temporary stateDir with a stand-in netns file; `remove()` deletes it. */
export interface StateDir {
  dir: string;
  netns: string;
  netnsId: { dev: number; ino: number };
  remove(): void;
}

export function makeStateDir(prefix = 'daemon-unit-'): StateDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const netns = join(dir, 'netns-pod');
  writeFileSync(netns, '');
  const st = statSync(netns);
  return {
    dir,
    netns,
    netnsId: { dev: st.dev, ino: st.ino },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A job of `containerId` on eth0 (10.88.0.5, GARP requests), rounds at 0, 1000, 3000, round 1 sent at boot ms
 * `firstRoundAt`.
 */
export function jobIn(state: StateDir, extra: Partial<BackgroundJob> = {}): BackgroundJob {
  return {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: state.netns,
    netnsId: state.netnsId,
    interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
    hostPeerNames: [],
    arpOps: ['request'],
    schedule: [0, 1000, 3000],
    firstRoundAt: 1_000_000,
    readyDeadline: 1_010_000,
    logLevel: 'debug',
    ...extra,
  };
}

/** The record of `job`, as ADD writes it (no MAC replaced). */
export function jobRecord(job: BackgroundJob): AttachmentRecord & { job: BackgroundJob } {
  const { network, containerId, ifname, netns, netnsId } = job;
  return { network, containerId, ifname, netns, netnsId, originalMacs: [], job };
}

/** Writes the record holding `job`; returns its file name in stateDir. */
export function writeJob(state: StateDir, job: BackgroundJob): string {
  writeRecord(state.dir, jobRecord(job), new RecordMemory());
  return recordName(job.containerId, job.ifname);
}

/** The pod's eth0 (index 2, the pod MAC), veth, up with carrier; `fields` replace any of it. */
export function link(fields: Partial<LinkInfo> = {}): LinkInfo {
  return fakeLink({ index: 2, name: 'eth0', mac: POD_MAC, ...fields });
}

/** A pod with eth0 holding 10.88.0.5; tests change `links` (down: not ready; empty: gone) and watch what happens. */
export class FakePod {
  links: LinkInfo[] = [link()];
  /** Thrown by the opener's pod() when set. */
  openError: Error | undefined;
  /** Thrown by a pod session's close() when set (it is closed all the same). */
  closeError: Error | undefined;
  /** Frames sent through the pod's packet socket. */
  readonly sent: Buffer[] = [];
  /** Sessions opened, and closed (both sockets). */
  opened = 0;
  closed = 0;
  /** Packet socket fds given up (to be closed in the background). */
  readonly released: number[] = [];
  /** Event sockets drained. */
  drained = 0;
  /** Hears each drained event socket's fd (a scripted poll then stops calling it readable). */
  onDrain: (fd: number) => void = () => undefined;
  /** Times the conflict probe asked for ARP receivers (without `arpFrames`, it then fails). */
  probes = 0;
  /** Frames the conflict probe's ARP receiver (fd 60, eth0) reads, once each; undefined: there is no receiver. */
  arpFrames: Buffer[] | undefined;
  /** The host's sockets when set (a bridged host, fake-bridged-host.ts); else a host with no bridge port. */
  hostSide: ((groups: readonly number[] | undefined) => HostSockets) | undefined;
  private nextFd = 100;

  get open(): number {
    return this.opened - this.closed;
  }

  opener(): SocketOpener {
    const rtnl = {
      linkByName: (name: string) => this.links.find((l) => l.name === name),
      linkByIndex: (index: number) => this.links.find((l) => l.index === index),
      links: () => this.links,
      addresses: (index: number) => (index === 2 ? [fakeAddress(index, '10.88.0.5')] : []),
      bridgePortState: () => undefined,
    } as unknown as Rtnl;
    const events = (fd: number) =>
      ({ fd, drain: () => (this.drained++, this.onDrain(fd)), close: () => undefined }) as unknown as RtnlEvents;
    const hostRtnl = { linkByIndex: () => undefined, linkByName: () => undefined } as unknown as Rtnl;
    return {
      pod: (): PodSockets => {
        if (this.openError) throw this.openError;
        this.opened++;
        const fd = this.nextFd++;
        let packetOpen = true;
        return {
          rtnl,
          events: events(POD_EVENTS_FD),
          packet: {
            send: (_index, frame) => {
              if (!packetOpen) throw new Error('send on a released packet socket');
              this.sent.push(Buffer.from(frame));
            },
            close: () => undefined,
            release: () => {
              packetOpen = false;
              this.released.push(fd);
              return fd;
            },
          },
          ipv6Forwarding: false,
          close: () => {
            this.closed++;
            if (this.closeError) throw this.closeError;
          },
        };
      },
      host: (_netns, groups): HostSockets =>
        this.hostSide?.(groups) ?? { rtnl: hostRtnl, events: events(HOST_EVENTS_FD), close: () => undefined },
      receivers: () => {
        this.probes++;
        const frames = this.arpFrames;
        if (!frames) throw new Error('no ARP receivers here');
        const receive = (buf: Uint8Array): number | undefined => {
          const frame = frames.shift();
          if (!frame) return undefined;
          buf.set(frame);
          return frame.length;
        };
        return [{ ifindex: 2, fd: 60, receive, close: () => undefined, release: () => (this.released.push(60), 60) }];
      },
    };
  }
}

/** One call of the fake budget. */
export interface BudgetCall {
  limit: RateLimit | undefined;
  frames: number;
  onCredit: boolean;
  /** What the clock said when the bucket asked. */
  at: number;
}

/** A budget that answers from `answers` (then ok): a number is a wait in ms, a function throws. */
export class ScriptedBudget {
  readonly calls: BudgetCall[] = [];
  readonly answers: (number | 'ok' | Error)[] = [];

  /** The node settings' rateLimit the budget stands for. */
  limit: RateLimit | undefined = undefined;

  budget = (): FrameBudget => ({
    take: async (frames, clock, onCredit, send) => {
      this.calls.push({ limit: this.limit, frames, onCredit, at: clock() });
      const answer = this.answers.shift() ?? 'ok';
      if (answer instanceof Error) throw answer;
      if (typeof answer === 'number') return { ok: false, waitMs: answer };
      send();
      return { ok: true };
    },
  });
}

/** A logger whose lines (logfmt) are kept in `lines`. */
export function keptLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger((line) => lines.push(line), 'debug'), lines };
}

/** Whether `fd` is open on the resident lock (announcer-resident.flock): fakes of tryLock tell it from the others. */
export function isResidentLock(fd: number): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`).endsWith('/announcer-resident.flock');
  } catch {
    return false;
  }
}
