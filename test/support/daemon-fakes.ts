// Fakes for the background announcer's unit tests: a pod behind an injected
// socket opener, real records in a temporary stateDir (a plain file stands in for the netns), and TableWorld: the
// announcer's real table on all of them, driven as its loop drives it.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackgroundJob } from '../../src/announce/background-job';
import type { FirstRoundReport } from '../../src/announce/context';
import type { SocketOpener } from '../../src/announce/session';
import { writeRecord, type AttachmentRecord } from '../../src/announce/state';
import { recordName } from '../../src/state-files';
import type { HostSockets, PodSockets } from '../../src/sys/netns';
import type { Rtnl, RtnlEvents } from '../../src/sys/rtnl';
import type { AttachmentStatus } from '../../src/protocol';
import { identityView } from './caller-view-fakes';
import { parseIPv4 } from '../../src/wire/ip';
import type { LinkInfo } from '../../src/wire/rtnetlink';
import { RecordMemory } from '../../src/announce/record-memory';
import { testAnnouncer, type TestAnnouncer } from './announcer';
import { fakeAddress, fakeLink } from './fake-rtnl';
import type { LogRecord } from './log-records';
import { ManualTimers } from './manual-timers';

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
    caller: identityView.caller,
    ...extra,
  };
}

/** The record of `job`, as ADD writes it (no MAC replaced). */
export function jobRecord(job: BackgroundJob): AttachmentRecord & { job: BackgroundJob } {
  const { network, containerId, ifname, netns, netnsId, caller } = job;
  return { network, containerId, ifname, netns, netnsId, caller, originalMacs: [], job };
}

/** Writes the record holding `job` (`record`: as ADD writes it); returns its file name in stateDir. */
export function writeJob(state: StateDir, job: BackgroundJob, record: AttachmentRecord = jobRecord(job)): string {
  writeRecord(state.dir, record, new RecordMemory());
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

/** No frame sent. */
export const NO_FRAMES = { garpRequest: 0, garpReply: 0, na: 0 };

/**
 * One test's world: a stateDir, its FakePod, a manual clock, and the announcer on them (support/announcer.ts: the real
 * table, locks and counters), driven as its loop drives it. Closes in the background are kept in `closed`.
 */
export class TableWorld {
  readonly state = makeStateDir();
  readonly pod = new FakePod();
  readonly timers = new ManualTimers();
  readonly closed: number[] = [];
  readonly a: TestAnnouncer = testAnnouncer(this.state, this.pod, this.timers, {
    closeInBackground: (fd) => void this.closed.push(fd),
  });

  /** The boot clock (what the table runs on). */
  now(): number {
    return this.timers.bootMs();
  }

  /** Moves the clock to `ms` after the start and runs what is due, the fds in `changed` readable. */
  async at(ms: number, changed: number[] = []): Promise<void> {
    this.timers.advance(ms - this.timers.now());
    await this.a.jobs.runDue(this.now(), new Set(changed));
  }

  /** ADD of `job` is done: `record` written and handed to the table with `report` (no frames unless it says). */
  add(job: BackgroundJob, report: Partial<FirstRoundReport> = {}, record = jobRecord(job)): string {
    const name = writeJob(this.state, job, record);
    this.a.jobs.added(name, record, { sent: NO_FRAMES, ...report });
    return name;
  }

  /** A job (support: jobIn) whose round 1 went out `ago` ms before now. */
  sentAgo(ago: number, extra: Partial<BackgroundJob> = {}): BackgroundJob {
    return jobIn(this.state, { firstRoundAt: this.now() - ago, ...extra });
  }

  /** A job whose pod was not ready during ADD: it waits up to 10 s from now. */
  waiting(extra: Partial<BackgroundJob> = {}): BackgroundJob {
    return jobIn(this.state, { firstRoundAt: undefined, readyDeadline: this.now() + 10_000, ...extra });
  }

  /** Ms from now until the table is due next (Infinity: nothing is). */
  wakeIn(): number {
    return this.a.jobs.wakeAt(this.now()) - this.now();
  }

  /** What `announcer status` would show of the table now. */
  status(): AttachmentStatus[] {
    return this.a.jobs.status(this.now());
  }

  /** The log records with message `msg`. */
  logged(msg: string): LogRecord[] {
    return this.a.records().filter((r) => r.msg === msg);
  }

  /** The record of `name` as it is on disk. */
  recorded(name: string): AttachmentRecord & { job: BackgroundJob } {
    return JSON.parse(readFileSync(join(this.state.dir, name), 'utf8'));
  }
}
