// A herd of shims and an announcer that begins to listen between one shim's failed connect and
// its start: that shim takes the marker the announcer has just removed, asks once more whether
// one listens, and spawns nothing when one does.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startUnlessListening, type StartDeps } from '../../../src/shim/start';
import { START_MARKER } from '../../../src/shim/wire';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shim-herd-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function deps(spawned: string[][]): StartDeps {
  return {
    ensureStateDir: () => undefined,
    wallNow: () => Date.now(),
    spawn: (command) => void spawned.push([...command]),
    self: ['/opt/cni/bin/announcer'],
    env: { PATH: '/bin' },
  };
}

describe('startUnlessListening', () => {
  it('spawns nothing, and leaves no marker, when an announcer listens once the marker is taken', async () => {
    const spawned: string[][] = [];
    expect(await startUnlessListening(deps(spawned), dir, async () => true)).toBe('running');
    expect(spawned).toEqual([]);
    expect(existsSync(join(dir, START_MARKER))).toBe(false);
  });

  it('spawns `self daemon <stateDir>` under the marker when none listens', async () => {
    const spawned: string[][] = [];
    expect(await startUnlessListening(deps(spawned), dir, async () => false)).toBe('spawned');
    expect(spawned).toEqual([['/opt/cni/bin/announcer', 'daemon', dir]]);
    expect(existsSync(join(dir, START_MARKER))).toBe(true);
  });

  it('asks nothing while another shim holds a fresh marker', async () => {
    const spawned: string[][] = [];
    let asked = 0;
    const listening = async (): Promise<boolean> => (asked++, false);
    const results = [await startUnlessListening(deps(spawned), dir, listening), await startUnlessListening(deps(spawned), dir, listening)];
    expect(results).toEqual(['spawned', 'starting']);
    expect(asked).toBe(1);
    expect(spawned).toHaveLength(1);
  });
});
