// ADD's announcement without root (announceOnAdd): a fake pod and host behind
// the injected socket opener, a manual clock with waits on it, a fake
// background announcer, ARP receivers fed by the test, and a real stateDir.
// Everything ADD does to the outside is recorded.
import { Gate } from '../../src/daemon/admission';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddDeps, AddJob } from '../../src/announce/announce-on-add';
import { UNLIMITED, type FrameBudget } from '../../src/announce/budget';
import type { SocketOpener } from '../../src/announce/session';
import type { FirstRoundReport } from '../../src/announce/job-host';
import { createLogger } from '../../src/log';
import type { AnnouncePlan } from '../../src/plan';
import type { FrameReceiver } from '../../src/sys/packet-socket';
import type { HostSockets, PodSockets } from '../../src/sys/netns';
import type { RtnlEvents } from '../../src/sys/rtnl';
import { fakeLibc } from './fake-libc';
import { fakeAddress, fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from './fake-rtnl';
import { ManualTimers, settle } from './manual-timers';
import { RecordMemory } from '../../src/announce/record-memory';

export const NETNS = '/run/netns/pod';
export const NETNS_ID = { dev: 4, ino: 4026532999 };
export const PACKET_FD = 60;

/** One hand-off to the announcer's table of work (JobHost). */
export type Handed = ({ added: string; job: boolean } & FirstRoundReport) | { cancel: string };
/** The first ARP receiver's fd; the next ones count up. */
export const RECEIVER_FD = 70;
export const POD_MAC = Buffer.from('0a580a580005', 'hex');

/** One IPv4 address on eth0, round 1 of three. */
export const PLAN: AnnouncePlan = {
  interfaces: [
    {
      name: 'eth0',
      resultIndex: 0,
      addresses: ['10.88.0.5/24'],
      ipv4: ['10.88.0.5'],
      ipv6: [],
      targetMac: undefined,
      gateways: { ipv4: [], ipv6: [] },
    },
  ],
  hostPeerNames: [],
  arpOps: ['request'],
  schedule: [0, 1000, 3000],
};

/** A fake ADD world; `cleanup` removes its stateDir. */
export class AddHarness {
  readonly stateDir = mkdtempSync(join(tmpdir(), 'announce-add-'));
  readonly timers = new ManualTimers();
  /** The pod: eth0 (ifindex 2) up with carrier, MAC POD_MAC, 10.88.0.5. */
  readonly pod: FakeNetns = fakeNetns({
    links: [fakeLink({ index: 2, name: 'eth0', mac: POD_MAC })],
    addresses: [fakeAddress(2, '10.88.0.5')],
  });
  readonly host: FakeNetns = fakeNetns();
  /** Log lines without their time stamp: `LEVEL message k=v…`. */
  readonly lines: string[] = [];
  /** Frames sent through the pod's packet socket, with the ifindex. */
  readonly sent: { index: number; frame: Buffer }[] = [];
  /** What ADD handed to the announcer's table of work: a record's job (or none) with round 1's report, or a cancel. */
  readonly handed: Handed[] = [];
  /** Each release call (sockets whose close is slow). */
  readonly released: number[][] = [];
  /** Each libc.close. */
  readonly closed: number[] = [];
  /** Each wait ADD made: its fds and ms. */
  readonly waited: { fds: number[]; ms: number }[] = [];
  /** Whether ADD's caller still waits (a test ends the wait to see ADD stop). */
  wanted: () => boolean = () => true;
  /** Each release of the attachment lock. */
  lockReleases = 0;
  /** ARP frames each receiver (by ifindex) gets once a frame went out on that interface (an answer to the probe). */
  readonly arpIn = new Map<number, Buffer[]>();
  /** The ifindexes ARP receivers were opened for, per call. */
  readonly receiversOpened: number[][] = [];
  /** What ADD wrote to each record. */
  readonly written = new RecordMemory();
  budget: FrameBudget = UNLIMITED;
  /** Runs when ADD opens the pod's sockets (after it read the previous record). */
  onOpen: () => void = () => undefined;

  cleanup(): void {
    rmSync(this.stateDir, { recursive: true, force: true });
  }

  job(extra: Partial<AddJob> = {}): AddJob {
    return {
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      netns: NETNS,
      netnsId: NETNS_ID,
      stateDir: this.stateDir,
      plan: PLAN,
      announce: true,
      addWaitMs: 1000,
      readyTimeoutMs: 5000,
      logLevel: 'info',
      gatewayCheck: { mode: 'off', windowMs: 1000, gateways: [] },
      ...extra,
    };
  }

  deps(): AddDeps {
    return {
      // poll(2) (readFrames polls with timeout 0): receivers with an answer queued are readable at once; otherwise
      // the clock runs to the timeout.
      libc: fakeLibc({
        pollIn: (fds, ms) => {
          const ready = fds.map((fd) => this.answerQueued(fd));
          if (!ready.some(Boolean)) this.timers.advance(ms);
          return ready;
        },
        close: (fd) => void this.closed.push(fd),
      }),
      open: this.opener(),
      timers: this.timers,
      // A wait ends at once when an answer is queued; otherwise the clock runs to its end.
      waits: {
        readable: async (fds, ms) => {
          this.waited.push({ fds: [...fds], ms });
          if (!fds.some((fd) => this.answerQueued(fd))) this.timers.advance(ms);
        },
      },
      log: createLogger(
        (line) => this.lines.push(line.slice(25, -1)),
        'debug',
        {},
        () => new Date(0),
      ),
      gate: new Gate(() => this.wanted()),
      host: {
        added: (name, record, report) => (
          this.handed.push({ added: name, job: record.job !== undefined, ...report }), false
        ),
        cancel: (name) => (this.handed.push({ cancel: name }), true),
      },
      budget: this.budget,
      lockFile: async (path) => ({ path, release: () => void this.lockReleases++ }),
      written: this.written,
      release: (fds) => void this.released.push([...fds]),
    };
  }

  /**
   * Whether the receiver on `fd` has an answer to read: ARP queued for its interface, and a frame sent there already.
   */
  private answerQueued(fd: number): boolean {
    const ifindex = fd - RECEIVER_FD + 2;
    return (this.arpIn.get(ifindex)?.length ?? 0) > 0 && this.sent.some((s) => s.index === ifindex);
  }

  private opener(): SocketOpener {
    const events = (fd: number) => ({ fd, drain: () => undefined, close: () => undefined }) as unknown as RtnlEvents;
    return {
      pod: () => {
        this.onOpen();
        const pod: PodSockets = {
          rtnl: fakeRtnl(this.pod),
          events: events(50),
          packet: {
            send: (index, frame) => void this.sent.push({ index, frame: Buffer.from(frame) }),
            close: () => undefined,
            release: () => PACKET_FD,
          },
          ipv6Forwarding: false,
          close: () => undefined,
        };
        return pod;
      },
      host: (): HostSockets => ({ rtnl: fakeRtnl(this.host), events: events(51), close: () => undefined }),
      receivers: (_netns, ifindexes) => {
        this.receiversOpened.push([...ifindexes]);
        return ifindexes.map((ifindex) => this.receiver(ifindex));
      },
    };
  }

  private receiver(ifindex: number): FrameReceiver {
    const fd = RECEIVER_FD + ifindex - 2;
    return {
      ifindex,
      fd,
      receive: (buf) => {
        const frame = this.answerQueued(fd) ? this.arpIn.get(ifindex)?.shift() : undefined;
        if (!frame) return undefined;
        buf.set(frame);
        return frame.length;
      },
      close: () => undefined,
      release: () => fd,
    };
  }

  /** Settles `run` while the manual clock moves on in `stepMs` steps (for sleeps), at most `limitMs`. */
  async drive<T>(run: Promise<T>, stepMs = 100, limitMs = 120_000): Promise<T> {
    let done = false;
    const tracked = run.finally(() => (done = true));
    tracked.catch(() => undefined);
    for (let waited = 0; !done && waited < limitMs; waited += stepMs) {
      await settle();
      if (!done) this.timers.advance(stepMs);
    }
    return tracked;
  }
}
