import { parseCniArgs, type CniArgs } from './cni-args';
import { CniError, describeValue, ErrorCode, listProblems } from './errors';
import { ifnameProblem } from './ifname';

/** The CNI commands, as CNI_COMMAND names them. */
export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC'] as const;

/** One CNI command. */
export type CniCommand = (typeof CNI_COMMANDS)[number];

/** The CNI_* environment, parsed: a variable is present only if the command uses it. */
export interface CniEnv {
  command: CniCommand;
  containerId?: string;
  netns?: string;
  ifname?: string;
  args: CniArgs;
}

/** The env of ADD and CHECK: container ID, netns and ifname are guaranteed. */
export type AttachmentEnv = CniEnv & { containerId: string; netns: string; ifname: string };

/** The env of DEL: container ID and ifname are guaranteed; netns may be absent. */
export type DelEnv = CniEnv & { containerId: string; ifname: string };

/** One row of ENV_RULES: which commands need or read a variable, and how to check its value. */
export interface EnvRule {
  name: string;
  /** The CniEnv field the value goes to. */
  key: Exclude<keyof CniEnv, 'command' | 'args'> | 'args';
  /** Commands that fail with code 4 when the variable is missing or empty. */
  requiredFor: readonly CniCommand[];
  /** Commands that read the variable when it is set (requiredFor is implied). */
  optionalFor: readonly CniCommand[];
  /** What is wrong with a value, or undefined when it is valid. */
  validate?(value: string): string | undefined;
}

const ATTACH: readonly CniCommand[] = ['ADD', 'CHECK', 'DEL'];

/**
 * The environment variables the plugin reads, per command, with their validators (CNI_COMMAND is checked first, on its
 * own).
 */
export const ENV_RULES: readonly EnvRule[] = [
  {
    name: 'CNI_CONTAINERID',
    key: 'containerId',
    requiredFor: ATTACH,
    optionalFor: [],
    validate: (v) =>
      /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(v)
        ? undefined
        : 'must start with a letter or digit and hold only letters, digits, "_", "." and "-"',
  },
  {
    name: 'CNI_NETNS',
    key: 'netns',
    requiredFor: ['ADD', 'CHECK'],
    optionalFor: ['DEL'],
    validate: (v) => (v.startsWith('/') ? undefined : 'must be an absolute path'),
  },
  {
    name: 'CNI_IFNAME',
    key: 'ifname',
    requiredFor: ATTACH,
    optionalFor: [],
    validate: ifnameProblem,
  },
  {
    name: 'CNI_ARGS',
    key: 'args',
    requiredFor: [],
    optionalFor: ATTACH,
    validate: (v) => {
      const parsed = parseCniArgs(v);
      return parsed.ok ? undefined : parsed.problem;
    },
  },
];

/**
 * Reads the CNI_* variables of CNI_COMMAND; throws one code-4 CniError listing every missing (or empty) and invalid
 * one.
 */
export function parseEnv(env: Readonly<Record<string, string | undefined>>): CniEnv {
  const command = env.CNI_COMMAND;
  if (command === undefined || command === '') throw envError(['CNI_COMMAND is required']);
  if (!isCniCommand(command)) {
    throw envError([`CNI_COMMAND must be one of ${CNI_COMMANDS.join(', ')} (got ${describeValue(command)})`]);
  }
  const out: CniEnv = { command, args: { raw: {} } };
  const problems: string[] = [];
  for (const rule of ENV_RULES) {
    const required = rule.requiredFor.includes(command);
    if (!required && !rule.optionalFor.includes(command)) continue;
    const value = env[rule.name];
    if (value === undefined || value === '') {
      if (required) problems.push(`${rule.name} is required for ${command}`);
      continue;
    }
    const problem = rule.validate?.(value);
    if (problem !== undefined) {
      problems.push(
        rule.key === 'args' ? `${rule.name} ${problem}` : `${rule.name} ${problem} (got ${describeValue(value)})`,
      );
      continue;
    }
    if (rule.key === 'args') {
      const parsed = parseCniArgs(value);
      if (parsed.ok) out.args = parsed.args;
    } else {
      out[rule.key] = value;
    }
  }
  if (problems.length > 0) throw envError(problems);
  return out;
}

/** Whether s names a CNI command. */
export function isCniCommand(s: string): s is CniCommand {
  return (CNI_COMMANDS as readonly string[]).includes(s);
}

function envError(problems: readonly string[]): CniError {
  return new CniError(ErrorCode.InvalidEnvironment, `invalid environment: ${listProblems(problems)}`);
}
