// The arm64 build, bin/announcer-arm64, run on this x86-64 machine under
// qemu-user with Debian's arm64 cross libraries (field notes §13). The sysroot
// goes in QEMU_LD_PREFIX, not qemu's -L: the environment, unlike qemu's own
// options, reaches the background announcer the plugin starts,
// which it starts through the same qemu (src/sys/detached.ts).
import { existsSync } from 'node:fs';
import type { AnnouncerCommand } from './announcer';
import { ANNOUNCER } from './cni';

/** The arm64 build of the plugin. */
export const ANNOUNCER_ARM64 = `${ANNOUNCER}-arm64`;
/** qemu-user for AArch64 programs. */
export const QEMU_AARCH64 = 'qemu-aarch64-static';
/** Where Debian's arm64 cross libraries (ld-linux-aarch64.so.1, libc, libstdc++) live. */
export const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';
/** The env a program run under QEMU_AARCH64 needs. */
export const QEMU_ENV: Readonly<Record<string, string>> = { QEMU_LD_PREFIX: ARM64_SYSROOT };

/** bin/announcer-arm64 through qemu-user, for AnnouncerAttachment.command. */
export const QEMU_ANNOUNCER: AnnouncerCommand = { argv: [QEMU_AARCH64, ANNOUNCER_ARM64], env: { ...QEMU_ENV } };

/** Why arm64 programs cannot run here (qemu-user or the cross libraries missing), or undefined when they can. */
export function arm64Missing(): string | undefined {
  const qemu = (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(`${dir}/${QEMU_AARCH64}`));
  if (!qemu) return `${QEMU_AARCH64} is not installed (scripts/ensure-system-deps.sh installs it)`;
  if (!existsSync(`${ARM64_SYSROOT}/lib/ld-linux-aarch64.so.1`))
    return `no arm64 libraries in ${ARM64_SYSROOT} (libc6-arm64-cross)`;
  return undefined;
}
