// Pure: the arguments of `announcer daemon`. A shim starts it with the stateDir
// and the fd of its ready line; the DaemonSet adds how it runs there (resident,
// logs on stdout, an HTTP address for /metrics and /healthz), and may set node
// settings, which win over the stateDir's announcer.conf (src/cni/node-settings.ts).
import { parseFlags } from '../cli-flags';
import { READY_FD_FLAG } from '../self-command';
import { NODE_FLAGS, NODE_FLAGS_USAGE, nodeSettingsFromFlags, type GivenSettings } from '../cni/node-settings';

/** The log formats of `--log-format`: one JSON object, or one logfmt line, per event on stdout. */
export const LOG_FORMATS = ['json', 'logfmt'] as const;

/** How `announcer daemon` was asked to run. */
export interface DaemonArgs {
  stateDir: string;
  /** Run by the DaemonSet: never exits for being idle, and takes over from an announcer a shim started. */
  resident: boolean;
  /** Log every event to stdout in this format (else to the configs' logFile only). */
  logFormat?: (typeof LOG_FORMATS)[number];
  /** HOST:PORT to serve /metrics and /healthz on. */
  listen?: string;
  /** The fd to write one line to once listening, then close (a pipe from the shim that started it). */
  readyFd?: number;
  /** The node settings given as flags. */
  settings: GivenSettings;
}

/** The usage line of `announcer daemon`. */
export const DAEMON_USAGE =
  'usage: announcer daemon <stateDir> [--resident] [--log-format=json|logfmt] [--listen=HOST:PORT] ' +
  `[--${READY_FD_FLAG}=N] ${NODE_FLAGS_USAGE}`;

const SPEC = {
  resident: 'bool',
  'log-format': 'string',
  listen: 'string',
  [READY_FD_FLAG]: 'int',
  ...NODE_FLAGS,
} as const;

/** Parses the arguments after `daemon`; a problem is one line naming the argument. */
export function parseDaemonArgs(
  args: readonly string[],
): { ok: true; args: DaemonArgs } | { ok: false; problem: string } {
  const [stateDir = '', ...rest] = args;
  if (!stateDir.startsWith('/'))
    return {
      ok: false,
      problem: `the stateDir must be an absolute path (got ${JSON.stringify(stateDir)}); ${DAEMON_USAGE}`,
    };
  const parsed = parseFlags(rest, SPEC, DAEMON_USAGE);
  if (!parsed.ok) return parsed;
  const { resident = false, 'log-format': logFormat, listen, [READY_FD_FLAG]: readyFd } = parsed.flags;
  const settings = nodeSettingsFromFlags(parsed.flags);
  if (!settings.ok) return { ok: false, problem: `${settings.problem}; ${DAEMON_USAGE}` };
  const out: DaemonArgs = { stateDir, resident, settings: settings.settings };
  if (logFormat !== undefined) {
    if (!(LOG_FORMATS as readonly string[]).includes(logFormat))
      return {
        ok: false,
        problem: `--log-format must be json or logfmt (got ${JSON.stringify(logFormat)}); ${DAEMON_USAGE}`,
      };
    out.logFormat = logFormat as DaemonArgs['logFormat'];
  }
  if (listen !== undefined) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s]*):\d{1,5}$/.test(listen))
      return { ok: false, problem: `--listen must be HOST:PORT (got ${JSON.stringify(listen)}); ${DAEMON_USAGE}` };
    out.listen = listen;
  }
  if (readyFd !== undefined) {
    // Never stdin, stdout or stderr: the announcer closes it once it has said it listens.
    if (readyFd < 3)
      return { ok: false, problem: `--${READY_FD_FLAG} must be 3 or more (got ${readyFd}); ${DAEMON_USAGE}` };
    out.readyFd = readyFd;
  }
  return { ok: true, args: out };
}
