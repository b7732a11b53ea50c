// Each architecture's kernel-ABI table against that architecture's C headers:
// a probe generated from the table (test/support/kernel-abi-probe.ts), built with
// gcc and with aarch64-linux-gnu-gcc (run under qemu-user), prints the headers'
// value of every entry. sys-error.ts's errno table is checked the same way.
import { constants } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ABI, kernelAbi } from '../../../src/sys/abi/kernel-abi';
import { errnoName } from '../../../src/sys/sys-error';
import { skipUnless } from '../../support/skip';
import { probeMissing, probeSource, PROBE_TARGETS, runProbe } from '../../support/kernel-abi-probe';

/** Every errno sys-error.ts names, with its number there. */
const ERRNOS = Object.fromEntries(
  Array.from({ length: 200 }, (_, n) => [errnoName(n), n] as const).filter(
    (entry): entry is [string, number] => entry[0] !== undefined,
  ),
);

describe('kernel ABI tables', () => {
  for (const arch of ['x64', 'arm64'] as const) {
    const target = PROBE_TARGETS[arch];
    it.skipIf(skipUnless(`a C compiler (and qemu-user) for ${arch}`, probeMissing(target)))(
      `${arch}: every constant, struct size, alignment and field offset, and the errnos, agree with the C headers`,
      () => {
        const table = kernelAbi(arch);
        const headers = runProbe(target, probeSource(table, Object.keys(ERRNOS)));
        expect(headers).toEqual({ ...table, errno: ERRNOS });
      },
    );
  }

  it('differ in the open flags only where the headers do: O_DIRECTORY, O_NOFOLLOW, O_TMPFILE', () => {
    const [x64, arm64] = [kernelAbi('x64'), kernelAbi('arm64')];
    const differing = Object.keys(x64).filter(
      (key) => JSON.stringify(x64[key as keyof typeof x64]) !== JSON.stringify(arm64[key as keyof typeof arm64]),
    );
    expect(differing).toEqual(['O_DIRECTORY', 'O_NOFOLLOW', 'O_TMPFILE']);
  });

  it("selects the running architecture's table, whose open flags are the runtime's own", () => {
    expect(ABI).toBe(kernelAbi(process.arch));
    for (const name of [
      'O_RDONLY',
      'O_WRONLY',
      'O_RDWR',
      'O_CREAT',
      'O_EXCL',
      'O_NOCTTY',
      'O_APPEND',
      'O_NONBLOCK',
      'O_DIRECTORY',
      'O_NOFOLLOW',
    ] as const) {
      expect(ABI[name], name).toBe(constants[name]);
    }
  });

  it('has no table for an architecture the binary is not built for', () => {
    expect(() => kernelAbi('ia32')).toThrow('no kernel ABI table for ia32 (only x64, arm64)');
    expect(() => kernelAbi('toString')).toThrow('no kernel ABI table for toString');
  });

  it('names the program that is missing, for the skip message', () => {
    const expected = 'no-such-cc-announcer is not installed (scripts/ensure-system-deps.sh installs it)';
    expect(probeMissing({ compiler: 'no-such-cc-announcer', runner: [] })).toBe(expected);
    const wanted = /^no-such-qemu-announcer is not installed/;
    expect(probeMissing({ compiler: 'sh', runner: ['no-such-qemu-announcer', '-L', '/'] })).toMatch(wanted);
  });
});
