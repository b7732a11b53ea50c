// Runs a plugin like cniExec, but in a private mount namespace, so that a test
// can hide directories (the checkout, the addon cache) or make them read-only
// for that one run without touching the host's mounts.
import { cniEnv, runCniCommand, RUN_TAG_ENV, type CniCall, type CniOutput } from './cni';

const BARE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function shQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** What runs around the plugin inside the mount namespace. */
export interface MountNsScript {
  /**
   * sh commands run first (with `set -e`), e.g. `mount -t tmpfs none "$1"`.
   * `$1`, `$2`… are `args`; `$0` is the plugin path. A failure here exits
   * before the plugin runs, with the failing command's status.
   */
  prelude: string;
  args?: readonly string[];
  /** sh commands run after the plugin exits (its status is kept), e.g. listing what it left in a hidden dir. */
  epilogue?: string;
  /**
   * The plugin's working directory, after the prelude (default `/`). Not one
   * inside a directory the prelude mounts over: it would still reach what is underneath.
   */
  cwd?: string;
  /** Arguments for the plugin itself (runtimes pass none), e.g. `--version`. */
  pluginArgs?: readonly string[];
  /**
   * Give the plugin only what a runtime gives it: PATH, the CNI_* variables
   * and the run tag, none of this process's other variables (NODE_OPTIONS,
   * NODE_PATH…). Default false: the env of cniExec.
   */
  bareEnv?: boolean;
}

/**
 * `unshare -m --propagation private sh -c …`: the prelude's mounts exist only
 * for this run and vanish with it. The plugin runs with cwd `/` unless told
 * otherwise (a cwd inside a directory mounted over would still reach what is
 * underneath, so the cd happens after the prelude) and gets
 * `config` on stdin and the CNI_* env from `call`, like cniExec.
 */
export async function cniExecInMountNs(
  pluginPath: string,
  call: CniCall,
  config: object | string,
  script: MountNsScript,
): Promise<CniOutput> {
  const plugin = ['"$0"', ...(script.pluginArgs ?? []).map(shQuote)].join(' ');
  const sh = [
    'set -e',
    script.prelude,
    `cd ${shQuote(script.cwd ?? '/')}`,
    'set +e',
    `${plugin}; rc=$?`,
    script.epilogue ?? ':',
    'exit $rc',
  ].join('\n');
  let env = cniEnv(call);
  if (script.bareEnv) {
    env = Object.fromEntries(
      Object.entries(env).filter(([k]) => k.startsWith('CNI_') || k === RUN_TAG_ENV || k in (call.env ?? {})),
    );
    env.PATH = BARE_PATH;
  }
  return runCniCommand(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', sh, pluginPath, ...(script.args ?? [])],
    call,
    config,
    env,
  );
}
