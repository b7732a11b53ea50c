// The CNI_* environment, read as skel reads it: one table of the variables, saying which commands
// need or read each and how its value is read; every problem is reported together, in one code-4
// error. The CNI_ARGS pairs and the interface name's rules are read here too.
import { CniError, describeValue, ErrorCode, listProblems } from './errors';

const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC'] as const;

/** One CNI command, as CNI_COMMAND names it. */
export type CniCommand = (typeof CNI_COMMANDS)[number];

/** CNI_ARGS as the announcer reads it: the keys it knows, plus every pair as given. */
export interface CniArgs {
  /** ANNOUNCE=true|false: turn announcing on or off for this attachment. */
  announce?: boolean;
  /**
   * MAC=: the MAC the runtime asked for (podman's `--mac-address`); empty counts as absent. Not validated: the
   * announcer never sets it.
   */
  mac?: string;
  /** Every K=V pair, known or not (the last one wins for a repeated key). */
  raw: Record<string, string>;
}

/** The env of command `C`: the command, CNI_ARGS, and the variables `V` it uses. */
type EnvOf<C extends CniCommand, V = unknown> = { command: C; args: CniArgs } & V;
/** The env of ADD and CHECK: container ID, netns and ifname are there. */
export type AttachmentEnv = EnvOf<'ADD' | 'CHECK', { containerId: string; netns: string; ifname: string }>;
/** The env of DEL: container ID and ifname are there; netns may be absent. */
export type DelEnv = EnvOf<'DEL', { containerId: string; netns?: string; ifname: string }>;
/** The env of STATUS and GC, which concern the network as a whole: no container variables. */
export type NetworkEnv = EnvOf<'STATUS' | 'GC'>;
/** The env of VERSION: the command alone. */
export type VersionEnv = EnvOf<'VERSION'>;

/** The CNI_* environment, parsed: each command with the variables it uses, and no others. */
export type CniEnv = AttachmentEnv | DelEnv | NetworkEnv | VersionEnv;

/** A variable's value as read, or what is wrong with it (the message puts the variable's name before it). */
type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

/** One row of ENV_RULES: which commands need or read a variable, and how its value is read. */
interface EnvRule {
  name: string;
  /** The field of the parsed env the value goes to. */
  key: 'containerId' | 'netns' | 'ifname' | 'args';
  /** Commands that fail with code 4 when the variable is missing or empty. */
  requiredFor: readonly CniCommand[];
  /** Commands that read the variable when it is set (requiredFor is implied). */
  optionalFor: readonly CniCommand[];
  read(value: string): Read<string | CniArgs>;
}

const ATTACH: readonly CniCommand[] = ['ADD', 'CHECK', 'DEL'];

/**
 * The environment variables the plugin reads, per command, with their readers (CNI_COMMAND is checked first, on its
 * own).
 */
const ENV_RULES: readonly EnvRule[] = [
  { name: 'CNI_CONTAINERID', key: 'containerId', requiredFor: ATTACH, optionalFor: [], read: text(containerIdProblem) },
  { name: 'CNI_NETNS', key: 'netns', requiredFor: ['ADD', 'CHECK'], optionalFor: ['DEL'], read: text(netnsProblem) },
  { name: 'CNI_IFNAME', key: 'ifname', requiredFor: ATTACH, optionalFor: [], read: text(ifnameProblem) },
  { name: 'CNI_ARGS', key: 'args', requiredFor: [], optionalFor: ATTACH, read: parseCniArgs },
];

/**
 * Reads the CNI_* variables of CNI_COMMAND; throws one code-4 CniError listing every missing (or empty) and invalid
 * one.
 */
export function parseEnv(env: Readonly<Record<string, string | undefined>>): CniEnv {
  const given = env.CNI_COMMAND;
  if (given === undefined || given === '') throw envError(['CNI_COMMAND is required']);
  const command = CNI_COMMANDS.find((c) => c === given);
  if (command === undefined) {
    throw envError([`CNI_COMMAND must be one of ${CNI_COMMANDS.join(', ')} (got ${describeValue(given)})`]);
  }
  const fields: Partial<Record<EnvRule['key'], string | CniArgs>> = { args: { raw: {} } };
  const problems: string[] = [];
  for (const rule of ENV_RULES) {
    const required = rule.requiredFor.includes(command);
    if (!required && !rule.optionalFor.includes(command)) continue;
    const value = env[rule.name];
    if (value === undefined || value === '') {
      if (required) problems.push(`${rule.name} is required for ${command}`);
      continue;
    }
    const read = rule.read(value);
    if (read.ok) fields[rule.key] = read.value;
    else problems.push(`${rule.name} ${read.problem}`);
  }
  if (problems.length > 0) throw envError(problems);
  // ENV_RULES' requiredFor puts each command's variables there.
  return { command, ...fields } as CniEnv;
}

function containerIdProblem(id: string): string | undefined {
  if (/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(id)) return undefined;
  return 'must start with a letter or digit and hold only letters, digits, "_", "." and "-"';
}

function netnsProblem(path: string): string | undefined {
  return path.startsWith('/') ? undefined : 'must be an absolute path';
}

/** Longest Linux interface name in bytes (IFNAMSIZ - 1). */
export const MAX_IFNAME_BYTES = 15;

/** What is wrong with a Linux interface name, as libcni checks it, or undefined when it is valid. */
export function ifnameProblem(name: string): string | undefined {
  if (name === '') return 'must not be empty';
  if (new TextEncoder().encode(name).length > MAX_IFNAME_BYTES) {
    return `must be at most ${MAX_IFNAME_BYTES} bytes long`;
  }
  if (name === '.' || name === '..') return 'must not be "." or ".."';
  if (/[/:\s]/u.test(name)) return 'must not contain "/", ":" or whitespace';
  return undefined;
}

/**
 * Parses CNI_ARGS (`K=V;K=V`). Unknown keys are kept in `raw` and otherwise ignored, as with
 * IgnoreUnknown; empty segments (a trailing `;`) are skipped. A pair without `=` or with an empty
 * key, and an ANNOUNCE value other than `true` or `false`, are problems. MAC is read as given.
 */
export function parseCniArgs(text: string): Read<CniArgs> {
  const raw: Record<string, string> = {};
  for (const pair of text.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) return { ok: false, problem: `has a pair without "=" (got ${describeValue(pair)})` };
    if (eq === 0) return { ok: false, problem: `has a pair with an empty key (got ${describeValue(pair)})` };
    raw[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const args: CniArgs = { raw };
  const announce = raw.ANNOUNCE;
  if (announce !== undefined) {
    if (announce !== 'true' && announce !== 'false') {
      return { ok: false, problem: `ANNOUNCE must be "true" or "false" (got ${describeValue(announce)})` };
    }
    args.announce = announce === 'true';
  }
  if (raw.MAC) args.mac = raw.MAC;
  return { ok: true, value: args };
}

/**
 * The pod CNI_ARGS names (K8S_POD_NAMESPACE, K8S_POD_NAME, as kubelet's runtimes send them); undefined when neither is
 * there.
 */
export function podOf(raw: Readonly<Record<string, string>>): { namespace?: string; name?: string } | undefined {
  const { K8S_POD_NAMESPACE: namespace, K8S_POD_NAME: name } = raw;
  if (namespace === undefined && name === undefined) return undefined;
  return { ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) };
}

/** A reader of a plain string variable: its value, or its problem with the value shown. */
function text(problemOf: (value: string) => string | undefined): (value: string) => Read<string> {
  return (value) => {
    const problem = problemOf(value);
    return problem === undefined
      ? { ok: true, value }
      : { ok: false, problem: `${problem} (got ${describeValue(value)})` };
  };
}

function envError(problems: readonly string[]): CniError {
  return new CniError(ErrorCode.InvalidEnvironment, `invalid environment: ${listProblems(problems)}`);
}
