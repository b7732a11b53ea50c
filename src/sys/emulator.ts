// Whether a user-mode emulator runs this process: qemu-user started by hand
// (`qemu-aarch64-static announcer-arm64`, as `make test` runs the arm64 build).
// qemu answers /proc/self/exe with the emulated program, but not the same link
// under /proc/self/task/, which the kernel answers: there it is qemu itself.
import { existsSync, readlinkSync } from 'node:fs';

/** The emulator's executable when one runs this process, else undefined (natively, both links name the same file). */
export function userModeEmulator(
  pid: number = process.pid,
  readlink: (path: string) => string = readlinkSync,
  exists: (path: string) => boolean = existsSync,
): string | undefined {
  try {
    const program = readlink('/proc/self/exe');
    const kernel = readlink(`/proc/self/task/${pid}/exe`);
    // An emulator registered with binfmt_misc's F flag may not exist in this mount namespace: the kernel can exec the
    // program then.
    return kernel !== program && kernel.startsWith('/') && exists(kernel) ? kernel : undefined;
  } catch {
    return undefined;
  }
}
