// A CommandContext for unit tests of ADD (announceOnAdd) and the commands (add, del, gc, status), without root: a fake
// pod and host behind the injected socket opener, a manual clock with waits on it, the announcer's real attachment
// locks and command gate, a fake table of work, a scripted frame budget, ARP receivers fed by the test, and a real
// stateDir. Everything a command does to the outside is recorded; its log is kept as records (log-records.ts).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { announceOnAdd, type AddJob, type AttachmentCommand } from '../../src/announce/add';
import type { BackgroundJob } from '../../src/announce/background-job';
import type { FirstRoundReport } from '../../src/announce/context';
import { RecordMemory } from '../../src/announce/record-memory';
import type { SocketOpener } from '../../src/announce/session';
import { recordPath, writeRecord, type AttachmentRecord } from '../../src/announce/state';
import { parseConfig } from '../../src/cni/config';
import type { DelRequest, StatusRequest } from '../../src/cni/dispatch';
import { parseEnv, type DelEnv } from '../../src/cni/env';
import { resolveOptions } from '../../src/cni/options';
import { Gate } from '../../src/daemon/admission';
import { MemoryLocks } from '../../src/daemon/host';
import { createLogger, type Logger } from '../../src/log';
import type { AnnouncePlan, InterfacePlan } from '../../src/plan';
import type { FrameReceiver } from '../../src/sys/packet-socket';
import type { RtnlEvents } from '../../src/sys/rtnl';
import type { LinkInfo } from '../../src/wire/rtnetlink';
import { ScriptedBudget } from './announcer';
import { identityView } from './caller-view-fakes';
import { fakeAddress, fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from './fake-rtnl';
import { fakeLibc } from './fake-libc';
import { logRecords, type LogRecord } from './log-records';
import { ManualTimers, settle } from './manual-timers';

export const NETNS = '/run/netns/pod';
export const NETNS_ID = { dev: 4, ino: 4026532999 };
export const PACKET_FD = 60;
/** The first ARP receiver's fd; the next ones count up. */
export const RECEIVER_FD = 70;
export const POD_MAC = Buffer.from('0a580a580005', 'hex');
/** The IP-derived MAC of 10.88.0.99, and the MAC of the pod's net1 (podWithNet1). */
export const DERIVED = Buffer.from('0a580a580063', 'hex');
export const NET1_MAC = Buffer.from('02000000aa03', 'hex');
/** The boot clock (ManualTimers.bootMs) at the start of every test. */
export const BOOT = 1_000_000;

/** One hand-off to the announcer's table of work: a record's job (or none) with round 1's report, or a cancel. */
export type Handed = ({ added: string; job: boolean } & FirstRoundReport) | { cancel: string };

/** The plan of interface `name` with addresses `ipv4` and `ipv6` (no prevResult index, no gateway). */
export function iface(name: string, ipv4: string[], ipv6: string[] = [], targetMac?: Buffer): InterfacePlan {
  return { name, resultIndex: undefined, addresses: [], ipv4, ipv6, targetMac, gateways: { ipv4: [], ipv6: [] } };
}

/** One IPv4 address on eth0 (prevResult's interface 0), round 1 of three. */
export const PLAN: AnnouncePlan = {
  interfaces: [{ ...iface('eth0', ['10.88.0.5']), resultIndex: 0, addresses: ['10.88.0.5/24'] }],
  hostPeerNames: [],
  arpOps: ['request'],
  schedule: [0, 1000, 3000],
};

/** A logger at debug whose lines are kept (`base` on each), read back as records. */
export function recordingLog(base: Record<string, unknown> = {}): { log: Logger; records(): LogRecord[] } {
  const lines: string[] = [];
  return {
    log: createLogger((line) => void lines.push(line), 'debug', base),
    records: () => logRecords(lines.join('')),
  };
}

/** The background work an ADD of c1/eth0 in NETNS recorded, round 1 sent at BOOT; `extra` replaces any field. */
export function pendingJob(extra: Partial<BackgroundJob> = {}): BackgroundJob {
  return {
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    netns: NETNS,
    netnsId: NETNS_ID,
    caller: identityView.caller,
    interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
    hostPeerNames: [],
    arpOps: ['request'],
    schedule: [0, 1000, 3000],
    firstRoundAt: BOOT,
    readyDeadline: BOOT + 5000,
    logLevel: 'info',
    ...extra,
  };
}

/** A fake world for one command; `cleanup` removes its stateDir. */
export class AddHarness {
  readonly stateDir = mkdtempSync(join(tmpdir(), 'announce-add-'));
  readonly timers = new ManualTimers();
  /** The pod: eth0 (ifindex 2) up with carrier, MAC POD_MAC, 10.88.0.5. */
  readonly pod: FakeNetns = fakeNetns({
    links: [fakeLink({ index: 2, name: 'eth0', mac: POD_MAC })],
    addresses: [fakeAddress(2, '10.88.0.5')],
  });
  readonly host: FakeNetns = fakeNetns();
  /** Frames sent through the pod's packet socket, with the ifindex. */
  readonly sent: { index: number; frame: Buffer }[] = [];
  readonly handed: Handed[] = [];
  /** Each fd given to closeInBackground. */
  readonly released: number[] = [];
  /** Each wait on fds a command made: its fds and ms. */
  readonly waited: { fds: number[]; ms: number }[] = [];
  /** Whether the command's caller still waits (a test ends the wait to see the command stop). */
  wanted: () => boolean = () => true;
  /** The command's gate (the announcer's own). */
  readonly gate = new Gate(() => this.wanted());
  /** The announcer's attachment locks, their waits on the manual clock. */
  readonly locks = new MemoryLocks((ms) => this.timers.sleep(ms));
  /** The node-wide budget round 1 draws from (`first`); it grants unless scripted. */
  readonly budget = new ScriptedBudget();
  /** ARP frames each receiver (by ifindex) gets once a frame went out on that interface (an answer to the probe). */
  readonly arpIn = new Map<number, Buffer[]>();
  /** The ifindexes ARP receivers were opened for, per call. */
  readonly receiversOpened: number[][] = [];
  readonly written = new RecordMemory();
  /** Runs when ADD opens the pod's sockets (after it read the previous record). */
  onOpen: () => void = () => undefined;
  /** Runs at each wait on fds, before it ends (a change in the pod meanwhile). */
  onWait: () => void = () => undefined;
  /** The error the pod's packet socket throws for a frame it cannot send (none: every frame goes). */
  sendError: (frame: Buffer) => Error | undefined = () => undefined;
  private readonly kept = recordingLog();

  cleanup(): void {
    rmSync(this.stateDir, { recursive: true, force: true });
  }

  /** Every log line so far, as records. */
  records(): LogRecord[] {
    return this.kept.records();
  }

  /** The log records of message `msg`. */
  said(msg: string): LogRecord[] {
    return this.records().filter((r) => r.msg === msg);
  }

  /** ADD of c1/eth0 in NETNS with PLAN, its pod ready within addWaitMs 1000 (readyTimeoutMs 5000). */
  job(extra: Partial<AddJob> = {}): AddJob {
    return {
      network: 'net',
      containerId: 'c1',
      ifname: 'eth0',
      netns: NETNS,
      netnsId: NETNS_ID,
      caller: identityView.caller,
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

  /** Runs ADD (announceOnAdd) of `job(extra)` on `ctx`. */
  add(extra: Partial<AddJob> = {}, ctx: AttachmentCommand = this.ctx()): Promise<Map<number, string>> {
    return announceOnAdd(ctx, this.job(extra));
  }

  /** Changes the pod's eth0 (`running: false`: no carrier, ADD waits for it). */
  eth0(fields: Partial<LinkInfo>): void {
    this.pod.links[0] = { ...this.pod.links[0]!, ...fields };
  }

  /** Puts net1 (ifindex 3, NET1_MAC, 10.89.0.7) into the pod. */
  podWithNet1(): void {
    this.pod.links.push(fakeLink({ index: 3, name: 'net1', mac: NET1_MAC }));
    this.pod.addresses.push(fakeAddress(3, '10.89.0.7'));
  }

  /**
   * What the command left, to match (toMatchObject) in part: the frames sent, whether c1/eth0's record is there, the
   * hand-offs to the table, the fds closed in the background, the clock, each wait, each MAC set (hex).
   */
  left() {
    const { handed, released, waited } = this;
    const macs = this.pod.setMacs.map((s) => s.mac);
    return {
      sent: this.sent.length,
      record: existsSync(this.file()),
      handed,
      released,
      at: this.timers.now(),
      waited,
      macs,
    };
  }

  /** The record file of c1/eth0 (or of `containerId`). */
  file(containerId = 'c1'): string {
    return recordPath(this.stateDir, containerId, 'eth0');
  }

  /** The record of c1/eth0 as its file holds it. */
  readBack(): AttachmentRecord {
    return JSON.parse(readFileSync(this.file(), 'utf8')) as AttachmentRecord;
  }

  /** Writes a record of c1/eth0 in NETNS, as an earlier command left it; `extra` replaces any field. */
  previous(extra: Partial<AttachmentRecord> = {}): AttachmentRecord {
    const ids = { network: 'net', containerId: 'c1', ifname: 'eth0', netns: NETNS, netnsId: NETNS_ID };
    const record: AttachmentRecord = { ...ids, caller: identityView.caller, originalMacs: [], ...extra };
    writeRecord(this.stateDir, record, new RecordMemory());
    return record;
  }

  /** A command's context and its log (`logger` gives every command that log, its lines naming the attachment). */
  ctx(): AttachmentCommand {
    const logger = (_config: unknown, ids: { containerId?: string | undefined; ifname?: string | undefined }) =>
      this.kept.log.with({ containerId: ids.containerId, ifname: ids.ifname });
    return {
      // poll(2) (readFrames polls with timeout 0): receivers with an answer queued are readable at once; otherwise
      // the clock runs to the timeout.
      libc: fakeLibc({
        pollIn: (fds, ms) => {
          const ready = fds.map((fd) => this.answerQueued(fd));
          if (!ready.some(Boolean)) this.timers.advance(ms);
          return ready;
        },
        openPacketSocket: () => 99,
      }),
      open: this.opener(),
      view: identityView,
      timers: this.timers,
      // A wait ends at once when an answer is queued; otherwise the clock runs to its end.
      waits: {
        readable: async (fds, ms) => {
          this.waited.push({ fds: [...fds], ms });
          this.onWait();
          if (!fds.some((fd) => this.answerQueued(fd))) this.timers.advance(ms);
        },
      },
      gate: this.gate,
      logger,
      log: logger(undefined, {}),
      table: {
        added: (name, record, report) => (
          this.handed.push({ added: name, job: record.job !== undefined, ...report }), false
        ),
        cancel: (name) => (this.handed.push({ cancel: name }), true),
      },
      frameBudget: this.budget.first,
      attachmentLocks: this.locks,
      written: this.written,
      closeInBackground: (fd) => void this.released.push(fd),
    };
  }

  /**
   * A CNI request of `command` for c1/eth0 of network "net" in stateDir, as dispatch makes it; `conf` adds config
   * fields, `vars` CNI_* variables (CNI_NETNS: none unless given).
   */
  request(command: 'DEL', conf?: Record<string, unknown>, vars?: Record<string, string>): DelRequest;
  request(command: 'GC' | 'STATUS', conf?: Record<string, unknown>, vars?: Record<string, string>): StatusRequest;
  request(
    command: 'DEL' | 'GC' | 'STATUS',
    conf: Record<string, unknown> = {},
    vars: Record<string, string> = {},
  ): DelRequest | StatusRequest {
    const config = parseConfig({
      cniVersion: '1.1.0',
      name: 'net',
      type: 'announcer',
      stateDir: this.stateDir,
      ...conf,
    });
    const env = parseEnv({ CNI_COMMAND: command, CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', ...vars }) as DelEnv;
    return { config, cniVersion: '1.1.0' as const, ...resolveOptions(config, env.args), env } as DelRequest;
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
        return {
          rtnl: fakeRtnl(this.pod),
          events: events(50),
          packet: {
            send: (index, frame) => {
              const err = this.sendError(Buffer.from(frame));
              if (err) throw err;
              this.sent.push({ index, frame: Buffer.from(frame) });
            },
            close: () => undefined,
            release: () => PACKET_FD,
          },
          ipv6Forwarding: false,
          close: () => undefined,
        };
      },
      host: () => ({ rtnl: fakeRtnl(this.host), events: events(51), close: () => undefined }),
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
