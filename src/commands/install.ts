// `announcer install --dest DIR [--also-notices]`: what a DaemonSet's init
// container runs to put this very executable into the node's CNI bin dir.
import { dirname, join } from '../path';
import type { DirProblem, InstallOutcome } from '../sys/install-file';

/** The verb that selects this command on the command line. */
export const INSTALL_VERB = 'install';
/** The installed plugin's file name: the `type` a conflist names. */
export const PLUGIN_NAME = 'announcer';
/** The licence notices' file name, next to the executable at build time and after install. */
export const NOTICES_NAME = 'THIRD_PARTY_NOTICES';

const USAGE = `usage: announcer ${INSTALL_VERB} --dest DIR [--also-notices]`;

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
}

/** Parses the arguments after the verb; a problem is one line for stderr. */
export function parseInstallArgs(
  argv: readonly string[],
): { ok: true; args: InstallArgs } | { ok: false; problem: string } {
  let dest: string | undefined;
  let alsoNotices = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--also-notices') alsoNotices = true;
    else if (arg === '--dest' || arg.startsWith('--dest=')) {
      const value = arg === '--dest' ? argv[++i] : arg.slice('--dest='.length);
      if (value === undefined || value === '') return { ok: false, problem: `--dest needs a directory; ${USAGE}` };
      if (dest !== undefined) return { ok: false, problem: `--dest given twice; ${USAGE}` };
      dest = value;
    } else return { ok: false, problem: `unknown argument ${JSON.stringify(arg)}; ${USAGE}` };
  }
  if (dest === undefined) return { ok: false, problem: `--dest is required; ${USAGE}` };
  return { ok: true, args: { dest, alsoNotices } };
}

/** What `install` needs from the process and the file system. */
export interface InstallDeps {
  /** The running executable (process.execPath in the built binary). */
  self: string;
  dirProblem(dir: string): DirProblem;
  installFile(source: string, dir: string, name: string, mode: number): InstallOutcome;
  /** Removes temporary files for `name` in `dir` older than `maxAgeMs`; returns their names. */
  removeStaleTemps(dir: string, name: string, maxAgeMs: number, nowMs: number): string[];
  /** Milliseconds since the epoch (file times are on that clock). */
  now(): number;
  /** Writes one line to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
}

function reason(err: unknown): string {
  if (err instanceof Error) return err.message.split('\n')[0]!;
  return String(err);
}

/**
 * Installs `deps.self` as DEST/announcer (0755), and with --also-notices THIRD_PARTY_NOTICES (0644), atomically; one
 * line per file, exit 1 (2: bad arguments) on a problem.
 */
export function install(deps: InstallDeps, argv: readonly string[]): number {
  const parsed = parseInstallArgs(argv);
  if (!parsed.ok) {
    deps.err(`announcer ${INSTALL_VERB}: ${parsed.problem}`);
    return 2;
  }
  const { dest, alsoNotices } = parsed.args;
  const files: { source: string; name: string; mode: number }[] = [
    { source: deps.self, name: PLUGIN_NAME, mode: 0o755 },
  ];
  if (alsoNotices) files.push({ source: join(dirname(deps.self), NOTICES_NAME), name: NOTICES_NAME, mode: 0o644 });
  try {
    const problem = deps.dirProblem(dest);
    if (problem !== undefined) {
      deps.err(
        `announcer ${INSTALL_VERB}: --dest ${dest}: ${problem === 'missing' ? 'no such directory' : 'not a directory'}`,
      );
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
    return 0;
  } catch (err) {
    deps.err(`announcer ${INSTALL_VERB}: ${reason(err)}`);
    return 1;
  }
}
