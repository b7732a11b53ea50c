// The process entry point: answers VERSION, and forwards every other CNI command to the node's
// announcer (src/shim/), which alone runs it; this process never does.
// Run with arguments, it is one of the verbs (src/cli.ts). Start-up is the plugin's
// latency, once per pod: VERSION and the shim are imported statically, in the start-up chunk (a
// round of dynamic imports would cost each call; docs/performance.md); the verbs,
// the announcer and dispatch load only when they run. Nothing on the shim's path loads node:fs or zod: stdin and
// stdout go through src/sys/stdio.ts, whose Bun twin (Bun's own file API) the binary carries instead.
import { aboutText, versionText } from './about';
import { MAX_STDIN_BYTES } from './cni/decode';
import { CniError, ErrorCode } from './cni/errors';
import { versionReply } from './cni/versions';
import { realShimDeps, runShim } from './shim/shim';
import { stdinReader, writeFd } from './sys/stdio';

/** stdout and stderr in order, and an exit once what was written is out. */
function output(): { write(fd: 1 | 2, text: string): void; exit(code: number): Promise<never> } {
  let written: Promise<unknown> = Promise.resolve();
  return {
    write: (fd, text) => void (written = written.then(() => writeFd(fd, text)).catch(() => undefined)),
    exit: async (code) => {
      await written;
      return process.exit(code);
    },
  };
}

async function main(): Promise<void> {
  const out = output();
  const verb = process.argv[2];
  if (verb === '--version') {
    out.write(1, versionText());
    return out.exit(0);
  }
  if (verb !== undefined) {
    const { runProcessVerb } = await import('./cli');
    const io = { out: (line: string) => out.write(1, `${line}\n`), err: (line: string) => out.write(2, `${line}\n`) };
    return out.exit(await runProcessVerb(verb, process.argv.slice(3), io));
  }
  // As the reference plugins do: run by hand, without CNI_COMMAND, say what this is.
  if (!process.env.CNI_COMMAND) {
    out.write(2, aboutText());
    return out.exit(0);
  }
  // Whatever escapes dispatch (a throw in a callback, a rejection nobody awaited) still ends as
  // one CNI error object and exit 1, never a stack trace.
  let replied = false;
  const reply = (text: string): void => {
    replied = true;
    out.write(1, text);
  };
  const crash = (err: unknown): void => {
    // The shim's path does not load dispatch (src/cni/dispatch.ts): a crash there loads it for its error reply.
    void import('./cni/dispatch')
      .then(({ crashReply }) => {
        if (!replied) reply(crashReply(err));
      })
      .finally(() => out.exit(1));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  const stdin = stdinReader();
  const readStdin = (maxBytes: number): Promise<Uint8Array> => stdin.read(maxBytes);
  // VERSION is answered here (podman asks it once per pod).
  if (process.env.CNI_COMMAND === 'VERSION') {
    reply(`${JSON.stringify(versionReply(await readStdin(MAX_STDIN_BYTES).catch(() => undefined)))}\n`);
    return out.exit(0);
  }
  // The node's announcer runs the command: this process only reports what it answered.
  const io = { env: process.env, readStdin, writeStdout: reply, writeStderr: (text: string) => out.write(2, text) };
  const shimmed = await runShim(io, await realShimDeps());
  if ('exit' in shimmed) return out.exit(shimmed.exit);
  // Not a config that names an announcer: dispatch says what is wrong with it, and runs nothing.
  const { dispatch } = await import('./cni/dispatch');
  const refuse = async (): Promise<never> => {
    throw new CniError(ErrorCode.InvalidConfig, '"stateDir" must be an absolute path: no announcer to run the command');
  };
  const plugin = { add: refuse, del: refuse, check: refuse, status: refuse, gc: refuse };
  const cniIo = { env: process.env, readStdin: async () => shimmed.invalid, writeStdout: reply };
  return out.exit(await dispatch(cniIo, plugin));
}

// A verb's failure outside its own handling: its message on stderr, never a stack trace.
main().catch((err: unknown) => {
  writeFd(2, `announcer: ${err instanceof Error ? err.message : String(err)}\n`)
    .catch(() => undefined)
    .finally(() => process.exit(1));
});
