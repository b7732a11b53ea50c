// Starting the announcer from shims: one start marker (O_EXCL) per start, a stale one taken over,
// the command and environment it spawns with; and a shim that finds no announcer, starts one
// (here a fake that listens) and gets its answer.
import { existsSync, lstatSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exchange, runShim } from '../../../src/shim/shim';
import { startAnnouncer, takeStartMarker, type StartDeps } from '../../../src/shim/start';
import { START_MARKER } from '../../../src/state-files';
import { encodeLine, START_MS } from '../../../src/protocol';
import { connectUnix } from '../../../src/sys/unix-stream';
import { fakeAnnouncer, fakeClock, type FakeAnnouncer } from './fakes';
import { useTempDir } from '../../support/temp-dir';

let dir: string;
useTempDir('shim-start-', (d) => (dir = d));

// Wall time now: markers made by the test are fresh.
const NOW = Math.floor(Date.now() / 1000) * 1000;

type Spawned = { command: readonly string[]; env: Readonly<Record<string, string>> }[];

function deps(spawned: Spawned, spawn?: () => void, listening = false): StartDeps {
  return {
    listening: async () => listening,
    ensureStateDir: () => undefined,
    wallNow: () => NOW,
    spawn: (command, env) => {
      spawned.push({ command, env });
      spawn?.();
      return Promise.resolve('listening');
    },
    self: ['/opt/cni/bin/announcer'],
    env: { PATH: '/bin' },
  };
}

describe('startAnnouncer', () => {
  it('spawns `self daemon <stateDir> --ready-fd=3` with its env, once, however many shims ask together', async () => {
    const spawned: Spawned = [];
    const results = await Promise.all(Array.from({ length: 5 }, () => startAnnouncer(deps(spawned), dir)));
    const got = results.map((r) => (typeof r === 'string' ? r : 'spawned'));
    expect(got).toEqual(['spawned', 'starting', 'starting', 'starting', 'starting']);
    const command = ['/opt/cni/bin/announcer', 'daemon', dir, '--ready-fd=3'];
    expect(spawned).toEqual([{ command, env: { PATH: '/bin' } }]);
    expect(statSync(join(dir, START_MARKER)).mode & 0o777).toBe(0o600);
  });

  it('takes over a marker older than START_MS, not a fresh one', () => {
    const marker = join(dir, START_MARKER);
    writeFileSync(marker, '');
    utimesSync(marker, (NOW - START_MS) / 1000, (NOW - START_MS) / 1000);
    expect(takeStartMarker(dir, () => NOW)).toBe(false);
    utimesSync(marker, (NOW - START_MS - 1000) / 1000, (NOW - START_MS - 1000) / 1000);
    expect(takeStartMarker(dir, () => NOW)).toBe(true);
    expect(takeStartMarker(dir, () => NOW)).toBe(false);
  });

  it('judges a symlink at the marker by itself, never by its target: taken over, its target untouched', () => {
    const target = join(dir, 'fresh-target');
    writeFileSync(target, '');
    symlinkSync(target, join(dir, START_MARKER));
    expect(takeStartMarker(dir, () => NOW)).toBe(true);
    expect(lstatSync(join(dir, START_MARKER)).isFile()).toBe(true);
    expect(existsSync(target)).toBe(true);
  });

  const failedStartTitle =
    'removes its marker when the announcer it spawned says it cannot start, or exits first; keeps it while one starts';
  it(failedStartTitle, async () => {
    for (const [line, kept] of [
      ['failed: ELOOP', false],
      ['', false],
      ['listening', true],
      ['served', true],
    ] as const) {
      const started = await startAnnouncer({ ...deps([]), spawn: async () => line }, dir);
      if (typeof started !== 'object') throw new Error(`spawned none: ${started}`);
      expect(await started.ready).toBe(line);
      expect(existsSync(join(dir, START_MARKER))).toBe(kept);
      rmSync(join(dir, START_MARKER), { force: true });
    }
  });

  it('removes its marker when the spawn fails, so the next shim can start one', async () => {
    await expect(
      startAnnouncer(
        deps([], () => {
          throw new Error('spawn ENOENT');
        }),
        dir,
      ),
    ).rejects.toThrow('spawn ENOENT');
    expect(existsSync(join(dir, START_MARKER))).toBe(false);
  });

  const spawnsNoneWhenTitle =
    'spawns none when an announcer listens by the time the marker is taken (it removed the ' +
    'marker as it began to listen), and lets go of the marker';
  it(spawnsNoneWhenTitle, async () => {
    const spawned: Spawned = [];
    expect(await startAnnouncer(deps(spawned, undefined, true), dir)).toBe('running');
    expect(spawned).toEqual([]);
    expect(existsSync(join(dir, START_MARKER))).toBe(false);
  });

  it('creates stateDir before the marker', async () => {
    const made: string[] = [];
    await startAnnouncer({ ...deps([]), ensureStateDir: (d) => void made.push(d) }, dir);
    expect(made).toEqual([dir]);
  });
});

describe('a shim that finds no announcer', () => {
  let announcer: FakeAnnouncer | undefined;
  afterEach(async () => {
    await announcer?.stop();
    announcer = undefined;
  });

  it('starts one (its spawn is the fake announcer starting), connects once it is ready, gets its answer', async () => {
    const clock = fakeClock();
    const spawned: unknown[] = [];
    const startDeps: StartDeps = {
      ...deps([]),
      // Its ready line: the fake announcer listens.
      spawn: async (command) => {
        spawned.push(command);
        announcer = await fakeAnnouncer((t) => t.socket.write(encodeLine({ exit: 0, stdout: 'answered' })), { dir });
        return 'listening';
      },
    };
    const printed: string[] = [];
    const stdin = new TextEncoder().encode(JSON.stringify({ stateDir: dir }));
    const result = runShim(
      {
        env: { CNI_COMMAND: 'ADD' },
        readStdin: async () => stdin,
        writeStdout: (t) => void printed.push(t),
        writeStderr: () => undefined,
      },
      {
        clock,
        announcerPid: async () => undefined,
        replaceHung: async () => expect.fail('no request of these hangs'),
        exchange: (stateDir, body, waitMs) =>
          exchange(connectUnix, clock, join(stateDir, 'announcer.sock'), body, 'b', waitMs),
        start: async (stateDir) => startAnnouncer(startDeps, stateDir),
      },
    );
    // No retry timer fires here: the second try follows the ready line.
    expect(await result).toEqual({ exit: 0 });
    expect(printed).toEqual(['answered']);
    expect(spawned).toHaveLength(1);
    expect(announcer?.taken).toHaveLength(1);
  });
});
