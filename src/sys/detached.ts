// How a process this one starts to outlive it runs: the environment it gets, and the user-mode
// emulator it must go through when one runs this process (qemu-user started by hand, as
// `qemu-aarch64-static announcer-arm64` in `make test` of the arm64 build).
import { existsSync, readlinkSync } from 'node:fs';
import { attempt } from './sys-error';

/** PATH for a detached process when this one has none. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * JavaScriptCore's parallel GC markers off: they are threads made on demand, and one made while the announcer is inside
 * a pod's netns would be born there and keep it alive (src/sys/netns.ts).
 */
export const ANNOUNCER_RUNTIME_ENV: Readonly<Record<string, string>> = { BUN_JSC_numberOfGCMarkers: '1' };

/**
 * The environment of a detached process: PATH and ANNOUNCER_RUNTIME_ENV alone. It outlives the command that starts
 * it, so it must carry nothing of one call: not a pod's CNI_CONTAINERID, CNI_NETNS or CNI_ARGS, nor CNI_COMMAND,
 * which would make it a plugin call again were it to run itself, nor the runtime's own variables
 * (containerd passes `LD_LIBRARY_PATH=<opt>/lib:`, whose empty entry means the current directory).
 * Under a user-mode emulator (userModeEmulator) its own QEMU_* settings go along too: the child runs
 * through the same emulator and cannot start without them (QEMU_LD_PREFIX: the emulated libraries).
 */
export function detachedEnv(
  env: Readonly<Record<string, string | undefined>>,
  emulated: boolean,
): Record<string, string> {
  const out: Record<string, string> = { PATH: env.PATH || DEFAULT_PATH, ...ANNOUNCER_RUNTIME_ENV };
  if (emulated) for (const [k, v] of Object.entries(env)) if (k.startsWith('QEMU_') && v !== undefined) out[k] = v;
  return out;
}

/**
 * The emulator's executable when one runs this process, else undefined (natively, both links name the same file).
 * qemu answers /proc/self/exe with the emulated program, but not the same link under /proc/self/task/, which the
 * kernel answers: there it is qemu itself.
 */
export function userModeEmulator(): string | undefined {
  // A link that cannot be read tells of no emulator.
  return attempt(() => {
    const program = readlinkSync('/proc/self/exe');
    const kernel = readlinkSync(`/proc/self/task/${process.pid}/exe`);
    // An emulator registered with binfmt_misc's F flag may not exist in this mount namespace: the kernel can exec the
    // program then.
    return kernel !== program && kernel.startsWith('/') && existsSync(kernel) ? kernel : undefined;
  });
}
