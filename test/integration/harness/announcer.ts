// The built announcer chained the way a runtime chains it: one attachment's
// ADD, CHECK and DEL (optionally run inside a "node" netns), GC of a stateDir,
// and what the announcer left behind.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AnnouncerFiles } from './announcer-files';
import { stateFiles, stopDaemonAtClose } from './announcer-files';
import { ANNOUNCER_SOCKET as DAEMON_SOCKET } from '../../../src/state-files';
import { stopDaemonsOf } from './daemon-stop';
import { ANNOUNCER, assertCniOk, cniExec, pluginExec, type CniCall, type CniOutput } from './cni';
import { ownAnnouncerProcesses } from './processes';
import type { Scope } from './scope';
import { waitFor } from './wait';

/** One chained announcer attachment: where it lives and what its config says. */
export interface AnnouncerAttachment {
  /** The main plugin's conf: the network's name and cniVersion come from it. */
  mainConf: { name: string; cniVersion: string };
  prevResult: unknown;
  containerId: string;
  /** CNI_NETNS; left out, the call has none (DEL may go without). */
  netns?: string | undefined;
  /** CNI_IFNAME. Default eth0. */
  ifname?: string;
  /** CNI_ARGS. */
  args?: string;
  /** Announcer options; `stateDir` and `logFile` come from `files`. */
  options?: Record<string, unknown>;
  files: Pick<AnnouncerFiles, 'stateDir' | 'logFile'>;
  /** Run the announcer inside this named netns (the node), not the test's own. */
  node?: string;
  /** How to run the announcer; default bin/announcer itself. */
  command?: AnnouncerCommand;
}

/**
 * An argv that runs the announcer (the plugin's path last, e.g. `qemu-aarch64-static bin/announcer-arm64`), and env it
 * needs besides CNI's.
 */
export interface AnnouncerCommand {
  argv: readonly [string, ...string[]];
  env?: Record<string, string>;
}

/** What attachmentOf needs of a pod: its netns and the main plugin's result (a bridge pod also names both ids). */
export interface AttachablePod {
  netns: { path: string };
  result: unknown;
  conf?: { name: string; cniVersion: string };
  containerId?: string;
}

/** How attachmentOf chains the announcer: the network and container id (default: the pod's), and its options. */
export interface AttachmentHow {
  network?: string;
  containerId?: string;
  options?: Record<string, unknown>;
}

/** The announcer chained on a pod's eth0 (cniVersion 1.0.0 unless the pod's conf says), with `files`. */
export function attachmentOf<F extends Pick<AnnouncerFiles, 'stateDir' | 'logFile'>>(
  pod: AttachablePod,
  files: F,
  how: AttachmentHow = {},
): AnnouncerAttachment & { files: F } {
  const containerId = how.containerId ?? pod.containerId;
  const name = how.network ?? pod.conf?.name;
  if (containerId === undefined || name === undefined) throw new Error('attachmentOf: no container id or network');
  const att: AnnouncerAttachment & { files: F } = {
    mainConf: { name, cniVersion: pod.conf?.cniVersion ?? '1.0.0' },
    prevResult: pod.result,
    containerId,
    netns: pod.netns.path,
    files,
  };
  if (how.options !== undefined) att.options = how.options;
  return att;
}

/** An announcer call's output, and when (wall clock, ms) its process had exited. */
export interface AnnouncerOutput extends CniOutput {
  exitedAt: number;
}

/** The attachments whose own DEL exited 0 after their last ADD: the scope's DEL need not run again. */
const deleted = new WeakSet<AnnouncerAttachment>();

function announcerCall(
  a: AnnouncerAttachment,
  command: string,
  options: Record<string, unknown>,
): [CniCall, Record<string, unknown>] {
  const conf = { type: 'announcer', ...a.options, ...options, stateDir: a.files.stateDir, logFile: a.files.logFile };
  const config = { ...conf, name: a.mainConf.name, cniVersion: a.mainConf.cniVersion, prevResult: a.prevResult };
  const call: CniCall = { command, containerId: a.containerId, ifname: a.ifname ?? 'eth0' };
  if (a.netns !== undefined) call.netns = a.netns;
  if (a.args !== undefined) call.args = a.args;
  return [call, config];
}

/**
 * Runs the announcer for the attachment: `command` (ADD, CHECK, DEL) with
 * `options` over the attachment's. Never throws on a plugin error: the test
 * judges the output. ADD's cleanup is announcerAdd's.
 */
export async function announcerRun(
  a: AnnouncerAttachment,
  command: 'ADD' | 'CHECK' | 'DEL',
  options: Record<string, unknown> = {},
): Promise<AnnouncerOutput> {
  const [call, config] = announcerCall(a, command, options);
  const [cmd, ...args] = a.command?.argv ?? [ANNOUNCER];
  const out = await pluginExec(cmd, { ...call, env: { ...a.command?.env } }, config, a.node, args);
  return { ...out, exitedAt: Date.now() };
}

/** DELs the attachment as a runtime would (with prevResult and its options and CNI_ARGS). */
export async function announcerDel(a: AnnouncerAttachment): Promise<AnnouncerOutput> {
  const out = await announcerRun(a, 'DEL');
  if (out.code === 0) deleted.add(a);
  return out;
}

/**
 * ADDs the announcer chained after the main plugin, `options` over the
 * attachment's. A DEL is registered at scope close first, so a failed or
 * half-done ADD is undone too, unless the test's own announcerDel exited 0
 * since. That DEL carries only what finds the record (stateDir, logFile, the
 * netns): no options, CNI_ARGS or prevResult, which a test may have made invalid.
 * The announcer of stateDir is stopped at close too, after those DELs (stopDaemonAtClose).
 */
export async function announcerAdd(
  scope: Scope,
  a: AnnouncerAttachment,
  options: Record<string, unknown> = {},
): Promise<AnnouncerOutput> {
  deleted.delete(a);
  stopDaemonAtClose(scope, a.files.stateDir);
  const { args: _args, options: _options, ...plain } = a;
  scope.defer(async () => {
    if (!deleted.has(a))
      assertCniOk(`announcer DEL ${a.containerId}`, await announcerRun({ ...plain, prevResult: undefined }, 'DEL'));
  }, `announcer DEL ${a.containerId}`);
  return announcerRun(a, 'ADD', options);
}

/**
 * GC (spec 1.1.0) of stateDir for the network `name`, with the attachment
 * lists (`cni.dev/valid-attachments`, `cni.dev/attachments`) in `lists`.
 */
export async function announcerGc(
  stateDir: string,
  name: string,
  lists: Record<string, unknown>,
): Promise<AnnouncerOutput> {
  const out = await cniExec(
    ANNOUNCER,
    { command: 'GC' },
    { cniVersion: '1.1.0', name, type: 'announcer', stateDir, ...lists },
  );
  return { ...out, exitedAt: Date.now() };
}

/**
 * What the announcer left behind once the background announcer of stateDir
 * is stopped (it runs idleExitMs after any command, and removes its socket
 * as it exits): the live processes this test process started, and the files
 * in stateDir. Waits (bounded) for both to be empty; resolves with what is
 * still there.
 */
export async function announcerLeftovers(files: Pick<AnnouncerFiles, 'stateDir'>): Promise<string[]> {
  await stopDaemonsOf(files.stateDir);
  const now = async (): Promise<string[]> => [
    ...(await ownAnnouncerProcesses()).map((p) => `process ${p.pid}: ${p.argv.join(' ')}`),
    ...(await stateFiles(files.stateDir)).map((f) => `state file ${f}`),
    // Stopped, the announcer takes its socket with it.
    ...(existsSync(join(files.stateDir, DAEMON_SOCKET)) ? [`state file ${DAEMON_SOCKET}`] : []),
  ];
  return waitFor(async () => ((await now()).length === 0 ? [] : false), {
    timeoutMs: 3000,
    what: 'no announcer leftovers',
  }).catch(now);
}
