// Runs CNI plugins the way a runtime does: config on stdin, CNI_* env, result
// (or error object) on stdout.
import { existsSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ANNOUNCER_RUNTIME_ENV } from '../../../src/sys/detached';
import { run } from './exec';
import { RUN_TAG } from './names';
import type { Scope } from './scope';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The built plugin under test. */
export const ANNOUNCER = join(ROOT, 'bin', 'announcer');
/** Where Debian's containernetworking-plugins live. */
export const SYSTEM_CNI_DIR = '/usr/lib/cni';
/** The real bridge plugin. */
export const BRIDGE_PLUGIN = join(SYSTEM_CNI_DIR, 'bridge');
/** CNI_PATH for the tests: our bin/ first, then the system plugins. */
export const CNI_PATH = [join(ROOT, 'bin'), SYSTEM_CNI_DIR].join(':');
/** Env var carrying RUN_TAG into every plugin run (and what it spawns), so strays can be told apart. */
export const RUN_TAG_ENV = 'ANNOUNCER_TEST_RUN';
/**
 * The environment an announcer is started with, by a call (src/sys/detached-env.ts) or the DaemonSet: a test that
 * starts `announcer daemon` itself adds it, or a GC thread born in a pod's netns makes that announcer hand over.
 */
export const ANNOUNCER_RUNTIME = ANNOUNCER_RUNTIME_ENV;

/** A CNI command as a runtime sends it. */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC' | (string & {});

/** The CNI_* environment of one plugin call; a field left out is not set at all. */
export interface CniCall {
  command: CniCommand;
  containerId?: string;
  /** CNI_NETNS, a path such as /var/run/netns/NAME. */
  netns?: string;
  ifname?: string;
  /** Default CNI_PATH. */
  cniPath?: string;
  /** CNI_ARGS, `K=V;K=V`. */
  args?: string;
  /** More env (replaces inherited and CNI_* values of the same name). */
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** What a plugin printed, and the parsed stdout when it is JSON. */
export interface CniOutput {
  code: number;
  stdout: string;
  stderr: string;
  json?: any;
}

/** The env of a plugin call: inherited env minus any CNI_* variable, then the call's own. */
export function cniEnv(call: CniCall): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('CNI_')) env[k] = v;
  }
  env.CNI_COMMAND = call.command;
  if (call.containerId !== undefined) env.CNI_CONTAINERID = call.containerId;
  if (call.netns !== undefined) env.CNI_NETNS = call.netns;
  if (call.ifname !== undefined) env.CNI_IFNAME = call.ifname;
  env.CNI_PATH = call.cniPath ?? CNI_PATH;
  if (call.args !== undefined) env.CNI_ARGS = call.args;
  env[RUN_TAG_ENV] = RUN_TAG;
  return { ...env, ...call.env };
}

/**
 * Runs a plugin like a runtime: `config` (an object, or a raw string for bad
 * input) on stdin, the CNI_* env from `call`. Never throws on a plugin error.
 */
export async function cniExec(pluginPath: string, call: CniCall, config: object | string): Promise<CniOutput> {
  return runCniCommand(pluginPath, [], call, config);
}

/**
 * Runs a plugin like a runtime, from inside the named `node` netns when given
 * (`ip netns exec node plugin`), so that the plugin's "host" is that netns.
 * `args` follow the plugin's path (a plugin run through qemu-user: `qemu-aarch64-static plugin`).
 */
export async function pluginExec(
  plugin: string,
  call: CniCall,
  config: object,
  node?: string,
  args: readonly string[] = [],
): Promise<CniOutput> {
  if (node === undefined) return runCniCommand(plugin, args, call, config);
  return runCniCommand('ip', ['netns', 'exec', node, plugin, ...args], call, config);
}

/**
 * The background announcer an ADD leaves waits `idleExitMs` (30 s by default)
 * before it exits; a test that does not choose its own gets TEST_IDLE_EXIT_MS,
 * so that its processes are gone by the time the harness looks for leaks.
 */
export const TEST_IDLE_EXIT_MS = 500;

/** The options that are node settings: read from `<stateDir>/announcer.conf`, ignored in a conflist. */
export const NODE_OPTIONS = ['idleExitMs', 'metricsFile', 'rateLimit'] as const;

/**
 * Writes `settings` as the node settings file of `stateDir` (created 0700 if missing, its parent not: a recursive mkdir
 * spins forever under /proc), as `announcer install` does.
 */
export function writeNodeSettings(stateDir: string, settings: Record<string, unknown>): void {
  if (!existsSync(stateDir)) mkdirSync(stateDir, { mode: 0o700 });
  writeFileSync(join(stateDir, 'announcer.conf'), JSON.stringify(settings), { mode: 0o600 });
}

/**
 * A test's announcer config with its node options (over `defaults`) moved into its stateDir's node settings file,
 * written once per stateDir, before the first command (the announcer reads it at its start). A stateDir that is not a
 * plain 0700 directory (a hostile-state test's) or none at all is left alone; so is a config that is no announcer's.
 */
export function moveNodeOptions(
  config: Record<string, unknown>,
  defaults: Record<string, unknown> = {},
): Record<string, unknown> {
  if (config.type !== 'announcer' || typeof config.stateDir !== 'string') return config;
  const conf = { ...config };
  const stateDir = config.stateDir;
  const settings: Record<string, unknown> = { ...defaults };
  for (const key of NODE_OPTIONS) {
    if (key in conf) settings[key] = conf[key];
    delete conf[key];
  }
  // The announcer's own lines (start, hand-over, stop) go to the test's log file too, as they did before they became
  // a node setting: tests read both from one file.
  if (typeof conf.logFile === 'string' && settings.logFile === undefined) settings.logFile = conf.logFile;
  const kind = (path: string): 'none' | 'plain' | 'other' => {
    try {
      const st = lstatSync(path);
      return st.isDirectory() && (Number(st.mode) & 0o077) === 0 ? 'plain' : 'other';
    } catch {
      return 'none';
    }
  };
  const dirKind = kind(stateDir);
  const fresh = dirKind === 'none' || (dirKind === 'plain' && kind(join(stateDir, 'announcer.conf')) === 'none');
  const parentIsDir = kind(dirname(stateDir)) !== 'none' && lstatSync(dirname(stateDir)).isDirectory();
  if (fresh && parentIsDir && Object.keys(settings).length > 0) {
    try {
      writeNodeSettings(stateDir, settings);
    } catch {
      // a stateDir a test makes unwritable (read-only, under /proc): the plugin's own error is what it looks at
    }
  }
  return conf;
}

/**
 * moveNodeOptions with TEST_IDLE_EXIT_MS by default; a config given as a string is passed as it is: node options in it
 * stay in the conflist (and are ignored there).
 */
function withTestNodeSettings(config: object | string): object | string {
  if (typeof config === 'string' || Array.isArray(config)) return config;
  return moveNodeOptions(config as Record<string, unknown>, { idleExitMs: TEST_IDLE_EXIT_MS });
}

/**
 * What cniExec does, for a command that runs the plugin (`ip netns exec NS
 * plugin`, `unshare … sh -c …`): `config` on stdin, `env` as the whole env
 * (default cniEnv(call)), call.timeoutMs. Never throws on a plugin error.
 */
export async function runCniCommand(
  cmd: string,
  args: readonly string[],
  call: CniCall,
  config: object | string,
  env: Record<string, string> = cniEnv(call),
): Promise<CniOutput> {
  const res = await run(cmd, args, {
    stdin: typeof config === 'string' ? config : JSON.stringify(withTestNodeSettings(config)),
    env,
    inheritEnv: false,
    ...(call.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
  });
  const out: CniOutput = { code: res.code, stdout: res.stdout, stderr: res.stderr };
  if (res.stdout.trim() !== '') {
    try {
      out.json = JSON.parse(res.stdout);
    } catch {
      // Not JSON: left for the test to judge from stdout.
    }
  }
  return out;
}

/** Rejects with the plugin's output unless it exited 0. */
export function assertCniOk<T extends CniOutput>(what: string, out: T): T {
  if (out.code !== 0) {
    throw new Error(
      `${what} exited ${out.code}: ${(out.stdout.trim() || out.stderr.trim() || '(no output)').slice(0, 2000)}`,
    );
  }
  return out;
}

/**
 * The stdin libcni gives a chained plugin: its own conf, plus the network's
 * `name` and `cniVersion`, plus the previous plugin's result as `prevResult`.
 */
export function chainConfig(
  mainConf: { name: string; cniVersion: string },
  announcerConf: object,
  prevResult: unknown,
): Record<string, unknown> {
  return { ...announcerConf, name: mainConf.name, cniVersion: mainConf.cniVersion, prevResult };
}

/** How addBridgePod attaches a pod to a bridge. */
export interface BridgePodOptions {
  bridge: string;
  /** CNI_NETNS, a path such as /var/run/netns/NAME. */
  netns: string;
  /** The pod's IPv4 address, CIDR. */
  ip: string;
  /** The pod's IPv6 address, CIDR. */
  ip6?: string;
  /** IPv4 gateway written into the IPAM config (the bridge's address). */
  gw: string;
  /** IPv6 gateway written into the IPAM config. */
  gw6?: string;
  containerId: string;
  /** CNI_IFNAME. Default eth0. */
  ifname?: string;
  /** CNI_ARGS (a runtime passes the same to every plugin of the chain). */
  args?: string;
  /** Default 1.0.0. */
  cniVersion?: string;
  /** The network name. Default `harness`. */
  name?: string;
  /** Extra bridge-plugin fields (e.g. `disableContainerInterface`, `enabledad`). */
  extra?: Record<string, unknown>;
}

/** The bridge plugin's config for a pod, static IPAM, no gateway on the bridge, no masquerade. */
export function bridgeConfig(opts: Omit<BridgePodOptions, 'netns' | 'containerId' | 'ifname' | 'args'>): {
  cniVersion: string;
  name: string;
  [key: string]: unknown;
} {
  const addresses: { address: string; gateway?: string }[] = [{ address: opts.ip, gateway: opts.gw }];
  if (opts.ip6 !== undefined) {
    addresses.push(opts.gw6 === undefined ? { address: opts.ip6 } : { address: opts.ip6, gateway: opts.gw6 });
  }
  return {
    cniVersion: opts.cniVersion ?? '1.0.0',
    name: opts.name ?? 'harness',
    type: 'bridge',
    bridge: opts.bridge,
    isGateway: false,
    ipMasq: false,
    ipam: { type: 'static', addresses },
    ...opts.extra,
  };
}

/**
 * ADDs a pod through the real bridge plugin and registers its DEL at scope
 * close (registered before ADD, so a half-done ADD is undone too). Resolves with
 * the plugin's parsed result; rejects with its output if ADD fails.
 */
export async function addBridgePod(scope: Scope, opts: BridgePodOptions): Promise<any> {
  const config = bridgeConfig(opts);
  const call = {
    containerId: opts.containerId,
    netns: opts.netns,
    ifname: opts.ifname ?? 'eth0',
    ...(opts.args === undefined ? {} : { args: opts.args }),
  };
  scope.defer(async () => {
    assertCniOk(`bridge DEL ${opts.containerId}`, await cniExec(BRIDGE_PLUGIN, { ...call, command: 'DEL' }, config));
  }, `bridge DEL ${opts.containerId}`);
  const out = assertCniOk(
    `bridge ADD ${opts.containerId}`,
    await cniExec(BRIDGE_PLUGIN, { ...call, command: 'ADD' }, config),
  );
  return out.json;
}

/** The result's interface entry inside the sandbox (the pod side), by ifname. */
export function podInterface(result: any, ifname = 'eth0'): { name: string; mac: string; sandbox: string } | undefined {
  return (result?.interfaces ?? []).find(
    (i: any) => i.name === ifname && typeof i.sandbox === 'string' && i.sandbox !== '',
  );
}

/** The result's host-side veth: an interface without sandbox that is not the bridge itself. */
export function hostVeth(result: any, bridge: string): { name: string; mac: string } | undefined {
  return (result?.interfaces ?? []).find((i: any) => !i.sandbox && i.name !== bridge);
}

/** A prevResult (1.0.0) for pod interfaces inside `sandbox`, each with its addresses (CIDR). */
export function podPrevResult(
  sandbox: string,
  interfaces: { name: string; mac: string; addresses: string[] }[],
): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    interfaces: interfaces.map((i) => ({ name: i.name, mac: i.mac, sandbox })),
    ips: interfaces.flatMap((i, index) => i.addresses.map((address) => ({ address, interface: index }))),
  };
}
