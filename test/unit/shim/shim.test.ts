// runShim with scripted outcomes: what it forwards, what it prints, when it starts an announcer,
// and every way to the in-process fallback (with the stdin bytes it read).
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../../src/shim/exchange';
import { RETRY_MS, runShim, wantsStart, type ShimDeps } from '../../../src/shim/shim';
import { DEFAULT_STATE_DIR, stateDirOf } from '../../../src/shim/wire';
import { MAX_FORWARDED_STDIN, START_MS, type RequestBody } from '../../../src/shim/wire';
import { fakeClock, until } from './fakes';

const CONFIG = '{"cniVersion":"1.0.0","name":"n","type":"announcer","stateDir":"/state"}';
const ENV = { CNI_COMMAND: 'ADD', CNI_NETNS: '/run/netns/x', PATH: '/bin', LD_LIBRARY_PATH: '/x:' };

/** A shim run whose exchanges answer from `outcomes` in turn (the last one repeats). */
function harness(
  outcomes: Outcome[],
  start: () => Promise<unknown> = async () => 'spawned',
  stdin: Uint8Array | string = CONFIG,
) {
  const clock = fakeClock();
  const sent: { stateDir: string; body: RequestBody }[] = [];
  const starts: string[] = [];
  const printed: string[] = [];
  const deps: ShimDeps = {
    clock,
    exchange: async (stateDir, body) => {
      sent.push({ stateDir, body });
      return outcomes[Math.min(sent.length - 1, outcomes.length - 1)]!;
    },
    start: async (stateDir) => {
      starts.push(stateDir);
      return start();
    },
  };
  const bytes = typeof stdin === 'string' ? new TextEncoder().encode(stdin) : stdin;
  const io = {
    env: ENV,
    readStdin: async (max: number) => bytes.subarray(0, max + 1),
    writeStdout: (t: string) => void printed.push(t),
  };
  return { clock, sent, starts, printed, result: () => runShim(io, deps) };
}

const END: Outcome = { end: { exit: 0, stdout: '{"cniVersion":"1.0.0"}' } };

describe('runShim', { timeout: 5000 }, () => {
  it("forwards the CNI variables and stdin as they came to stateDir's announcer, prints its stdout, returns its exit", async () => {
    const h = harness([{ end: { exit: 7, stdout: 'result' } }]);
    expect(await h.result()).toEqual({ exit: 7 });
    expect(h.sent).toEqual([
      { stateDir: '/state', body: { cni: { env: { CNI_COMMAND: 'ADD', CNI_NETNS: '/run/netns/x' }, stdin: CONFIG } } },
    ]);
    expect(h.printed).toEqual(['result']);
    expect(h.starts).toEqual([]);
  });

  it('starts an absent announcer once, then sends the request again', async () => {
    const h = harness([{ unreachable: 'ENOENT' }, END]);
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.starts).toEqual(['/state']);
    expect(h.sent).toHaveLength(2);
  });

  it('starts the new build when the announcer hands over', async () => {
    const h = harness([{ refused: 'handover' }, END]);
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.starts).toEqual(['/state']);
  });

  it('retries every RETRY_MS while the started announcer is not up yet, and falls back at START_MS', async () => {
    const h = harness([{ unreachable: 'ECONNREFUSED' }]);
    const result = h.result();
    for (let i = 0; i < 3; i++) {
      await until(() => h.clock.timers.length === 1);
      expect(h.clock.timers[0]!.ms).toBe(RETRY_MS);
      h.clock.timers.pop()!.fire();
    }
    h.clock.set(1000 + START_MS);
    expect(await result).toEqual({ fallback: 'unreachable (ECONNREFUSED)', stdin: new TextEncoder().encode(CONFIG) });
    expect(h.starts).toHaveLength(1);
    expect(h.sent).toHaveLength(5);
  });

  it('falls back without starting anything when the announcer hangs, drops the request or refuses it', async () => {
    for (const [outcome, reason] of [
      [{ hung: true }, 'hung'],
      [{ dropped: true }, 'dropped'],
      [{ refused: 'version' }, 'refused (version)'],
      [{ unreachable: 'EACCES' }, 'unreachable (EACCES)'],
      [{ control: 1 }, 'not a CNI answer'],
    ] as [Outcome, string][]) {
      const h = harness([outcome]);
      expect(await h.result()).toEqual({ fallback: reason, stdin: new TextEncoder().encode(CONFIG) });
      expect(h.starts).toEqual([]);
      expect(h.printed).toEqual([]);
    }
  });

  it('falls back when the announcer cannot be started', async () => {
    const h = harness([{ unreachable: 'ENOENT' }], async () => {
      throw new Error('EACCES: /state');
    });
    expect(await h.result()).toEqual({ fallback: 'start: EACCES: /state', stdin: new TextEncoder().encode(CONFIG) });
    expect(h.sent).toHaveLength(1);
  });

  it('falls back at once, sending nothing, on a stdin over MAX_FORWARDED_STDIN, not UTF-8, or without a usable stateDir', async () => {
    const big = new Uint8Array(MAX_FORWARDED_STDIN + 10).fill(0x20);
    for (const [stdin, reason] of [
      [big, 'stdin too large to forward'],
      [new Uint8Array([0x7b, 0xff, 0x7d]), 'stdin is not UTF-8'],
      ['{"stateDir":"relative"}', 'no stateDir in the config'],
    ] as [Uint8Array | string, string][]) {
      const h = harness([END], undefined, stdin);
      const result = await h.result();
      expect(result).toMatchObject({ fallback: reason });
      expect(h.sent).toEqual([]);
    }
    const h = harness([END], undefined, big);
    expect(((await h.result()) as { stdin: Uint8Array }).stdin).toHaveLength(MAX_FORWARDED_STDIN + 1);
  });

  it('keeps a byte-order mark, so that a config JSON.parse refuses in-process is not forwarded either', async () => {
    const h = harness([END], undefined, `\uFEFF${CONFIG}`);
    expect(await h.result()).toMatchObject({ fallback: 'no stateDir in the config' });
    expect(h.sent).toEqual([]);
  });
});

describe('stateDirOf', () => {
  it("takes the config's absolute stateDir, the default when absent, and nothing odd", () => {
    expect(stateDirOf('{"stateDir":"/var/run/x"}')).toBe('/var/run/x');
    expect(stateDirOf('{"name":"n"}')).toBe(DEFAULT_STATE_DIR);
    for (const odd of ['{"stateDir":"x"}', '{"stateDir":"/a\\u0000b"}', '{"stateDir":7}', '[]', 'null', '{', '"s"'])
      expect(stateDirOf(odd)).toBeUndefined();
  });
});

describe('wantsStart', () => {
  it('starts for no listener, a full backlog or a hand-over, not for other errors', () => {
    expect(
      [
        { unreachable: 'ENOENT' },
        { unreachable: 'ECONNREFUSED' },
        { unreachable: 'EAGAIN' },
        { refused: 'handover' },
      ].map((o) => wantsStart(o as Outcome)),
    ).toEqual([true, true, false, true]);
    expect(
      [{ unreachable: 'EACCES' }, { refused: 'version' }, { hung: true }, { dropped: true }, END].map((o) =>
        wantsStart(o as Outcome),
      ),
    ).toEqual([false, false, false, false, false]);
  });
});
