// The process entry point: forwards a CNI command to the node's announcer (src/shim/), else
// wires env, stdin and stdout into the in-process dispatcher.
// Run with arguments, it is one of the verbs (src/process/verbs.ts). What a
// command needs is loaded when it runs, so that VERSION loads only the
// protocol layer: start-up is the plugin's latency, once per pod.
import { writeSync } from 'node:fs';
import { aboutText, versionText } from './about';
import { BUILD_ID } from './build-id';
import type { CniPlugin } from './cni/dispatch';
import type { ShimResult } from './shim/shim';
import { readStdinBounded } from './sys/stdin';

/** Writes the CNI reply with write(2): process.stdout would load node:net and streams (~8 ms). */
function writeStdout(text: string): void {
  const bytes = Buffer.from(text);
  for (let off = 0; off < bytes.length; ) {
    try {
      off += writeSync(1, bytes, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err; // a non-blocking pipe: retry
    }
  }
}

/** The plugin, loaded with its dependencies on its first command (VERSION never calls one). */
function lazyPlugin(): CniPlugin {
  let loaded: Promise<CniPlugin> | undefined;
  const plugin = (): Promise<CniPlugin> =>
    (loaded ??= Promise.all([import('./plugin'), import('./process/plugin-deps'), import('./process/wiring')]).then(
      ([{ announcerPlugin }, { pluginDeps }, { processWiring }]) => announcerPlugin(pluginDeps(processWiring())),
    ));
  return {
    add: async (req) => (await plugin()).add(req),
    del: async (req) => (await plugin()).del(req),
    check: async (req) => (await plugin()).check(req),
    status: async (req) => (await plugin()).status(req),
    gc: async (req) => (await plugin()).gc(req),
  };
}

async function main(): Promise<void> {
  const verb = process.argv[2];
  if (verb === '--version') {
    writeStdout(versionText());
    return process.exit(0);
  }
  if (verb !== undefined) {
    const [{ runProcessVerb }, { processWiring }] = await Promise.all([import('./process/verbs'), import('./process/wiring')]);
    return process.exit(await runProcessVerb(processWiring(), verb, process.argv.slice(3), (line) => writeSync(2, `${line}\n`)));
  }
  // As the reference plugins do: run by hand, without CNI_COMMAND, say what this is.
  if (!process.env.CNI_COMMAND) {
    writeSync(2, aboutText());
    return process.exit(0);
  }
  // Whatever escapes dispatch (a throw in a callback, a rejection nobody awaited) still ends as
  // one CNI error object and exit 1, never a stack trace.
  let replied = false;
  const reply = (text: string): void => {
    replied = true;
    writeStdout(text);
  };
  const crash = (err: unknown): void => {
    // The shim does not load the in-process dispatch: a crash there loads it for its error reply.
    void import('./cni/dispatch')
      .then(({ crashReply }) => {
        if (!replied) reply(crashReply(err));
      })
      .finally(() => process.exit(1));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  let readStdin = readStdinBounded;
  // The node's announcer runs the command (issue 18); VERSION stays here.
  if (process.env.CNI_COMMAND !== 'VERSION') {
    const shimmed = await forwardToAnnouncer(reply);
    if ('exit' in shimmed) return process.exit(shimmed.exit);
    // In-process, on the bytes the shim read.
    if (shimmed.stdin !== undefined) readStdin = (await import('./shim/fallback-stdin')).resumedStdin(shimmed.stdin, readStdinBounded);
  }
  const { dispatch } = await import('./cni/dispatch');
  const code = await dispatch({ env: process.env, readStdin, writeStdout: reply }, lazyPlugin());
  // stdout was written synchronously: exit now, whatever handles are still open.
  process.exit(code);
}

/** Sends the CNI command to the node's announcer (src/shim/): its exit status, or why and on which stdin to run it here. */
// Loaded here, not at start-up: VERSION needs none of it.
async function forwardToAnnouncer(writeStdout: (text: string) => void): Promise<ShimResult> {
  const [{ runShim }, { realShimDeps }] = await Promise.all([import('./shim/shim'), import('./shim/shim-deps')]);
  let deps;
  try {
    deps = await realShimDeps(BUILD_ID);
  } catch (err) {
    return { fallback: `shim: ${(err as Error).message}`, stdin: undefined };
  }
  return runShim({ env: process.env, readStdin: readStdinBounded, writeStdout }, deps);
}

main().catch(() => process.exit(1));
