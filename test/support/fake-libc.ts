// A Libc for unit tests: the calls a test supplies, and a loud failure for any other.
import type { Libc } from '../../src/sys/libc';

/** A Libc whose unsupplied calls throw `unexpected <name>`, so a test sees every syscall the code makes. */
export function fakeLibc(calls: Partial<Libc>): Libc {
  return new Proxy(calls, {
    get(target, name: string) {
      const call = target[name as keyof Libc];
      if (call) return call;
      return () => {
        throw new Error(`unexpected ${name}`);
      };
    },
  }) as Libc;
}
