// `announcer install --dest DIR [--also-notices] [--state-dir DIR node flags…]`: what a
// DaemonSet's init container runs to put this very executable into the node's CNI bin dir,
// and the node settings into `<stateDir>/announcer.conf`, which every announcer of that
// stateDir reads at start (src/cni/node-settings.ts).
import { parseFlags } from '../cli-flags';
import {
  formatNodeSettings,
  NODE_FLAGS,
  NODE_FLAGS_USAGE,
  nodeSettingsFromFlags,
  type GivenSettings,
} from '../cni/node-settings';
import { dirname, join } from '../path';
import type { DirProblem, InstallOutcome } from '../sys/safe-file';

/** The verb that selects this command on the command line. */
export const INSTALL_VERB = 'install';
/** The installed plugin's file name: the `type` a conflist names. */
export const PLUGIN_NAME = 'announcer';
/** The licence notices' file name, next to the executable at build time and after install. */
export const NOTICES_NAME = 'THIRD_PARTY_NOTICES';

/** Its usage line. */
export const INSTALL_USAGE =
  `usage: announcer ${INSTALL_VERB} --dest DIR [--also-notices] ` + `[--state-dir DIR ${NODE_FLAGS_USAGE}]`;

/**
 * A temporary file older than this was left by an installer that was killed
 * (copying takes seconds) and is removed; a younger one may be another
 * installer's at work.
 */
export const STALE_TEMP_MS = 10 * 60_000;

/** The parsed arguments of `announcer install`. */
export interface InstallArgs {
  dest: string;
  alsoNotices: boolean;
  /** Where to write the node settings file (absent: none written). */
  stateDir?: string;
  /** The node settings it holds. */
  settings: GivenSettings;
}

/** Parses the arguments after the verb; a problem is one line for stderr. */
export function parseInstallArgs(
  argv: readonly string[],
): { ok: true; args: InstallArgs } | { ok: false; problem: string } {
  const bad = (problem: string) => ({ ok: false as const, problem: `${problem}; ${INSTALL_USAGE}` });
  const spec = { dest: 'string', 'also-notices': 'bool', 'state-dir': 'string', ...NODE_FLAGS } as const;
  const parsed = parseFlags(argv, spec, INSTALL_USAGE);
  if (!parsed.ok) return parsed;
  const { dest, 'also-notices': alsoNotices = false, 'state-dir': stateDir, ...nodeFlags } = parsed.flags;
  if (dest === undefined) return bad('--dest is required');
  const settings = nodeSettingsFromFlags(nodeFlags);
  if (!settings.ok) return bad(settings.problem);
  if (stateDir !== undefined && !stateDir.startsWith('/'))
    return bad(`--state-dir must be an absolute path (got ${JSON.stringify(stateDir)})`);
  if (stateDir === undefined && Object.keys(nodeFlags).length > 0)
    return bad('node settings need --state-dir, where announcer.conf is written');
  return { ok: true, args: { dest, alsoNotices, ...(stateDir ? { stateDir } : {}), settings: settings.settings } };
}

/** What `install` needs from the process and the file system. */
export interface InstallDeps {
  /** The running executable (process.execPath in the built binary). */
  self: string;
  dirProblem(dir: string): DirProblem;
  installFile(source: string, dir: string, name: string, mode: number): InstallOutcome;
  /** Removes temporary files for `name` in `dir` older than `maxAgeMs`; returns their names. */
  removeStaleTemps(dir: string, name: string, maxAgeMs: number, nowMs: number): string[];
  /**
   * Writes the node settings file `text` into `stateDir` (created root-only if missing), unless it already holds
   * exactly that; returns its path and whether it was written.
   */
  writeNodeSettings(stateDir: string, text: string): { path: string; changed: boolean };
  /** Why the metrics file can never be written (its directory missing…); undefined when it may be. */
  metricsFileProblem(file: string): string | undefined;
  /** Milliseconds since the epoch (file times are on that clock). */
  now(): number;
  /** Writes one line to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}

/**
 * Installs `deps.self` as DEST/announcer (0755), with --also-notices THIRD_PARTY_NOTICES (0644), and with --state-dir
 * the node settings file (0600), each atomically; one line per file, exit 1 (2: bad arguments) on a problem.
 */
export function install(deps: InstallDeps, argv: readonly string[]): number {
  const parsed = parseInstallArgs(argv);
  if (!parsed.ok) {
    deps.err(`announcer ${INSTALL_VERB}: ${parsed.problem}`);
    return 2;
  }
  const { dest, alsoNotices } = parsed.args;
  const files = [{ source: deps.self, name: PLUGIN_NAME, mode: 0o755 }];
  if (alsoNotices) files.push({ source: join(dirname(deps.self), NOTICES_NAME), name: NOTICES_NAME, mode: 0o644 });
  try {
    const problem = deps.dirProblem(dest);
    if (problem !== undefined) {
      const what = problem === 'missing' ? 'no such directory' : 'not a directory';
      deps.err(`announcer ${INSTALL_VERB}: --dest ${dest}: ${what}`);
      return 1;
    }
    for (const f of files) {
      const outcome = deps.installFile(f.source, dest, f.name, f.mode);
      const target = join(dest, f.name);
      deps.out(outcome === 'installed' ? `installed ${target}` : `unchanged ${target} (already identical)`);
      for (const stale of deps.removeStaleTemps(dest, f.name, STALE_TEMP_MS, deps.now())) {
        deps.out(`removed ${join(dest, stale)} (left by an interrupted install)`);
      }
    }
    if (parsed.args.stateDir !== undefined) writeSettings(deps, parsed.args.stateDir, parsed.args.settings);
    return 0;
  } catch (err) {
    deps.err(`announcer ${INSTALL_VERB}: ${reason(err)}`);
    return 1;
  }
}

/**
 * Writes the node settings file; a metricsFile that can never be written is said here, once, as the announcer will say
 * at its start (its view of the file system may differ: a DaemonSet's init container mounts less).
 */
function writeSettings(deps: InstallDeps, stateDir: string, settings: GivenSettings): void {
  const written = deps.writeNodeSettings(stateDir, formatNodeSettings(settings));
  deps.out(written.changed ? `wrote ${written.path}` : `unchanged ${written.path} (already identical)`);
  const problem = settings.metricsFile === undefined ? undefined : deps.metricsFileProblem(settings.metricsFile);
  if (problem !== undefined)
    deps.err(
      `announcer ${INSTALL_VERB}: warning: --metrics-file ${settings.metricsFile} cannot be written: ${problem}`,
    );
}
