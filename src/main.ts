// The process entry point: wires env, stdin and stdout into the dispatcher.
// Run with arguments, it is one of the verbs (src/process/verbs.ts). What a
// command needs is loaded when it runs, so that VERSION loads only the
// protocol layer: start-up is the plugin's latency, once per pod.
import { writeSync } from 'node:fs';
import { aboutText, versionText } from './about';
import { crashReply, dispatch, type CniPlugin } from './cni/dispatch';
import { selfCommand } from './self-command';
import { userModeEmulator } from './sys/emulator';
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

/** The plugin, loaded with its dependencies on its first command (VERSION never calls one); `self()` starts this program again. */
function lazyPlugin(self: () => readonly string[]): CniPlugin {
  let loaded: Promise<CniPlugin> | undefined;
  const plugin = (): Promise<CniPlugin> =>
    (loaded ??= Promise.all([import('./plugin'), import('./process/plugin-deps'), import('./process/wiring')]).then(
      ([{ announcerPlugin }, { pluginDeps }, { processWiring }]) => announcerPlugin(pluginDeps(processWiring(), self())),
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
  // What starts this program again (`ps` then shows e.g. `/opt/cni/bin/announcer daemon …`).
  const plugin = lazyPlugin(() => selfCommand(process.argv, process.execPath, userModeEmulator()));
  // Whatever escapes dispatch (a throw in a callback, a rejection nobody awaited) still ends as
  // one CNI error object and exit 1, never a stack trace.
  let replied = false;
  const reply = (text: string): void => {
    replied = true;
    writeStdout(text);
  };
  const crash = (err: unknown): void => {
    try {
      if (!replied) reply(crashReply(err));
    } finally {
      process.exit(1);
    }
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  const code = await dispatch({ env: process.env, readStdin: readStdinBounded, writeStdout: reply }, plugin);
  // stdout was written synchronously: exit now, whatever handles are still open.
  process.exit(code);
}

main().catch(() => process.exit(1));
