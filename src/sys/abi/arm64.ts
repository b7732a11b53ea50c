// The kernel ABI of arm64 (aarch64) Linux with glibc, as its C headers give it (checked
// by test/unit/sys/kernel-abi.test.ts). See kernel-abi.ts.
import type { KernelAbi } from './kernel-abi';
import { X64 } from './x64';

/**
 * arm64 (aarch64): x86-64's numbers and layouts but for O_DIRECTORY and O_NOFOLLOW, and so O_TMPFILE (x86-64 kept
 * i386's values; arm64 has the generic ones).
 */
export const ARM64: KernelAbi = {
  ...X64,
  O_DIRECTORY: 0o40000,
  O_NOFOLLOW: 0o100000,
  O_TMPFILE: 0o20040000,
};
