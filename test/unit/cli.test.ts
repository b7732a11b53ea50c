// The command-line verbs (src/cli.ts): --help, a verb's usage, an unknown verb; and the process's one real clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CLI_VERBS, realTimers, runProcessVerb } from '../../src/cli';
import { entryJsonSchema } from '../../src/commands/schema';

describe('runProcessVerb', () => {
  it(
    "prints every verb on --help, a verb's usage on VERB " + '--help (exit 0), and refuses an unknown verb (exit 2)',
    async () => {
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (t: string) => void out.push(t), err: (l: string) => void err.push(l) };
      expect(await runProcessVerb('--help', [], io)).toBe(0);
      const unlisted = CLI_VERBS.filter(
        ({ verb, usage }) => !out[0]!.includes(`  ${verb}: `) || !out[0]!.includes(usage),
      );
      expect(unlisted).toEqual([]);
      expect(await runProcessVerb('daemon', ['-h'], io)).toBe(0);
      expect(out[1]).toMatch(/^usage: announcer daemon <stateDir> /);
      expect(await runProcessVerb('sleep', [], io)).toBe(2);
      expect(err).toEqual([
        'announcer: unknown verb "sleep"; verbs: install, status, announce, schema, daemon, --version, --help',
      ]);
    },
  );
});

describe('announcer schema', () => {
  it('prints the schema as JSON, and refuses arguments with exit 2', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => void out.push(t), err: (l: string) => void err.push(l) };
    expect(await runProcessVerb('schema', [], io)).toBe(0);
    expect([out.map((t) => JSON.parse(t)), err]).toEqual([[entryJsonSchema()], []]);
    expect(await runProcessVerb('schema', ['x'], io)).toBe(2);
    expect(err).toEqual(['announcer schema: takes no arguments']);
  });
});

// The process's one real clock and sleep, on vitest's fake clock (hrtime included).
describe('realTimers', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'hrtime'] }));
  afterEach(() => vi.useRealTimers());

  it(
    'reads the monotonic clock in milliseconds and the ' + 'boot clock it is given, and sleeps for the time asked',
    async () => {
      const timers = realTimers(() => 123_456);
      const start = timers.now();
      vi.advanceTimersByTime(1500);
      expect([timers.now() - start, timers.bootMs()]).toEqual([1500, 123_456]);
      let woke = false;
      const sleeping = timers.sleep(200).then(() => (woke = true));
      await vi.advanceTimersByTimeAsync(199);
      expect(woke).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await sleeping;
      expect(woke).toBe(true);
    },
  );
});
