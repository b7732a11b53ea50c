// koffi loaded on first use, and loadLibc's binding: each libc function (koffi parses its
// prototype) on its first call, so a run pays only for the calls it makes; close(2) is bound at
// load, since closeInBackground needs koffi's own function object.
import { openSync } from 'node:fs';
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import { loadKoffi, loadLibc, type LibcLibrary } from '../../../src/sys/libc';

const realLibc = koffi.load('libc.so.6');

/** libc.so.6 through koffi, recording the name of every function bound. */
function countingLibc(): LibcLibrary & { bound: string[] } {
  const bound: string[] = [];
  return {
    bound,
    func: ((definition: string) => {
      bound.push(/(\w+)\(/.exec(definition)?.[1] ?? definition);
      return realLibc.func(definition);
    }) as LibcLibrary['func'],
  };
}

describe('loadKoffi', () => {
  it('returns koffi, the same module each time', () => {
    const koffi = loadKoffi();
    expect(typeof koffi.load).toBe('function');
    expect(loadKoffi()).toBe(koffi);
  });
});

describe('loadLibc binds on first use', () => {
  it('binds only close(2) at load', () => {
    const lib = countingLibc();
    loadLibc(lib);
    expect(lib.bound).toEqual(['close']);
  });

  it('binds a function once, at its first call, and the call works', () => {
    const lib = countingLibc();
    const libc = loadLibc(lib);
    const [first, second] = [libc.bootTimeMs(), libc.bootTimeMs()];
    expect(lib.bound.filter((name) => name === 'clock_gettime')).toEqual(['clock_gettime']);
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThanOrEqual(first);
  });
});

describe('closeInBackground', () => {
  const closesOnWorkerTitle =
    'closes on a worker thread and tells `done` how it went: nothing for an fd ' +
    'it closed, an error for one that was not open';
  it(closesOnWorkerTitle, async () => {
    const libc = loadLibc();
    const fd = openSync('/dev/null', 'r');
    const outcome = (n: number) => new Promise<unknown>((resolve) => libc.closeInBackground(n, resolve));
    expect(await outcome(fd)).toBeUndefined();
    expect(await outcome(2_000_000_000)).toBeInstanceOf(Error); // beyond any fd limit: EBADF
  });
});
