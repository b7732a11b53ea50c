// The process's one real clock and its one real sleep. It lives outside
// src/daemon, src/announce and src/commands, where timer globals are banned
// (biome.json): they get it injected, and the announcer's sleeps are
// deadlines in its poll(2) (src/daemon/loop-waits.ts) instead.
import type { Timers } from '../announce/timers';

/** The real clock and sleep of the process; `bootTimeMs` reads CLOCK_BOOTTIME (through libc). */
export function realTimers(bootTimeMs: () => number): Timers {
  return {
    // process.hrtime, not performance.now(): the `performance` global loads perf_hooks (~2 ms).
    now: () => Number(process.hrtime.bigint()) / 1e6,
    bootMs: bootTimeMs,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}
