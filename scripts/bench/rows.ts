// What the bench runs: each table row as a command in a clean environment,
// with the untimed steps that keep the pod and the announcer in the same
// state between samples.
import { join } from 'node:path';
import type { Row } from './rounds';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import { ROWS } from './budgets';
import { cleanEnv, expectOk, peakRssKiB, timedRun, type Command } from './measure';
import type { BridgePod } from '../../test/integration/harness/bridge-pods';

/** The programs the bench runs, by absolute path. */
export interface Programs {
  announcer: string;
  /** The Go peer, /usr/lib/cni/tuning. */
  tuning: string;
  /** CNI_PATH for plugin calls. */
  cniPath: string;
  node: string;
  /** An empty file, for the node yardstick. */
  emptyFile: string;
  /** An empty program compiled as the plugin is (scripts/build.mjs --entry): the runtime's own floor. */
  runtimeFloor: string;
  /** One request to the running announcer, none of the shim's work, compiled as the plugin is: the exchange's floor. */
  exchangeFloor: string;
  /** The announcer's build id (`announcer --version`): what the exchange floor's requests carry. */
  announcerBuild: string;
  /**
   * The announcer's stateDir for this run: its announcer (one per stateDir)
   * and its records stay apart from the node's and from the tests'.
   */
  stateDir: string;
}

/** Stops the announcer of a stateDir (announcer-proc.ts), untimed. */
export type StopAnnouncer = (stateDir: string) => void;

/** A table row that is one process: its command, and untimed steps around it. */
export interface ProcessRow {
  name: string;
  command: Command;
  before?: () => void;
  after?: () => void;
}

/**
 * The announcer stays up for the whole run (the option's maximum, an hour):
 * the cold row alone stops it, before each of its samples.
 */
export const IDLE_EXIT_MS = 3_600_000;
/** The announcer settings of one round only. */
export const ANNOUNCER_ONE = { count: 1 };
/**
 * Nothing to send: ADD validates and answers with the prevResult, without entering the pod (what the shim and the
 * exchange cost).
 */
export const ANNOUNCER_NOTHING = { count: 0 };
/** One round, probing for IPv4 conflicts first (probeMs 100, the default, is PROBE_MS). */
export const ANNOUNCER_PROBE = { count: 1, conflictCheck: 'warn' };
/** One round and no gateway check: what the check (report, the default) costs is the count-1 row less this one. */
export const ANNOUNCER_OFF = { count: 1, gatewayCheck: 'off' };
/** ADD waits for the answer of the gateway the bench pod routes through (a netns on the bench bridge). */
export const ANNOUNCER_REQUIRE = { count: 1, gatewayCheck: 'require' };
/** Every default (count 3: rounds 2 and 3 are sent by the announcer after ADD returns). */
export const ANNOUNCER_DEFAULTS = {};

/** The announcer's own config in the chain: `settings` on top of the stateDir (IDLE_EXIT_MS: its announcer.conf). */
export function announcerConf(stateDir: string, settings: object): object {
  return { type: 'announcer', stateDir, ...settings };
}

/** A chained plugin call on the pod, as a runtime makes it, in a clean environment. */
export function pluginCommand(p: Programs, pod: BridgePod, file: string, command: string, conf: object): Command {
  return {
    file,
    args: [],
    env: cleanEnv({
      command,
      containerId: pod.containerId,
      netns: pod.netns.path,
      ifname: pod.ifname,
      path: p.cniPath,
    }),
    stdin: JSON.stringify(pod.chained(conf)),
  };
}

/** An announcer call on the pod with `settings`, on the run's stateDir. */
export function announcerCommand(p: Programs, pod: BridgePod, command: string, settings: object): Command {
  return pluginCommand(p, pod, p.announcer, command, announcerConf(p.stateDir, settings));
}

/** The plugin commands of the table, in table order. */
export function processRows(p: Programs, pod: BridgePod, stop: StopAnnouncer): ProcessRow[] {
  const plugin = (file: string, command: string, conf: object): Command => pluginCommand(p, pod, file, command, conf);
  const announcer = (command: string, settings: object): Command => announcerCommand(p, pod, command, settings);
  const untimed = (what: string, cmd: Command) => () => void expectOk(what, timedRun(cmd));
  const addOne = announcer('ADD', ANNOUNCER_ONE);
  const delOne = untimed('DEL after ADD', announcer('DEL', ANNOUNCER_ONE));
  return [
    { name: ROWS.floor, command: { file: '/bin/true', args: [], env: cleanEnv() } },
    { name: ROWS.tuning, command: plugin(p.tuning, 'ADD', { type: 'tuning' }) },
    { name: ROWS.node, command: { file: p.node, args: [p.emptyFile], env: cleanEnv() } },
    { name: ROWS.runtimeFloor, command: { file: p.runtimeFloor, args: [], env: cleanEnv() } },
    {
      name: ROWS.version,
      command: { file: p.announcer, args: [], env: cleanEnv({ command: 'VERSION' }), stdin: '{"cniVersion":"1.0.0"}' },
    },
    {
      name: ROWS.addNothing,
      command: announcer('ADD', ANNOUNCER_NOTHING),
      after: untimed('DEL after ADD', announcer('DEL', ANNOUNCER_NOTHING)),
    },
    { name: ROWS.addOne, command: addOne, after: delOne },
    {
      name: ROWS.addProbe,
      command: announcer('ADD', ANNOUNCER_PROBE),
      after: untimed('DEL after ADD', announcer('DEL', ANNOUNCER_PROBE)),
    },
    {
      name: ROWS.addOff,
      command: announcer('ADD', ANNOUNCER_OFF),
      after: untimed('DEL after ADD', announcer('DEL', ANNOUNCER_OFF)),
    },
    {
      name: ROWS.addRequire,
      command: announcer('ADD', ANNOUNCER_REQUIRE),
      after: untimed('DEL after ADD', announcer('DEL', ANNOUNCER_REQUIRE)),
    },
    // DEL cancels the later rounds, so they do not compete with the next rows.
    {
      name: ROWS.addDefault,
      command: announcer('ADD', ANNOUNCER_DEFAULTS),
      after: untimed('DEL after ADD', announcer('DEL', ANNOUNCER_DEFAULTS)),
    },
    { name: ROWS.addCold, command: addOne, before: () => stop(p.stateDir), after: delOne },
    { name: ROWS.del, command: announcer('DEL', ANNOUNCER_ONE), before: untimed('ADD before DEL', addOne) },
    { name: ROWS.exchangeAddOne, command: exchangeFloorCommand(p, pod, 'ADD'), after: delOne },
    { name: ROWS.exchangeDel, command: exchangeFloorCommand(p, pod, 'DEL'), before: untimed('ADD before DEL', addOne) },
  ];
}

/** The exchange floor's call on the pod (count 1), as the announcer row's, to the run's announcer. */
function exchangeFloorCommand(p: Programs, pod: BridgePod, command: string): Command {
  const call = pluginCommand(p, pod, p.exchangeFloor, command, announcerConf(p.stateDir, ANNOUNCER_ONE));
  const env = { ...call.env, BENCH_SOCKET: join(p.stateDir, ANNOUNCER_SOCKET), BENCH_BUILD: p.announcerBuild };
  return { ...call, env };
}

/** A round step that times one process row. */
export function timedStep(row: ProcessRow): Row {
  return {
    sample() {
      row.before?.();
      const { ms } = expectOk(row.name, timedRun(row.command));
      row.after?.();
      return { [row.name]: ms };
    },
  };
}

/** One peak-RSS sample (KiB) of a process row, set-up and tear-down included. */
export function rssSample(row: ProcessRow): number {
  row.before?.();
  const kib = peakRssKiB(row.command);
  row.after?.();
  return kib;
}
