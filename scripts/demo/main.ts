// make demo: the stale ARP entry of a reused pod IP, and its repair by the
// chained announcer, on a throwaway bridge and netns (root only). Debian's
// reference plugins from /usr/lib/cni run the way a runtime runs them.
//
//   1. A bridge with .1 of a free 10.88.N.0/24 on the node, and a keeper pod
//      (.9) so that the bridge has carrier.
//   2. BEFORE: plant a stale entry for .5 (an old pod's MAC), ADD pod A with .5
//      through the bridge plugin alone: the node's entry keeps the old MAC and
//      its first ping is lost. DEL pod A.
//   3. AFTER: plant the stale entry again, ADD pod B with .5 through the bridge
//      plugin and then the announcer, chained: the entry holds pod B's MAC when
//      ADD returns, and the first ping gets through.
//
// Everything is undone on exit, failure or Ctrl-C (the harness's Scope). Exit
// status 0 when the demo showed both the bug and the fix, 1 otherwise.
import { execFileSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import {
  attachBridgePod,
  createPodNetwork,
  type BridgePod,
  type PodNetwork,
} from '../../test/integration/harness/bridge-pods';
import { ANNOUNCER, BRIDGE_PLUGIN, SYSTEM_CNI_DIR, assertCniOk } from '../../test/integration/harness/cni';
import { neighEntry, OLD_MAC, plantStale } from '../../test/integration/harness/neigh';
import { pingOnce } from '../../test/integration/harness/ping';
import { killStrays } from '../../test/integration/harness/processes';
import { announcerAdd } from '../../test/integration/harness/announcer';
import { announcerFiles, type AnnouncerFiles } from '../../test/integration/harness/announcer-files';
import { throwCleanupErrors, type Scope } from '../../test/integration/harness/scope';
import { requireExecutables, requireRoot } from '../shared/preflight';
import { scopedMain } from '../shared/scoped-main';
import { COLOURS, PLAIN, outcome, pingText, renderTable, verdict, type Observation } from './table';

/** A pod .host on `network`, attached by the real bridge plugin (its DEL and netns go at `scope` close). */
const attachPod = (scope: Scope, network: PodNetwork, host: number): Promise<BridgePod> =>
  attachBridgePod(scope, { prefix: PREFIX, net: network.net, bridge: network.bridge, host, name: network.name });

/** Seconds the first ping waits for its reply. */
const PING_WAIT_S = 2;
const POD_HOST = 5;
const KEEPER_HOST = 9;
const PREFIX = 'cnidemo';
const LOG_LINES = 12;

const style =
  process.stdout.isTTY && !process.env.NO_COLOR && (process.env.TERM ?? 'dumb') !== 'dumb' ? COLOURS : PLAIN;
const say = (line = ''): void => void process.stdout.write(`${line}\n`);

/** The containernetworking-plugins version dpkg knows, or `unknown`. */
function pluginsVersion(): string {
  try {
    return execFileSync('dpkg-query', ['-W', `-f=\${Version}`, 'containernetworking-plugins'], { encoding: 'utf8' });
  } catch {
    return 'unknown';
  }
}

/** Plants the old pod's entry for ip on the bridge, and says so. */
async function plantOld(bridge: string, ip: string, step: (line: string) => void): Promise<void> {
  await plantStale(bridge, ip, OLD_MAC);
  const e = await neighEntry(bridge, ip);
  step(`planted the old pod's entry on the node: ${ip} lladdr ${e?.mac ?? '-'} ${e?.state ?? 'none'}`);
}

/** Reads the node's entry for the pod right after ADD, then pings it once, and says what it saw. */
async function observe(pod: BridgePod, result: string, step: (line: string) => void): Promise<Observation> {
  const entry = await neighEntry(pod.bridge, pod.ip);
  step(`node entry now: ${pod.ip} ${entry?.mac ?? '-'} ${entry?.state ?? 'none'}`);
  const ping = await pingOnce(pod.ip, PING_WAIT_S);
  step(`ping -c1 -W${PING_WAIT_S} ${pod.ip}: ${pingText(ping.rttMs, PING_WAIT_S)}`);
  return {
    ...(entry ? { entry } : {}),
    podMac: pod.mac,
    ...(ping.replied ? { pingMs: ping.rttMs ?? '?' } : {}),
    result,
  };
}

/** What the chained plugin printed, next to the prevResult it was given. */
function judgeResult(stdout: string, prevResult: unknown): string {
  let out: unknown;
  try {
    out = JSON.parse(stdout);
  } catch {
    return 'INVALID: not JSON';
  }
  if (typeof out !== 'object' || out === null || !Array.isArray((out as { ips?: unknown }).ips))
    return 'INVALID: not a result';
  return isDeepStrictEqual(out, prevResult) ? 'prevResult passed through' : 'result (changed)';
}

async function before(scope: Scope, network: PodNetwork, step: (line: string) => void): Promise<Observation> {
  say();
  say(`${style.bold}BEFORE${style.off}: pod A takes ${network.net.v4(POD_HOST)}, bridge plugin alone`);
  await plantOld(network.bridge, network.net.v4(POD_HOST), step);
  const podScope = scope.child('pod A');
  const pod = await attachPod(podScope, network, POD_HOST);
  step(`ADD returned after ${pod.addMs} ms; pod A ${pod.ifname} is ${pod.mac} (netns ${pod.netns.name})`);
  const seen = await observe(pod, 'ok (bridge)', step);
  throwCleanupErrors(await podScope.close());
  step('pod A deleted (DEL, netns removed)');
  return seen;
}

async function after(
  scope: Scope,
  network: PodNetwork,
  files: AnnouncerFiles,
  step: (line: string) => void,
): Promise<Observation> {
  say();
  say(
    `${style.bold}AFTER${style.off}: pod B takes ${network.net.v4(POD_HOST)}, bridge plugin then announcer (chained)`,
  );
  await plantOld(network.bridge, network.net.v4(POD_HOST), step);
  const pod = await attachPod(scope, network, POD_HOST);
  const t0 = Date.now();
  const out = assertCniOk(
    'announcer ADD',
    await announcerAdd(scope, {
      mainConf: pod.conf,
      prevResult: pod.result,
      containerId: pod.containerId,
      netns: pod.netns.path,
      options: { logLevel: 'debug' },
      files,
    }),
  );
  const announcerMs = Date.now() - t0;
  const result = judgeResult(out.stdout, pod.result);
  step(
    `ADD returned: bridge ${pod.addMs} ms + announcer ${announcerMs} ms; ` +
      `pod B ${pod.ifname} is ${pod.mac} (netns ${pod.netns.name})`,
  );
  const seen = await observe(pod, result, step);
  const log = (await files.log()).split('\n').filter((l) => l !== '');
  if (log.length > 0) step(`announcer log (${files.logFile}):`);
  for (const line of log.slice(0, LOG_LINES)) step(`    ${line}`);
  if (result.startsWith('INVALID')) step(`the announcer printed: ${out.stdout.slice(0, 200)}`);
  return seen;
}

await scopedMain('demo', async (scope, abort) => {
  // Each step line is also where a Ctrl-C stops the demo (then the scope undoes everything).
  const step = (line: string): void => {
    abort.throwIfAborted();
    say(`${style.dim}  ${line}${style.off}`);
  };
  requireRoot('make demo', 'it creates a bridge and network namespaces');
  requireExecutables([
    [ANNOUNCER, 'run `make build`'],
    ...[BRIDGE_PLUGIN, `${SYSTEM_CNI_DIR}/static`].map(
      (p) => [p, 'run `make system-deps` (containernetworking-plugins)'] as const,
    ),
  ]);
  say(`${style.bold}cni-announcer demo: the node's stale ARP entry for a reused pod IP${style.off}`);
  say(`bridge plugin: ${BRIDGE_PLUGIN} (containernetworking-plugins ${pluginsVersion()})`);
  say(`announcer:     ${ANNOUNCER}`);
  say();

  // Undone last, in this order: the announcer's stateDir and log, then any announcer process of this run that
  // outlived its DEL (the harness gives the background announcer a short idleExitMs, so it is gone by then).
  const files = await announcerFiles(scope);
  killStrays(scope);
  const network = await createPodNetwork(scope, PREFIX);
  step(`bridge ${network.bridge} up, node address ${network.net.v4Cidr(1)}`);
  const keeper = await attachPod(scope, network, KEEPER_HOST);
  step(`keeper pod ${keeper.ip} attached (gives the bridge carrier; netns ${keeper.netns.name})`);

  const b = await before(scope, network, step);
  const a = await after(scope, network, files, step);

  say();
  for (const line of renderTable(b, a, { oldMac: OLD_MAC, pingWaitS: PING_WAIT_S, style })) say(line);
  say();
  for (const line of verdict(b, a, { ip: network.net.v4(POD_HOST), style })) say(line);
  say();

  step('cleanup ...');
  throwCleanupErrors(await scope.close());
  say(`${style.dim}  cleanup done: pods DELeted, their netns and bridge ${network.bridge} removed${style.off}`);
  const { bugShown, fixShown } = outcome(b, a);
  return bugShown && fixShown ? 0 : 1;
});
