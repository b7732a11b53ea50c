// `announcer announce --netns PATH --ifname IF [--count N] [--interval MS] [--wait MS]`:
// announces an interface's current addresses by hand, through the same code
// and safety rules as ADD (never from the node's own netns, never before the
// pod is ready). It replaces reaching for `arping -U` and `ndisc6` on a node.
import { blockingWaits, type Timers } from '../announce/context';
import { buildRound, sendFrames, totalFrames } from '../announce/round';
import {
  openSession,
  waitReady,
  type AnnounceTarget,
  type PodSession,
  type ResolvedInterface,
  type SocketOpener,
} from '../announce/session';
import { parseFlags, type Flags } from '../cli-flags';
import { ifnameProblem } from '../cni/env';
import { silentLogger } from '../log';
import type { Libc } from '../sys/libc';
import { checkNetnsPath } from '../sys/netns';
import { formatIPv6, isIPv6LinkLocal } from '../wire/ip';

/** The verb. */
export const ANNOUNCE_VERB = 'announce';
const ANNOUNCE_FLAGS = '--netns PATH --ifname IF [--count N] [--interval MS] [--wait MS]';
/** Its usage line. */
export const ANNOUNCE_USAGE = `usage: announcer ${ANNOUNCE_VERB} ${ANNOUNCE_FLAGS}`;
const SPEC = { netns: 'string', ifname: 'string', count: 'int', interval: 'int', wait: 'int' } as const;

/** What `announce` needs from the process. */
export interface AnnounceCliDeps {
  libc: Libc;
  open: SocketOpener;
  timers: Timers;
  out(line: string): void;
  err(line: string): void;
}

/** Runs `announcer announce`; resolves with the exit status (0 sent, 1 failed, 2 bad usage). */
export async function announceCommand(deps: AnnounceCliDeps, argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, SPEC, ANNOUNCE_USAGE);
  const problem = parsed.ok ? usageProblem(parsed.flags) : parsed.problem;
  if (!parsed.ok || problem) {
    deps.err(`announcer ${ANNOUNCE_VERB}: ${problem}`);
    return 2;
  }
  const { netns, ifname } = parsed.flags as { netns: string; ifname: string };
  const count = parsed.flags.count ?? 1;
  const interval = parsed.flags.interval ?? 1000;
  try {
    refuseUnlessPodNetns(deps.libc, netns);
    const start = deps.timers.now();
    for (let round = 1; round <= count; round++) {
      const due = start + (round - 1) * interval;
      if (due > deps.timers.now()) await deps.timers.sleep(due - deps.timers.now());
      // Only round 1 waits for readiness; a later round finds the pod ready, or is skipped.
      const waitMs = round === 1 ? (parsed.flags.wait ?? 2000) : 0;
      deps.out(await oneRound(deps, netns, ifname, waitMs, `round ${round}/${count}`));
    }
    return 0;
  } catch (err) {
    deps.err(`announcer ${ANNOUNCE_VERB}: ${(err as Error).message}`);
    return 1;
  }
}

function usageProblem(flags: Flags<typeof SPEC>): string | undefined {
  if (flags.netns === undefined) return `--netns is required; ${ANNOUNCE_USAGE}`;
  if (flags.ifname === undefined) return `--ifname is required; ${ANNOUNCE_USAGE}`;
  const bad = ifnameProblem(flags.ifname);
  if (bad) return `--ifname ${bad}`;
  if (flags.count !== undefined && (flags.count < 1 || flags.count > 10)) return '--count must be from 1 to 10';
  if (flags.interval !== undefined && (flags.interval < 10 || flags.interval > 60000))
    return '--interval must be from 10 to 60000 ms';
  if (flags.wait !== undefined && flags.wait > 30000) return '--wait must be at most 30000 ms';
  return undefined;
}

function refuseUnlessPodNetns(libc: Libc, netns: string): void {
  const check = checkNetnsPath(libc, netns);
  if (check.kind === 'missing') throw new Error(`${netns} does not exist`);
  if (check.kind === 'not-netns') throw new Error(`${netns} is not a network namespace: ${check.reason}`);
  if (check.kind === 'own')
    throw new Error(`${netns} is this node's own network namespace: refusing to announce from the host`);
}

async function oneRound(
  deps: AnnounceCliDeps,
  netns: string,
  ifname: string,
  waitMs: number,
  what: string,
): Promise<string> {
  // Alone in its process: the packet socket is closed here, nothing else waits on its close.
  const session = openSession({ ...deps, closeInBackground: (fd) => deps.libc.close(fd) }, netns, [ifname], []);
  try {
    const iface = session.interfaces[0];
    if (!iface) throw new Error(`interface ${ifname} not found in ${netns}`);
    const target = currentAddresses(session, iface);
    if (target.ipv4.length + target.ipv6.length === 0) throw new Error(`${ifname} has no address to announce`);
    const waiting = { timeoutMs: waitMs, timers: deps.timers, waits: blockingWaits(deps.libc) };
    const outcome = await waitReady(session, [{ ...target, iface }], waiting);
    if (outcome.kind === 'gone') throw new Error(`interface ${ifname} disappeared from ${netns}`);
    if (outcome.kind !== 'ready') {
      if (waitMs > 0) throw new Error(`${ifname} not ready after ${waitMs} ms: ${outcome.reasons.join('; ')}`);
      return `${what}: skipped, ${ifname} not ready`;
    }
    const frames = buildRound(outcome.inputs, ['request'], session.pod.ipv6Forwarding, silentLogger);
    const sent = sendFrames(session.pod.packet, frames, silentLogger);
    return `${what}: sent ${totalFrames(sent)} frames on ${ifname} (garp-request=${sent.garpRequest} na=${sent.na})`;
  } finally {
    session.close();
  }
}

/** Every address on the interface, IPv6 link-local ones aside. */
function currentAddresses(session: PodSession, iface: ResolvedInterface): AnnounceTarget {
  const present = session.pod.rtnl.addresses(iface.index);
  return {
    name: iface.name,
    ipv4: present.filter((a) => a.family === 4).map((a) => [...a.bytes].join('.')),
    ipv6: present.filter((a) => a.family === 6 && !isIPv6LinkLocal(a.bytes)).map((a) => formatIPv6(a.bytes)),
  };
}
