// A C program, generated from a kernel-ABI table, that prints the C headers'
// value of every entry of the table (constants by name; sizeof, _Alignof and
// offsetof for structs) and of the errnos it is given, as one JSON object of
// the table's shape. Built with gcc for x64 and aarch64-linux-gnu-gcc for arm64
// (run under qemu-user), it is the oracle of test/unit/sys/kernel-abi.test.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KernelAbi } from '../../src/sys/abi/kernel-abi';

const HEADERS = [
  'errno.h',
  'fcntl.h',
  'poll.h',
  'sched.h',
  'spawn.h',
  'stddef.h',
  'stdio.h',
  'sys/file.h',
  'sys/socket.h',
  'sys/uio.h',
  'sys/un.h',
  'time.h',
  'net/if_arp.h',
  'netinet/in.h',
  'netpacket/packet.h',
  'linux/magic.h',
  'linux/netlink.h',
  'linux/nsfs.h',
];

/** The C type of a struct entry: a `_t` name is a typedef, anything else a struct tag. */
function cType(name: string): string {
  return name.endsWith('_t') ? name : `struct ${name}`;
}

/** The C expression of one struct entry's field. */
function fieldExpression(type: string, field: string): string {
  if (field === 'size') return `sizeof(${type})`;
  if (field === 'align') return `_Alignof(${type})`;
  return `offsetof(${type}, ${field})`;
}

/** The probe's source: `{...the table's entries..., "errno": {NAME: n}}` on stdout. */
export function probeSource(shape: KernelAbi, errnos: readonly string[]): string {
  const items: string[] = [];
  const print = (key: string, expression: string): string =>
    `  printf("%s\\"${key}\\": %lld", sep, (long long)(${expression})); sep = ", ";`;
  for (const [name, value] of Object.entries(shape)) {
    if (typeof value === 'number') {
      items.push(print(name, name));
      continue;
    }
    items.push(`  printf("%s\\"${name}\\": {", sep); sep = "";`);
    for (const field of Object.keys(value)) items.push(print(field, fieldExpression(cType(name), field)));
    items.push('  printf("}"); sep = ", ";');
  }
  items.push('  printf("%s\\"errno\\": {", sep); sep = "";');
  for (const name of errnos) items.push(`#ifdef ${name}`, print(name, name), '#endif');
  items.push('  printf("}");');
  return [
    '#define _GNU_SOURCE',
    ...HEADERS.map((h) => `#include <${h}>`),
    'int main(void) {',
    '  const char *sep = "";',
    '  printf("{");',
    ...items,
    '  printf("}\\n");',
    '  return 0;',
    '}',
    '',
  ].join('\n');
}

/** How to build and run the probe for one architecture. */
export interface AskingInterface {
  compiler: string;
  /** The argv prefix that runs the built program (empty: run it directly). */
  runner: string[];
}

/** The probe built for x64 and for arm64 (under qemu-user, with the cross libraries' prefix). */
export const PROBE_TARGETS: Readonly<Record<'x64' | 'arm64', AskingInterface>> = {
  x64: { compiler: 'gcc', runner: [] },
  arm64: { compiler: 'aarch64-linux-gnu-gcc', runner: ['qemu-aarch64-static', '-L', '/usr/aarch64-linux-gnu'] },
};

/** Why the probe cannot run for `target` here (a missing program), or undefined when it can. */
export function probeMissing(target: AskingInterface): string | undefined {
  for (const program of [target.compiler, ...target.runner.slice(0, 1)]) {
    try {
      execFileSync('sh', ['-c', 'command -v "$1"', 'sh', program], { stdio: 'ignore' });
    } catch {
      return `${program} is not installed (scripts/ensure-system-deps.sh installs it)`;
    }
  }
  return undefined;
}

/** Builds and runs the probe for `target`; the parsed JSON it prints. */
export function runProbe(target: AskingInterface, source: string): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'announcer-abi-'));
  try {
    writeFileSync(join(dir, 'probe.c'), source);
    execFileSync(target.compiler, ['-std=c11', '-Wall', '-Werror', '-o', join(dir, 'probe'), join(dir, 'probe.c')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const [cmd = join(dir, 'probe'), ...args] = [...target.runner, join(dir, 'probe')];
    return JSON.parse(execFileSync(cmd, args, { encoding: 'utf8' })) as Record<string, unknown>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
