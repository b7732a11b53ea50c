// Steps the one-executor integration tests (issue 25) share: a test's clean start, the ADD that
// starts the stateDir's announcer, and pods on a bridge whose CNI calls run under strace, so a
// test can tell that the CNI process ran no command itself (no setns(2), no flock(2)).
import { announcerAdd, attachmentOf, type AnnouncerAttachment, type AnnouncerOutput } from './announcer';
import { announcerFiles, logged, type AnnouncerFiles } from './announcer-files';
import { allocSubnet } from './names';
import { attachBridgePod, bridgeWithKeeper, type BridgePod } from './bridge-pods';
import { startCapture, type Capture } from './capture';
import { assertCniOk } from './cni';
import { traceFile, tracedAnnouncer, tracedCalls } from './held-announcer';
import { setPortState } from './port-hold';
import { killStrays } from './processes';
import type { Scope } from './scope';
import { settledFlag, waitFor, type WaitOptions } from './wait';

/** The announcer's debug record while an ADD waits for its pod (src/announce/first-round.ts). */
export const WAITING_FOR_POD = 'pod not ready: waiting for it';

/**
 * Waits until an ADD logs that it waits for its pod or `adding` has settled (default 20 s); resolves with whether the
 * ADD still runs (false: it ended first).
 */
export async function waitingForPod(
  files: Pick<AnnouncerFiles, 'logFile'>,
  adding: Promise<unknown>,
  opts: WaitOptions = {},
): Promise<boolean> {
  const ended = settledFlag(adding);
  const said = async (): Promise<boolean> => (await logged(files.logFile, 'debug', WAITING_FOR_POD)).length > 0;
  await waitFor(async () => ended.settled || (await said()), {
    timeoutMs: 20_000,
    what: 'the ADD to wait for its pod',
    ...opts,
  });
  return !ended.settled;
}

/** A test's scope (no announcer of ours may outlive it: killStrays strict) and its own announcer files. */
export async function cleanStart(scope: () => Scope): Promise<{ s: Scope; files: AnnouncerFiles }> {
  const s = scope();
  killStrays(s, { strict: true });
  return { s, files: await announcerFiles(s) };
}

/** The ADD (one round) that starts the stateDir's announcer; it must succeed. */
export async function startingAdd(s: Scope, att: AnnouncerAttachment): Promise<AnnouncerOutput> {
  return assertCniOk('the ADD that starts the announcer', await announcerAdd(s, att, { count: 1 }));
}

/** A pod whose announcer calls run under strace, writing their setns(2) and flock(2) calls to `trace`. */
export interface TracedPod {
  pod: BridgePod;
  att: AnnouncerAttachment;
  trace: string;
}

/** How tracedPodsOnBridge makes its pods: their ids' tails and binaries (default bin/announcer), their options. */
export interface TracedPodsHow {
  prefix: string;
  pods: readonly { name: string; binary?: string }[];
  options: Record<string, unknown>;
}

/** A bridge with an ARP capture, and settled pods on it (.10 up, `${prefix}-${name}`), each a TracedPod. */
export async function tracedPodsOnBridge(
  s: Scope,
  files: AnnouncerFiles,
  how: TracedPodsHow,
): Promise<{ capture: Capture; pods: TracedPod[] }> {
  const { prefix, options } = how;
  const net = allocSubnet();
  const bridge = await bridgeWithKeeper(s, net, { prefix });
  const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
  const pods: TracedPod[] = [];
  for (const [i, { name, binary }] of how.pods.entries()) {
    const containerId = `${prefix}-${name}`;
    const pod = await attachBridgePod(s, { prefix, net, bridge, host: 10 + i, containerId, settle: true });
    const trace = await traceFile(s);
    pods.push({
      pod,
      trace,
      att: { ...attachmentOf(pod, files, { options }), command: tracedAnnouncer(trace, binary) },
    });
  }
  return { capture, pods };
}

/** How podHeldBehindStarter makes its two pods: their ids' tails (`${prefix}-${name}`), and their options. */
export interface HeldPodHow {
  prefix: string;
  names: { starter: string; held: string };
  options: Record<string, unknown>;
}

/**
 * A bridge with an ARP capture, the stateDir's announcer started by a starter pod's ADD (.10), and a settled pod
 * (.11) whose bridge port is held in `listening`; `att` is that pod's (untraced).
 */
export async function podHeldBehindStarter(s: Scope, files: AnnouncerFiles, how: HeldPodHow) {
  const { prefix, names, options } = how;
  const net = allocSubnet();
  const bridge = await bridgeWithKeeper(s, net, { prefix });
  const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
  const starterId = `${prefix}-${names.starter}`;
  const starter = await attachBridgePod(s, { prefix, net, bridge, host: 10, containerId: starterId, settle: true });
  const starterAtt = attachmentOf(starter, files, { options });
  await startingAdd(s, starterAtt);
  const containerId = `${prefix}-${names.held}`;
  const pod = await attachBridgePod(s, { prefix, net, bridge, host: 11, containerId, settle: true });
  await setPortState(pod.hostVeth, 'listening');
  return { capture, starterAtt, pod, att: attachmentOf(pod, files, { options }) };
}

/** The setns(2) and flock(2) lines of a traced call: what only a command run in the CNI process does. */
export async function inProcessCalls(trace: string): Promise<string[]> {
  return [...(await tracedCalls(trace, 'setns')), ...(await tracedCalls(trace, 'flock'))];
}

/** ADDs a traced pod, which must succeed (`what` names it); resolves with the output and inProcessCalls. */
export async function tracedAdd(s: Scope, p: TracedPod, options: Record<string, unknown>, what?: string) {
  const add = assertCniOk(what ?? `ADD ${p.att.containerId}`, await announcerAdd(s, p.att, options));
  return { add, inProcess: await inProcessCalls(p.trace) };
}
